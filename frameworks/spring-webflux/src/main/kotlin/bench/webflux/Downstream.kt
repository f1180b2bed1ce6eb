package bench.webflux

import bench.shared.Contract
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.withTimeoutOrNull
import org.slf4j.LoggerFactory
import org.springframework.boot.context.properties.ConfigurationProperties
import org.springframework.context.annotation.Bean
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.Profile
import org.springframework.http.HttpStatus
import org.springframework.http.HttpStatusCode
import org.springframework.http.ResponseEntity
import org.springframework.http.client.ReactorClientHttpRequestFactory
import org.springframework.http.client.reactive.ReactorClientHttpConnector
import org.springframework.web.bind.annotation.ExceptionHandler
import org.springframework.web.bind.annotation.RestControllerAdvice
import org.springframework.web.client.RestClient
import org.springframework.web.reactive.function.client.WebClient
import org.springframework.web.reactive.function.client.awaitBody
import reactor.core.publisher.Mono
import reactor.netty.http.HttpProtocol
import reactor.netty.http.client.HttpClient
import reactor.netty.resources.ConnectionProvider
import java.time.Duration
import java.util.concurrent.TimeoutException

// fan-out's downstream calls: one Reactor Netty connection pool and HttpClient for every variant, under
// Spring's WebClient (Mono and suspend handlers) or RestClient (the blocking `virtual` handlers).

/** DOWNSTREAM_URL and DOWNSTREAM_POOL_SIZE (application.yaml; CONTRACT.md's defaults). */
@ConfigurationProperties("bench.downstream")
data class DownstreamProperties(val url: String = "", val poolSize: Int = 512)

/** cache-aside's time to live, CACHE_TTL_S (application.yaml). */
@ConfigurationProperties("bench.cache")
data class CacheProperties(val ttlSeconds: Long = 10) {
    val ttl: Duration get() = Duration.ofSeconds(ttlSeconds)
}

/** One downstream answer, `{"call":K}`, parsed by Boot's Jackson JsonMapper (the codecs of the injected builders). */
data class Call(val call: Int)

/** The body of a fan-out that failed: `{"error":"downstream timed out"}` or `{"error":"downstream failed"}`. */
data class ErrorBody(val error: String)

val DOWNSTREAM_TIMEOUT: Duration = Duration.ofMillis(Contract.DOWNSTREAM_TIMEOUT_MS)

@Configuration
class DownstreamClients {

    /**
     * The pool of connections to the downstream, with each limit of CONTRACT.md's "downstream calls in
     * flight" set explicitly (Reactor Netty's ConnectionProvider.Builder, whose defaults are quoted).
     */
    @Bean(destroyMethod = "dispose")
    fun downstreamConnections(props: DownstreamProperties): ConnectionProvider =
        ConnectionProvider.builder("downstream")
            // At most DOWNSTREAM_POOL_SIZE connections (per remote address; there is one downstream), so at
            // most that many calls in flight. Reactor Netty's default is 2 x max(CPUs, 8) = 16 here.
            .maxConnections(props.poolSize)
            // A call that finds no free connection waits in a queue unbounded in count (-1). The default,
            // 2 x maxConnections, would fail the calls beyond it with PoolAcquirePendingLimitException.
            .pendingAcquireMaxCount(-1)
            // That wait is part of the call's 5 s, which the caller's timeout (Mono.timeout, withTimeoutOrNull,
            // Future.get) enforces; the pool's own limit (45 s by default) is set to the same 5 s, so that it
            // never outlasts it, and a PoolAcquireTimeoutException counts as the timeout it is (504).
            .pendingAcquireTimeout(DOWNSTREAM_TIMEOUT)
            .build()

    /**
     * Reactor Netty's HTTP client over that pool, on its global event loops (HttpResources, shared with
     * the server: `reactor-http-epoll-N`, a call made from a server loop colocated on it). HTTP/1.1 with
     * keep-alive are its defaults, stated. No response or connect timeout of its own: the 5-s whole-call
     * timeout (pool wait included) is the caller's, and Netty's 30-s connect timeout never comes first.
     */
    @Bean
    fun downstreamHttpClient(connections: ConnectionProvider): HttpClient =
        HttpClient.create(connections).protocol(HttpProtocol.HTTP11).keepAlive(true)

