package bench.mvc

import bench.shared.Contract
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.runInterruptible
import kotlinx.coroutines.withTimeout
import org.apache.hc.core5.pool.PoolConcurrencyPolicy
import org.apache.hc.core5.util.Timeout
import org.springframework.beans.factory.DisposableBean
import org.springframework.beans.factory.annotation.Value
import org.springframework.boot.http.client.ClientHttpRequestFactoryBuilder
import org.springframework.boot.http.client.HttpComponentsClientHttpRequestFactoryBuilder
import org.springframework.boot.thread.Threading
import org.springframework.context.annotation.Bean
import org.springframework.context.annotation.Configuration
import org.springframework.core.env.Environment
import org.springframework.stereotype.Component
import org.springframework.web.client.RestClient
import tools.jackson.databind.JsonNode
import java.io.InterruptedIOException
import java.util.concurrent.Callable
import java.util.concurrent.ExecutionException
import java.util.concurrent.ExecutorService
import java.util.concurrent.Executors
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.ThreadPoolExecutor
import java.util.concurrent.TimeUnit
import java.util.concurrent.TimeoutException

/**
 * The HTTP client of fan-out (CONTRACT.md, "downstream calls in flight"): Apache HttpClient 5, the request
 * factory that Spring Boot's detection prefers first (before Jetty, Reactor Netty and the JDK's client), declared
 * here as Boot's documented `ClientHttpRequestFactoryBuilder` bean so that the auto-configured `RestClient.Builder`
 * builds on it. Each limit is set explicitly, because HttpClient 5's defaults would bind first.
 * `spring.http.clients.connect-timeout` and `read-timeout` (application.properties) set the other two timeouts.
 */
@Configuration(proxyBeanMethods = false)
class DownstreamClientConfig {

    @Bean
    fun clientHttpRequestFactoryBuilder(
        @Value("\${DOWNSTREAM_POOL_SIZE:512}") poolSize: Int,
    ): HttpComponentsClientHttpRequestFactoryBuilder =
        ClientHttpRequestFactoryBuilder.httpComponents()
            .withConnectionManagerCustomizer { pool ->
                pool
                    // HttpClient 5 keeps at most 25 connections, 5 per route, by default; the downstream is one
                    // route, so both are the contract's DOWNSTREAM_POOL_SIZE.
                    .setMaxConnTotal(poolSize)
                    .setMaxConnPerRoute(poolSize)
                    // STRICT (the default, stated): the maximum is never exceeded, and a call that finds every
                    // connection busy waits in the pool's pending queue (a LinkedList: unbounded in count).
                    .setPoolConcurrencyPolicy(PoolConcurrencyPolicy.STRICT)
            }
            .withDefaultRequestConfigCustomizer { request ->
                // The wait for a pooled connection counts in the call's 5 s; HttpClient 5 would wait 3 minutes.
                request.setConnectionRequestTimeout(Timeout.ofMilliseconds(Contract.DOWNSTREAM_TIMEOUT_MS))
            }
}

/** A call that did not end in time: the request answers 504. */
class DownstreamTimedOut(cause: Throwable? = null) : RuntimeException(Contract.DOWNSTREAM_TIMED_OUT, cause)

/** A downstream answer that was not a 200: the request answers 502. */
class DownstreamStatus(status: Int) : RuntimeException("status $status")

/** True when [failure] is a call that timed out (504) rather than one that failed otherwise (502). */
fun timedOut(failure: Throwable): Boolean = generateSequence(failure) { it.cause }.any {
    // InterruptedIOException: HttpClient 5's read, connect and pool-wait timeouts (SocketTimeoutException,
    // ConnectTimeoutException, ConnectionRequestTimeoutException all extend it)
    it is DownstreamTimedOut || it is InterruptedIOException || it is TimeoutException
}

/**
 * fan-out's calls to the downstream service: Spring's RestClient from Boot's builder, each call started on
 * [executor], which has at least DOWNSTREAM_POOL_SIZE threads so that nothing in front of the client's pool is
 * smaller. Each call has [Contract.DOWNSTREAM_TIMEOUT_MS] from the moment it is started to its whole body, the
 * waits for a thread and a pooled connection included.
 */
