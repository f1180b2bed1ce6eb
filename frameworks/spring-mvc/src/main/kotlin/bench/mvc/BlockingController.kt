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
import org.springframework.beans.factory.annotation.Value
import org.springframework.context.annotation.Profile
import org.springframework.data.redis.core.StringRedisTemplate
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

/**
 * Plain blocking handlers, run on the thread Tomcat gives the request: a pooled platform
 * thread, or a virtual thread with `spring.threads.virtual.enabled=true`.
 */
@RestController
@Profile("!coroutines")
class BlockingController(
    private val items: JdbcItems,
    private val redis: StringRedisTemplate,
    private val downstream: Downstream,
    private val json: JsonMapper,
    @Value("\${CACHE_TTL_S:10}") cacheTtlSeconds: Long,
) {
    private val cacheTtl = Duration.ofSeconds(cacheTtlSeconds)

    @GetMapping("/plaintext", produces = [MediaType.TEXT_PLAIN_VALUE])
    fun plaintext(@RequestHeader(REPORT_THREAD, required = false) report: String?): ResponseEntity<String> =
        reply(work(report) { Contract.HELLO })

    @GetMapping("/json")
    fun json(@RequestHeader(REPORT_THREAD, required = false) report: String?): ResponseEntity<Message> =
        reply(work(report) { Message(Contract.HELLO) })

    @GetMapping("/sleep")
    fun sleep(
        @RequestParam(required = false) ms: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Slept> {
        val millis = sleepMs(ms)
        return reply(work(report) { Thread.sleep(millis.toLong()); Slept(millis.toLong()) })
    }

    @GetMapping("/cpu")
    fun cpu(
        @RequestParam(required = false) n: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Primes> {
        val limit = primesN(n)
        return reply(work(report) { Primes(limit, countPrimes(limit)) })
    }

    @GetMapping("/cpu-yield")
    fun cpuYield(
        @RequestParam(required = false) n: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Primes> {
        val limit = primesN(n)
        return reply(work(report) { Primes(limit, countPrimesYielding(limit)) })
    }

    @GetMapping("/redis")
    fun redis(@RequestHeader(REPORT_THREAD, required = false) report: String?): ResponseEntity<List<String?>> =
        reply(work(report) { redis.opsForValue().multiGet(Contract.REDIS_KEYS).orEmpty() })

    @GetMapping("/db")
    fun read(
        @RequestParam(required = false) id: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Item> {
        val key = itemId(id)
        return replyOrNotFound(work(report) { items.find(key) })
    }

    @PostMapping("/db")
    fun write(
        @RequestBody item: NewItem,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Created> = reply(work(report) { Created(items.insert(item)) }, HttpStatus.CREATED)

    /** The calls on the downstream executor (see [Downstream.fanOut]); the bodies combined on the request's thread. */
    @GetMapping("/fan-out")
    fun fanOut(
        @RequestParam(required = false) calls: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<Any> {
        val count = fanOutCalls(calls)
        val bodies = try {
            downstream.fanOut(count)
        } catch (e: Exception) {
            return downstreamFailure(e)
        }
        return reply<Any>(Done(bodies, threadIf(report)))
    }

    /** GET from Redis (the redis scenario's template); on a miss, db-read's SELECT and a SET with the cache's TTL. */
    @GetMapping("/cache-aside")
    fun cacheAside(
        @RequestParam(required = false) id: String?,
        @RequestHeader(REPORT_THREAD, required = false) report: String?,
    ): ResponseEntity<String> {
        val key = itemId(id)
        val cacheKey = Contract.cacheKey(key)
        val cached = redis.opsForValue().get(cacheKey)
        val thread = threadIf(report)
        if (cached != null) return jsonText(cached, thread)
        val item = items.find(key) ?: return ResponseEntity.notFound().build()
        val text = json.writeValueAsString(item)
        redis.opsForValue().set(cacheKey, text, cacheTtl)
        return jsonText(text, thread)
    }
}
