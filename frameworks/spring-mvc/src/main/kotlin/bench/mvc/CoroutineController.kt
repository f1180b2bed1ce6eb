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
import org.springframework.context.annotation.Profile
import org.springframework.data.redis.core.ReactiveStringRedisTemplate
import org.springframework.data.redis.core.multiGetAndAwait
import org.springframework.http.HttpStatus
import org.springframework.http.MediaType
import org.springframework.http.ResponseEntity
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RequestBody
import org.springframework.web.bind.annotation.RequestHeader
import org.springframework.web.bind.annotation.RequestParam
import org.springframework.web.bind.annotation.RestController

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
) {

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
}
