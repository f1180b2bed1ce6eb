package bench.shared

import java.math.BigDecimal

/** A row of the `item` table. */
data class Item(val id: Int, val name: String, val price: BigDecimal)

/** The body of `POST /db`. */
data class NewItem(val name: String, val price: BigDecimal)

/** The body of the `POST /db` response. */
data class Created(val id: Long)

data class Message(val message: String)

data class Slept(val sleptMs: Long)

data class Primes(val n: Int, val primes: Int)

/** Query parameter rules of the contract: absent gives the default, anything else must be 0..max. */
fun boundedParam(raw: String?, default: Int, max: Int): Int? {
    if (raw == null) return default
    val v = raw.toIntOrNull() ?: return null
    return if (v in 0..max) v else null
}

const val MAX_SLEEP_MS = 60_000
const val MAX_PRIMES_N = 10_000_000
