package bench.webflux

import bench.shared.Created
import bench.shared.Item
import bench.shared.MAX_PRIMES_N
import bench.shared.MAX_SLEEP_MS
import bench.shared.boundedParam
import org.springframework.http.HttpStatus
import org.springframework.http.ResponseEntity
import org.springframework.web.server.ResponseStatusException
import org.springframework.web.server.ServerWebExchange

// What every controller shares; the controllers differ only in where and how the work runs.

const val HELLO = "Hello, World!"
val REDIS_KEYS = listOf("bench:1", "bench:2", "bench:3")

/**
 * CONTRACT.md: a request carrying X-Report-Thread gets X-Thread naming the thread that did the
 * scenario's work, so this must be called on that thread (inside the offloaded block, not before it).
 */
fun ServerWebExchange.reportThread() {
    if (request.headers.containsHeader("X-Report-Thread")) {
        response.headers.set("X-Thread", Thread.currentThread().toString())
    }
}

fun sleepMs(raw: String?): Long =
    boundedParam(raw, 100, MAX_SLEEP_MS)?.toLong() ?: throw ResponseStatusException(HttpStatus.BAD_REQUEST, "ms")

fun primesN(raw: String?): Int =
    boundedParam(raw, 20_000, MAX_PRIMES_N) ?: throw ResponseStatusException(HttpStatus.BAD_REQUEST, "n")

fun found(item: Item?): ResponseEntity<Item> = item?.let { ResponseEntity.ok(it) } ?: ResponseEntity.notFound().build()

fun created(id: Long): ResponseEntity<Created> = ResponseEntity.status(HttpStatus.CREATED).body(Created(id))
