package bench.mvc

import bench.shared.Contract
import org.slf4j.LoggerFactory
import org.springframework.http.HttpStatus
import org.springframework.http.MediaType
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

/** The current thread's name when the request asked for it: taken where the work's result is in hand. */
fun threadIf(report: String?): String? = if (report != null) Thread.currentThread().toString() else null

/** cache-aside's answer: the item's JSON text as it is (from Redis, or as just stored there). */
fun jsonText(text: String, thread: String?): ResponseEntity<String> {
    val response = ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON)
    if (thread != null) response.header(THREAD, thread)
    return response.body(text)
}

/** fan-out's error body, `{"error":"..."}`. */
class DownstreamError(val error: String)

private val downstreamLog = LoggerFactory.getLogger("bench.mvc.fan-out")

/**
 * A failed fan-out as the contract answers it: 504 when a call timed out, 502 for any other failure (refused,
 * reset, a status other than 200, a body that is not JSON), in one log line without a stack trace.
 */
fun downstreamFailure(failure: Throwable): ResponseEntity<Any> {
    val (status, text) =
        if (timedOut(failure)) HttpStatus.GATEWAY_TIMEOUT to Contract.DOWNSTREAM_TIMED_OUT
        else HttpStatus.BAD_GATEWAY to Contract.DOWNSTREAM_FAILED
    val cause = generateSequence(failure) { it.cause }.last()
    // one line: an exception's message may span several (Jackson's does)
    downstreamLog.warn("{} {}: {}", status.value(), text, cause.toString().replace(Regex("\\s*\\R\\s*"), " "))
    return ResponseEntity.status(status).body<Any>(DownstreamError(text))
}

fun sleepMs(raw: String?): Int = Contract.sleepMs(raw) ?: badRequest("ms")

fun primesN(raw: String?): Int = Contract.primesN(raw) ?: badRequest("n")

fun itemId(raw: String?): Int = Contract.itemId(raw) ?: badRequest("id")

fun fanOutCalls(raw: String?): Int = Contract.fanOutCalls(raw) ?: badRequest("calls")

private fun badRequest(name: String): Nothing =
    throw ResponseStatusException(HttpStatus.BAD_REQUEST, "$name must be ASCII digits within the allowed range")
