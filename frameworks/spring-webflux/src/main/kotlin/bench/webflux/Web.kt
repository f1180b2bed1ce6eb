package bench.webflux

import bench.shared.Created
import bench.shared.Item
import bench.shared.Contract
import org.springframework.http.HttpStatus
import org.springframework.http.MediaType
import org.springframework.http.ResponseEntity
import org.springframework.web.server.ResponseStatusException
import org.springframework.web.server.ServerWebExchange

// What every controller shares; the controllers differ only in where and how the work runs.

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
    Contract.sleepMs(raw)?.toLong() ?: throw ResponseStatusException(HttpStatus.BAD_REQUEST, "ms")

fun primesN(raw: String?): Int =
    Contract.primesN(raw) ?: throw ResponseStatusException(HttpStatus.BAD_REQUEST, "n")

fun itemId(raw: String?): Int =
    Contract.itemId(raw) ?: throw ResponseStatusException(HttpStatus.BAD_REQUEST, "id")

fun fanOutCalls(raw: String?): Int =
    Contract.fanOutCalls(raw) ?: throw ResponseStatusException(HttpStatus.BAD_REQUEST, "calls")

/**
 * cache-aside's answer: the row's JSON text as it is, cached or just serialised. As bytes, which WebFlux
 * writes unchanged: a String with a JSON content type would go to the Jackson encoder, ahead of the
 * catch-all text encoder, and come out quoted as a JSON string.
 */
fun jsonText(json: String): ResponseEntity<ByteArray> =
    ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(json.toByteArray(Charsets.UTF_8))

fun notFoundText(): ResponseEntity<ByteArray> = ResponseEntity.notFound().build()

fun found(item: Item?): ResponseEntity<Item> = item?.let { ResponseEntity.ok(it) } ?: ResponseEntity.notFound().build()

fun created(id: Long): ResponseEntity<Created> = ResponseEntity.status(HttpStatus.CREATED).body(Created(id))
