package bench.shared

/**
 * The contract's rules that are the same in every Kotlin target (frameworks/CONTRACT.md): its query
 * parameters, the statements sent to MariaDB and the keys read from Redis, written once so that no
 * target parses or queries differently from the others. The Java targets compile shared/java's copy,
 * which answers every input alike.
 */
object Contract {
    const val HELLO = "Hello, World!"
    const val SELECT_ITEM = "SELECT id, name, price FROM item WHERE id = ?"
    const val INSERT_ITEM = "INSERT INTO item (name, price) VALUES (?, ?)"
    val REDIS_KEYS = listOf("bench:1", "bench:2", "bench:3")
    /** fan-out: the downstream's path for call `i` (1-based), after DOWNSTREAM_URL. */
    const val DOWNSTREAM_CALL = "/call?i="
    /** fan-out: a call's whole time, the wait for a pooled connection included, before the request answers 504. */
    const val DOWNSTREAM_TIMEOUT_MS = 5_000L
    const val DOWNSTREAM_TIMED_OUT = "downstream timed out"
    const val DOWNSTREAM_FAILED = "downstream failed"

    /** null: the contract answers it with 400. */
    fun sleepMs(raw: String?): Int? = param(raw, absent = 100, max = 60_000)

    fun primesN(raw: String?): Int? = param(raw, absent = 20_000, max = 10_000_000)

    /** Required: an absent id is a 400 like a malformed one; a well-formed id with no row is the caller's 404. */
    fun itemId(raw: String?): Int? = param(raw, absent = null, max = Int.MAX_VALUE)

    /** fan-out's calls: 1 to 16, 3 when absent; 0 is a 400 like a malformed value. */
    fun fanOutCalls(raw: String?): Int? = param(raw, absent = 3, max = 16)?.takeIf { it > 0 }

    /** cache-aside's Redis key for an item. */
    fun cacheKey(id: Int): String = "item:$id"

    /**
     * ASCII digits only, at most [max]: no sign, no spaces, no other script's digits, which
     * toIntOrNull (a sign, any Unicode digit) and Integer.parseInt (a sign) would accept.
     */
    private fun param(raw: String?, absent: Int?, max: Int): Int? {
        // Empty counts as absent: Quarkus's @RestQuery reads "?ms=" as no parameter, and one rule must hold for all.
        if (raw.isNullOrEmpty()) return absent
        var value = 0L
        for (c in raw) {
            if (c !in '0'..'9') return null
            value = value * 10 + (c - '0')
            if (value > max) return null
        }
        return value.toInt()
    }
}