@Component
class Downstream(
    builder: RestClient.Builder,
    environment: Environment,
    @Value("\${DOWNSTREAM_URL:}") url: String,
    @Value("\${DOWNSTREAM_POOL_SIZE:512}") poolSize: Int,
) : DisposableBean {

    // without DOWNSTREAM_URL (an orchestrator that starts no downstream) every call fails: a 502, the app still starts
    private val client: RestClient = builder.also { if (url.isNotEmpty()) it.baseUrl(url) }.build()

    private val executor: ExecutorService =
        if (Threading.VIRTUAL.isActive(environment)) {
            // virtual and coroutines-virtual: a new virtual thread per call (StructuredTaskScope is still a preview
            // API in JDK 25, so an executor of virtual threads); unbounded, as the JDK's docs intend
            Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("downstream-", 1).factory())
        } else {
            // platform and coroutines: as many platform threads as the client has connections (one per call in
            // flight); more calls wait in this executor's queue (unbounded, like the pool's own), their wait counted
            // in their 5 s. Threads are made on demand and end after 60 s idle, as Tomcat's workers do.
            ThreadPoolExecutor(
                poolSize, poolSize, 60, TimeUnit.SECONDS, LinkedBlockingQueue(),
                Thread.ofPlatform().name("downstream-", 1).factory(),
            ).apply { allowCoreThreadTimeOut(true) }
        }

    private val dispatcher = executor.asCoroutineDispatcher()

    /** One call, `GET {DOWNSTREAM_URL}/call?i=[i]`: a 200 whose body Jackson parses (Boot's converters), else it throws. */
    fun call(i: Int): JsonNode =
        client.get()
            .uri(Contract.DOWNSTREAM_CALL + i)
            .retrieve()
            .onStatus({ it.value() != 200 }) { _, response -> throw DownstreamStatus(response.statusCode.value()) }
            .requiredBody(JsonNode::class.java)

    /**
     * Blocking variants: every call started on [executor] at once, then the request's thread waits for all of them
     * at most 5 s (invokeAll's timeout, which cancels, by interrupting, the calls still running then). Any call
     * cancelled there timed out; otherwise the first failure in call order is the request's.
     */
    fun fanOut(calls: Int): List<JsonNode> {
        val tasks = (1..calls).map { i -> Callable { call(i) } }
        val futures = executor.invokeAll(tasks, Contract.DOWNSTREAM_TIMEOUT_MS, TimeUnit.MILLISECONDS)
        if (futures.any { it.isCancelled }) throw DownstreamTimedOut()
        return futures.map {
            try {
                it.get()
            } catch (e: ExecutionException) {
                throw e.cause ?: e
            }
        }
    }

    /**
     * Coroutine variants: an `async` per call in a `coroutineScope`, each a suspending call of the blocking client
     * on [executor] (`runInterruptible`, so that a cancelled call's thread is interrupted), under `withTimeout`; the
     * first failure cancels the others and is the request's.
     */
    suspend fun fanOutAwait(calls: Int): List<JsonNode> = coroutineScope {
        (1..calls).map { i -> async { timed { runInterruptible(dispatcher) { call(i) } } } }.awaitAll()
    }

    /**
     * [block], one call, under its 5 s. A call that ends in failure at its deadline timed out, whatever it threw:
     * an interrupted call throws its client's exception (a closed socket) rather than withTimeout's.
     */
    private suspend fun <T> timed(block: suspend () -> T): T {
        val started = System.nanoTime()
        try {
            return withTimeout(Contract.DOWNSTREAM_TIMEOUT_MS) { block() }
        } catch (e: Exception) {
            val late = System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(Contract.DOWNSTREAM_TIMEOUT_MS)
            if (e is TimeoutCancellationException || late) throw DownstreamTimedOut(e)
            throw e
        }
    }

    override fun destroy() {
        executor.shutdownNow()
    }
}
