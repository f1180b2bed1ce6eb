package bench.mvc

import bench.shared.Contract
import org.springframework.http.HttpStatus
import org.springframework.http.ResponseEntity
import org.springframework.web.server.ResponseStatusException

const val REPORT_THREAD = "X-Report-Thread"
const val THREAD = "X-Thread"

/** A scenario's result and, when the request asked for it, the thread that did its work. */
class Done<T>(val value: T, val thread: String?)

/**
 * Runs [block], naming the thread it starts on when [report] is set: the one that sleeps, counts, or
 * issues the database or Redis call. The name is taken before [block] runs, because a suspending
 * [block] resumes on another thread, and by then a virtual thread that started it may have ended.
 */
inline fun <T> work(report: String?, block: () -> T): Done<T> {
    val thread = if (report != null) Thread.currentThread().toString() else null
    return Done(block(), thread)
}

fun <T : Any> reply(done: Done<T>, status: HttpStatus = HttpStatus.OK): ResponseEntity<T> {
    val response = ResponseEntity.status(status)
    if (done.thread != null) response.header(THREAD, done.thread)
    return response.body(done.value)
}

fun <T : Any> replyOrNotFound(done: Done<T?>): ResponseEntity<T> {
    val value = done.value ?: return ResponseEntity.notFound().build()
    return reply(Done(value, done.thread))
}

fun sleepMs(raw: String?): Int = Contract.sleepMs(raw) ?: badRequest("ms")

fun primesN(raw: String?): Int = Contract.primesN(raw) ?: badRequest("n")

fun itemId(raw: String?): Int = Contract.itemId(raw) ?: badRequest("id")

private fun badRequest(name: String): Nothing =
    throw ResponseStatusException(HttpStatus.BAD_REQUEST, "$name must be ASCII digits within the allowed range")
