package bench.mvc

import bench.shared.Contract
import bench.shared.JdbcItems
import bench.shared.Created
import bench.shared.Item
import bench.shared.Message
import bench.shared.NewItem
import bench.shared.Primes
import bench.shared.Slept
import bench.shared.countPrimes
import bench.shared.countPrimesYielding
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.delay
import kotlinx.coroutines.withContext
import org.springframework.beans.factory.annotation.Value
import org.springframework.context.annotation.Profile
import org.springframework.data.redis.core.ReactiveStringRedisTemplate
import org.springframework.data.redis.core.getAndAwait
import org.springframework.data.redis.core.multiGetAndAwait
import org.springframework.data.redis.core.setAndAwait
import org.springframework.http.HttpStatus
import org.springframework.http.MediaType
import org.springframework.http.ResponseEntity
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RequestBody
import org.springframework.web.bind.annotation.RequestHeader
import org.springframework.web.bind.annotation.RequestParam
import org.springframework.web.bind.annotation.RestController
import tools.jackson.databind.json.JsonMapper
import java.time.Duration
import kotlin.coroutines.cancellation.CancellationException

/**
 * `suspend` handlers. Spring MVC starts each one on the request's Tomcat thread and completes the
 * response asynchronously. `delay` and Redis suspend without holding a thread; JDBC has no
 * non-blocking API, so it runs on [blocking] (see [BlockingDispatcherConfig]); CPU work stays inline.
 */
@RestController
@Profile("coroutines")
class CoroutineController(
    private val items: JdbcItems,
    private val redis: ReactiveStringRedisTemplate,
    private val blocking: CoroutineDispatcher,
    private val downstream: Downstream,
    private val json: JsonMapper,
    @Value("\${CACHE_TTL_S:10}") cacheTtlSeconds: Long,
) {
    private val cacheTtl = Duration.ofSeconds(cacheTtlSeconds)

    @GetMapping("/plaintext", produces = [MediaType.TEXT_PLAIN_VALUE])
    suspend fun plaintext(@RequestHeader(REPORT_THREAD, required = false) report: String?): ResponseEntity<String> =
        reply(work(report) { Contract.HELLO })

    @GetMapping("/json")
    suspend fun json(@RequestHeader(REPORT_THREAD, required = false) report: String?): ResponseEntity<Message> =
        reply(work(report) { Message(Contract.HELLO) })

    @GetMapping("/sleep")
    suspend fun sleep(
        @RequestParam(required = false) ms: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Slept> {
        val millis = sleepMs(ms)
        return reply(work(report) { delay(millis.toLong()); Slept(millis.toLong()) })
    }

    @GetMapping("/cpu")
    suspend fun cpu(
        @RequestParam(required = false) n: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Primes> {
        val limit = primesN(n)
        return reply(work(report) { Primes(limit, countPrimes(limit)) })
    }

    @GetMapping("/cpu-yield")
    suspend fun cpuYield(
        @RequestParam(required = false) n: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Primes> {
        val limit = primesN(n)
        return reply(work(report) { Primes(limit, countPrimesYielding(limit)) })
    }

    @GetMapping("/redis")
    suspend fun redis(@RequestHeader(REPORT_THREAD, required = false) report: String?): ResponseEntity<List<String?>> =
        reply(work(report) { redis.opsForValue().multiGetAndAwait(Contract.REDIS_KEYS) })

    @GetMapping("/db")
    suspend fun read(
        @RequestParam(required = false) id: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Item> {
        val key = itemId(id)
        return replyOrNotFound(withContext(blocking) { work(report) { items.find(key) } })
    }

    @PostMapping("/db")
    suspend fun write(
        @RequestBody item: NewItem,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Created> =
        reply(withContext(blocking) { work(report) { Created(items.insert(item)) } }, HttpStatus.CREATED)

    /**
     * An `async` per call (see [Downstream.fanOutAwait]); the bodies are combined where `awaitAll` resumes, on the
     * thread that finished the last call (the handler runs Dispatchers.Unconfined).
     */
    @GetMapping("/fan-out")
    suspend fun fanOut(
        @RequestParam(required = false) calls: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Any> {
        val count = fanOutCalls(calls)
        val bodies = try {
            downstream.fanOutAwait(count)
        } catch (e: CancellationException) {
            throw e // the request itself was cancelled: nothing to answer
        } catch (e: Exception) {
            return downstreamFailure(e)
        }
        return reply<Any>(Done(bodies, threadIf(report)))
    }

    /**
     * GET from Redis with the redis scenario's coroutine template; the handler resumes on Lettuce's I/O thread,
     * which had Redis's answer. On a miss, db-read's SELECT on [blocking], then a SET with the cache's TTL.
     */
    @GetMapping("/cache-aside")
    suspend fun cacheAside(
        @RequestParam(required = false) id: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<String> {
        val key = itemId(id)
        val cacheKey = Contract.cacheKey(key)
        val cached = redis.opsForValue().getAndAwait(cacheKey)
        val thread = threadIf(report)
        if (cached != null) return jsonText(cached, thread)
        val item = withContext(blocking) { items.find(key) } ?: return ResponseEntity.notFound().build()
        val text = json.writeValueAsString(item)
        redis.opsForValue().setAndAwait(cacheKey, text, cacheTtl)
        return jsonText(text, thread)
    }
}
