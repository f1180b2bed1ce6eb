package bench.webflux

import bench.shared.JdbcItems
import bench.shared.Contract
import bench.shared.Created
import bench.shared.Item
import bench.shared.Message
import bench.shared.NewItem
import bench.shared.Primes
import bench.shared.Slept
import bench.shared.countPrimes
import bench.shared.countPrimesYielding
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.delay
import kotlinx.coroutines.withContext
import org.springframework.beans.factory.annotation.Qualifier
import org.springframework.boot.autoconfigure.task.TaskExecutionAutoConfiguration
import org.springframework.context.annotation.Profile
import org.springframework.core.task.AsyncTaskExecutor
import org.springframework.data.redis.core.ReactiveStringRedisTemplate
import org.springframework.data.redis.core.getAndAwait
import org.springframework.data.redis.core.multiGetAndAwait
import org.springframework.data.redis.core.setAndAwait
import org.springframework.http.MediaType
import org.springframework.http.ResponseEntity
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RequestBody
import org.springframework.web.bind.annotation.RequestParam
import org.springframework.web.bind.annotation.RestController
import org.springframework.web.reactive.function.client.WebClient
import org.springframework.web.server.ServerWebExchange
import tools.jackson.databind.json.JsonMapper

/**
 * Suspend handlers whose coroutines run on virtual threads (`coroutines-virtual`), the eight-combination
 * study's "Netty + coroutines + virtual threads": the event loop hands each coroutine, with withContext,
 * to a dispatcher over Boot's applicationTaskExecutor (a new virtual thread per task once
 * spring.threads.virtual.enabled=true), and the work is the coroutine variants' work, as in
 * spring-mvc's `coroutines-virtual`: `delay` (the study's coroutine delay), Redis awaited, CPU counted
 * in the coroutine, and JDBC, which has no suspending API, called from the coroutine's virtual thread.
 * plaintext and json do no work worth moving and stay on the event loop.
 */
@RestController
@Profile("coroutines-virtual")
class CoroutineVirtualController(
    private val items: JdbcItems,
    private val redis: ReactiveStringRedisTemplate,
    @Qualifier(TaskExecutionAutoConfiguration.APPLICATION_TASK_EXECUTOR_BEAN_NAME) executor: AsyncTaskExecutor,
    private val downstream: WebClient,
    private val json: JsonMapper,
    private val cache: CacheProperties,
) {
    private val virtualThreads = executor.asCoroutineDispatcher()

    private suspend fun <T> onVirtualThread(exchange: ServerWebExchange, block: suspend () -> T): T =
        withContext(virtualThreads) {
            exchange.reportThread()
            block()
        }

    /** The coroutine on virtual threads, reporting X-Thread itself (the thread that combined, or had Redis's answer). */
    private suspend fun <T> virtual(block: suspend () -> T): T = withContext(virtualThreads) { block() }

    @GetMapping("/plaintext", produces = [MediaType.TEXT_PLAIN_VALUE])
    suspend fun plaintext(exchange: ServerWebExchange): String {
        exchange.reportThread()
        return Contract.HELLO
    }

    @GetMapping("/json")
    suspend fun json(exchange: ServerWebExchange): Message {
        exchange.reportThread()
        return Message(Contract.HELLO)
    }

    @GetMapping("/sleep")
    suspend fun sleep(@RequestParam ms: String?, exchange: ServerWebExchange): Slept {
        val millis = sleepMs(ms)
        return onVirtualThread(exchange) { delay(millis); Slept(millis) }
    }

    @GetMapping("/cpu")
    suspend fun cpu(@RequestParam n: String?, exchange: ServerWebExchange): Primes {
        val limit = primesN(n)
        return onVirtualThread(exchange) { Primes(limit, countPrimes(limit)) }
    }

    @GetMapping("/cpu-yield")
    suspend fun cpuYield(@RequestParam n: String?, exchange: ServerWebExchange): Primes {
        val limit = primesN(n)
        return onVirtualThread(exchange) { Primes(limit, countPrimesYielding(limit)) }
    }

    @GetMapping("/redis")
    suspend fun redis(exchange: ServerWebExchange): List<String?> =
        onVirtualThread(exchange) { redis.opsForValue().multiGetAndAwait(Contract.REDIS_KEYS) }

    @GetMapping("/db")
    suspend fun read(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): ResponseEntity<Item> {
        val key = itemId(id)
        return found(onVirtualThread(exchange) { items.find(key) })
    }

    @PostMapping("/db")
    suspend fun create(@RequestBody item: NewItem, exchange: ServerWebExchange): ResponseEntity<Created> =
        created(onVirtualThread(exchange) { items.insert(item) })

    /**
     * The suspend handlers' fan-out (coroutineScope, an `async` per call, awaitBody) in the coroutine on
     * virtual threads: each `async` is dispatched to a virtual thread of its own, and awaitAll resumes on
     * a new one, which combines the bodies (X-Thread).
     */
    @GetMapping("/fan-out")
    suspend fun fanOut(@RequestParam(required = false) calls: String?, exchange: ServerWebExchange): List<Call> {
        val n = fanOutCalls(calls)
        return virtual { downstream.fanOutAwait(n).also { exchange.reportThread() } }
    }

    /** Lettuce's GET and SET awaited, JDBC called, on the coroutine's virtual threads; X-Thread: the one resumed with Redis's answer. */
    @GetMapping("/cache-aside")
    suspend fun cacheAside(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): ResponseEntity<ByteArray> {
        val itemId = itemId(id)
        val key = Contract.cacheKey(itemId)
        return virtual {
            val cached = redis.opsForValue().getAndAwait(key)
            exchange.reportThread()
            if (cached != null) return@virtual jsonText(cached)
            val item = items.find(itemId) ?: return@virtual notFoundText()
            val text = json.writeValueAsString(item)
            redis.opsForValue().setAndAwait(key, text, cache.ttl)
            jsonText(text)
        }
    }
}
