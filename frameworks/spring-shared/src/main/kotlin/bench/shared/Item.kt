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
