package bench.webflux

import bench.shared.Contract
import bench.shared.Created
import bench.shared.Item
import bench.shared.Message
import bench.shared.NewItem
import bench.shared.Primes
import bench.shared.Slept
import bench.shared.countPrimes
import bench.shared.countPrimesYielding
import kotlinx.coroutines.delay
import kotlinx.coroutines.reactor.awaitSingle
import kotlinx.coroutines.reactor.awaitSingleOrNull
import org.springframework.context.annotation.Profile
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
 * Suspend handlers (`coroutines`). WebFlux starts them on the Netty event loop with
 * Dispatchers.Unconfined, so they continue on whichever thread completes what they awaited.
 */
@RestController
@Profile("coroutines")
class CoroutineController(
    private val redis: ReactiveStringRedisTemplate,
    private val items: ReactiveItems,
    private val downstream: WebClient,
    private val json: JsonMapper,
    private val cache: CacheProperties,
) {
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
        exchange.reportThread()
        delay(millis)
        return Slept(millis)
    }

    @GetMapping("/cpu")
    suspend fun cpu(@RequestParam n: String?, exchange: ServerWebExchange): Primes {
        val limit = primesN(n)
        exchange.reportThread()
        return Primes(limit, countPrimes(limit))
    }

    @GetMapping("/cpu-yield")
    suspend fun cpuYield(@RequestParam n: String?, exchange: ServerWebExchange): Primes {
        val limit = primesN(n)
        exchange.reportThread()
        return Primes(limit, countPrimesYielding(limit))
    }

    @GetMapping("/redis")
    suspend fun redis(exchange: ServerWebExchange): List<String?> {
        exchange.reportThread()
        return redis.opsForValue().multiGetAndAwait(Contract.REDIS_KEYS)
    }

    @GetMapping("/db")
    suspend fun read(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): ResponseEntity<Item> =
        found(items.find(itemId(id), exchange::reportThread).awaitSingleOrNull())

    @PostMapping("/db")
    suspend fun create(@RequestBody item: NewItem, exchange: ServerWebExchange): ResponseEntity<Created> =
        created(items.insert(item, exchange::reportThread).awaitSingle())

    /** X-Thread: where awaitAll resumes, the event loop that delivered the last body (Unconfined). */
    @GetMapping("/fan-out")
    suspend fun fanOut(@RequestParam(required = false) calls: String?, exchange: ServerWebExchange): List<Call> {
        val n = fanOutCalls(calls)
        return downstream.fanOutAwait(n).also { exchange.reportThread() }
    }

    @GetMapping("/cache-aside")
    suspend fun cacheAside(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): ResponseEntity<ByteArray> {
        val itemId = itemId(id)
        val key = Contract.cacheKey(itemId)
        val cached = redis.opsForValue().getAndAwait(key)
        exchange.reportThread()
        if (cached != null) return jsonText(cached)
        val item = items.find(itemId) {}.awaitSingleOrNull() ?: return notFoundText()
        val text = json.writeValueAsString(item)
        redis.opsForValue().setAndAwait(key, text, cache.ttl)
        return jsonText(text)
    }
}
