package bench.ktor

import kotlinx.serialization.KSerializer
import kotlinx.serialization.Serializable
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.PrimitiveSerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonEncoder
import kotlinx.serialization.json.JsonUnquotedLiteral
import kotlinx.serialization.json.jsonPrimitive
import java.math.BigDecimal

@Serializable
data class Message(val message: String)

@Serializable
data class Slept(val sleptMs: Int)

@Serializable
data class Primes(val n: Int, val primes: Int)

/** fan-out's 502 and 504 bodies: `{"error":"downstream timed out"}`, `{"error":"downstream failed"}`. */
@Serializable
data class ErrorBody(val error: String)

/** A row of the `item` table. */
@Serializable
data class Item(
    val id: Int,
    val name: String,
    @Serializable(with = BigDecimalSerializer::class) val price: BigDecimal,
)

/** The body of `POST /db`. */
@Serializable
data class NewItem(
    val name: String,
    @Serializable(with = BigDecimalSerializer::class) val price: BigDecimal,
)

/** The body of the `POST /db` response. */
@Serializable
data class Created(val id: Long)

/**
 * kotlinx.serialization has no BigDecimal support; this keeps DECIMAL(10,2) exact as a JSON
 * number (10.50, never "10.50" or a rounded double), the way its JSON guide recommends.
 */
object BigDecimalSerializer : KSerializer<BigDecimal> {
    override val descriptor = PrimitiveSerialDescriptor("java.math.BigDecimal", PrimitiveKind.DOUBLE)

    override fun serialize(encoder: Encoder, value: BigDecimal) {
        if (encoder is JsonEncoder) {
            encoder.encodeJsonElement(JsonUnquotedLiteral(value.toPlainString()))
        } else {
            encoder.encodeString(value.toPlainString())
        }
    }

    override fun deserialize(decoder: Decoder): BigDecimal =
        if (decoder is JsonDecoder) {
            BigDecimal(decoder.decodeJsonElement().jsonPrimitive.content)
        } else {
            BigDecimal(decoder.decodeString())
        }
}
