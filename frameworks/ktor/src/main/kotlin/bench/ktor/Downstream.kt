package bench.ktor

import bench.shared.Contract
import io.ktor.client.HttpClient
import io.ktor.client.engine.apache5.Apache5
import io.ktor.client.network.sockets.ConnectTimeoutException
import io.ktor.client.plugins.HttpRequestTimeoutException
import io.ktor.client.plugins.HttpTimeout
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsText
import io.ktor.http.HttpStatusCode
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import org.apache.hc.core5.pool.PoolConcurrencyPolicy
import org.apache.hc.core5.pool.PoolReusePolicy
import org.slf4j.LoggerFactory
import java.net.SocketTimeoutException
import java.util.concurrent.TimeoutException

/** What fan-out answers: the bodies in the order of `i`, or the contract's 504 / 502. */
sealed interface FanOut {
    class Bodies(val bodies: List<JsonElement>) : FanOut
    class Failed(val status: HttpStatusCode, val error: String) : FanOut
}

/**
 * fan-out's calls to the downstream service through Ktor's HttpClient on its Apache5 engine (Apache
 * HttpClient 5's async client: non-blocking I/O on its own reactor threads, a pool of keep-alive
 * HTTP/1.1 connections). The handler suspends while the calls are in flight; nothing blocks.
 *
 * Why not the CIO engine: in Ktor 3.5.2, CIO without `pipelining` opens a new connection for every call
 * and closes it when the call ends (Endpoint.makeDedicatedRequest), so nothing is kept alive; with
 * `pipelining` it queues calls behind each other on one connection, and 3.5.2 half-closes that
 * connection after a GET (KTOR-7009, fixed after 3.5.2). The contract asks for reused keep-alive
 * connections and calls that overlap: Apache5 gives both (see README.md).
 */
class Downstream(settings: Settings) : AutoCloseable {
    private val base = settings.downstreamUrl
    private val log = LoggerFactory.getLogger(Downstream::class.java)

    private val client = HttpClient(Apache5) {
        engine {
            configureConnectionManager {
                // CONTRACT.md, "downstream calls in flight": at most DOWNSTREAM_POOL_SIZE connections to the
                // downstream. Ktor's engine sets both to 1000 and then runs this block, so these win; the
                // downstream is one route, so the two are the same limit.
                setMaxConnTotal(settings.downstreamPoolSize)
                setMaxConnPerRoute(settings.downstreamPoolSize)
                // STRICT (httpcore5's default, named so it stays): the limit is hard, and a call that finds no
                // free connection waits in the pool's lease queue (StrictConnPool.leasingRequests, a
                // LinkedList with no bound) until one is released or its time is up.
                setPoolConcurrencyPolicy(PoolConcurrencyPolicy.STRICT)
                // LIFO (the default): the most recently used connection is reused first.
                setConnPoolPolicy(PoolReusePolicy.LIFO)
            }
            // The wait for a pooled connection counts in the call's 5 s (HttpTimeout below); this bound on
            // the lease alone is the same 5 s (Ktor's default is 20 s), so it never outlasts the call.
            connectionRequestTimeout = Contract.DOWNSTREAM_TIMEOUT_MS
            // Connect and socket inactivity (Ktor's defaults: 10 s each) bounded by the same 5 s.
            connectTimeout = Contract.DOWNSTREAM_TIMEOUT_MS
            socketTimeout = Contract.DOWNSTREAM_TIMEOUT_MS.toInt()
            followRedirects = false
        }
        // The contract's whole-call timeout: from the start of the call (pool wait included) to its
        // complete body, 5 s; then the call fails with HttpRequestTimeoutException.
        install(HttpTimeout) { requestTimeoutMillis = Contract.DOWNSTREAM_TIMEOUT_MS }
        followRedirects = false
        expectSuccess = false // a status other than 200 is checked below, as a 502
    }

    /**
     * `calls` GETs to `/call?i=1..calls`, all started before the first is awaited (`async` in one
     * `coroutineScope`); the first failure cancels the others. Resumes on the caller's dispatcher.
     */
    suspend fun fanOut(calls: Int): FanOut = try {
        FanOut.Bodies(coroutineScope { (1..calls).map { i -> async { call(i) } }.awaitAll() })
    } catch (e: Exception) {
        // The request itself was cancelled (the client went away): not the downstream's failure.
        currentCoroutineContext().ensureActive()
        val timedOut = e.causes().any { it.isTimeout() }
        // One line per failed request, no stack trace.
        log.warn("fan-out: downstream {}: {}", if (timedOut) "timed out" else "failed", e.describe())
        if (timedOut) {
            FanOut.Failed(HttpStatusCode.GatewayTimeout, Contract.DOWNSTREAM_TIMED_OUT)
        } else {
            FanOut.Failed(HttpStatusCode.BadGateway, Contract.DOWNSTREAM_FAILED)
        }
    }

    private suspend fun call(i: Int): JsonElement {
        check(base.isNotEmpty()) { "DOWNSTREAM_URL is not set" }
        val response = client.get(base + Contract.DOWNSTREAM_CALL + i)
        if (response.status != HttpStatusCode.OK) throw IllegalStateException("call $i answered ${response.status}")
        // kotlinx.serialization's strict parser: a body that is not JSON throws (a 502).
        return Json.parseToJsonElement(response.bodyAsText())
    }

    override fun close() {
        // Ktor's Apache5 engine closes its I/O reactor with CloseMode.IMMEDIATE, and httpcore5's reactor
        // then trips over its own closed selector and logs a ClosedSelectorException with a stack trace
        // (SingleCoreIOReactor.doTerminate): noise in the log tail of every stopped target, where a failed
        // cell quotes it. Only that logger, and only once the client is closing, is silenced.
        (LoggerFactory.getLogger(APACHE_ASYNC_LOGGER) as? ch.qos.logback.classic.Logger)?.level =
            ch.qos.logback.classic.Level.OFF
        client.close()
    }
}

/** The logger of Apache's async client, where its I/O reactor reports exceptions of its own. */
private const val APACHE_ASYNC_LOGGER = "org.apache.hc.client5.http.impl.async"

private fun Throwable.causes(): Sequence<Throwable> =
    generateSequence(this) { t -> t.cause?.takeIf { it !== t } }.take(16)

private fun Throwable.isTimeout(): Boolean =
    this is HttpRequestTimeoutException ||          // HttpTimeout's whole-call 5 s
        this is ConnectTimeoutException ||          // Ktor's, from the engine's connect timeout
        this is SocketTimeoutException ||           // socket inactivity (Ktor's subclass too)
        this is TimeoutException ||                 // httpcore5's DeadlineTimeoutException: the lease wait
        this is TimeoutCancellationException

/** The exception and its innermost cause, on one line. */
private fun Throwable.describe(): String {
    val root = causes().last()
    return if (root === this) toString() else "$this (cause: $root)"
}