    /** Spring's reactive client, from Boot's builder (Boot's codecs, so Boot's JsonMapper) on that HttpClient. */
    @Bean
    @Profile("!virtual")
    fun downstreamWebClient(builder: WebClient.Builder, http: HttpClient, props: DownstreamProperties): WebClient =
        builder.baseUrl(props.url).clientConnector(ReactorClientHttpConnector(http)).build()

    /**
     * Spring's blocking client for the blocking handlers, from Boot's builder, on the same Reactor Netty
     * HttpClient and pool (Boot would pick Reactor Netty here too: it is the HTTP client on the class path).
     */
    @Bean
    @Profile("virtual")
    fun downstreamRestClient(builder: RestClient.Builder, http: HttpClient, props: DownstreamProperties): RestClient =
        builder.baseUrl(props.url).requestFactory(ReactorClientHttpRequestFactory(http)).build()
}

/** A downstream answer other than 200 (CONTRACT.md: a 502, like a refused connection). */
class DownstreamStatus(status: HttpStatusCode) : RuntimeException("status $status", null, false, false)

/** A 200 with no body. */
class EmptyBody : RuntimeException("empty body", null, false, false)

/**
 * A fan-out that failed, as CONTRACT.md answers it: [timedOut] gives 504, anything else 502. No stack
 * trace: [DownstreamErrors] logs the cause in one line.
 */
class DownstreamException(val timedOut: Boolean, cause: Throwable) :
    RuntimeException(if (timedOut) Contract.DOWNSTREAM_TIMED_OUT else Contract.DOWNSTREAM_FAILED, cause, false, false)

/**
 * What a failed call means: a timeout anywhere in its cause chain (Mono.timeout's and Future.get's
 * TimeoutException, the pool's PoolAcquireTimeoutException, which extends it; WebClient wraps them in
 * WebClientRequestException, RestClient in ResourceAccessException) is a timeout, anything else a failure.
 */
fun downstreamFailure(t: Throwable): DownstreamException {
    if (t is DownstreamException) return t
    var c: Throwable = t
    while (true) {
        if (c is TimeoutException) return DownstreamException(true, t)
        val next = c.cause
        if (next == null || next === c) return DownstreamException(false, t)
        c = next
    }
}

/** The WebClient call `i` of a fan-out, up to its response spec: a status other than 200 is an error. */
fun WebClient.downstreamCall(i: Int): WebClient.ResponseSpec =
    get().uri(Contract.DOWNSTREAM_CALL + i)
        .retrieve()
        .onStatus({ it.value() != 200 }) { Mono.error(DownstreamStatus(it.statusCode())) }

/**
 * fan-out for the suspend handlers: each call an `async` in one coroutineScope, all started before
 * awaitAll (each runs up to its first suspension, its request sent, or is dispatched at once), its body
 * read with awaitBody within withTimeoutOrNull's 5 s (the pool wait included); the first failure cancels
 * the scope and with it the other calls (Reactor Netty closes their connections).
 */
suspend fun WebClient.fanOutAwait(n: Int): List<Call> =
    try {
        coroutineScope {
            (1..n).map { i ->
                async {
                    withTimeoutOrNull(Contract.DOWNSTREAM_TIMEOUT_MS) { downstreamCall(i).awaitBody<Call>() }
                        ?: throw DownstreamException(true, TimeoutException("call $i: no body within ${Contract.DOWNSTREAM_TIMEOUT_MS} ms"))
                }
            }.awaitAll()
        }
    } catch (e: CancellationException) {
        throw e   // the request itself was cancelled (the client went away): not the downstream's failure
    } catch (e: Exception) {
        throw downstreamFailure(e)
    }

/** The 504/502 answers of every variant, from one handler, with one log line per failed request. */
@RestControllerAdvice
class DownstreamErrors {
    private val log = LoggerFactory.getLogger(DownstreamErrors::class.java)

    @ExceptionHandler
    fun downstream(e: DownstreamException): ResponseEntity<ErrorBody> {
        log.warn("fan-out: {} ({})", e.message, oneLine(e.cause))
        val status = if (e.timedOut) HttpStatus.GATEWAY_TIMEOUT else HttpStatus.BAD_GATEWAY
        return ResponseEntity.status(status).body(ErrorBody(e.message!!))
    }

    /** The innermost cause's class and message, without line breaks. */
    private fun oneLine(t: Throwable?): String {
        var c = t ?: return "no cause"
        while (c.cause != null && c.cause !== c) c = c.cause!!
        return "${c.javaClass.simpleName}: ${c.message}".replace(Regex("\\s+"), " ").take(300)
    }
}
