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
import org.springframework.context.annotation.Profile
import org.springframework.data.redis.core.ReactiveStringRedisTemplate
import org.springframework.http.MediaType
import org.springframework.http.ResponseEntity
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RequestBody
import org.springframework.web.bind.annotation.RequestParam
import org.springframework.web.bind.annotation.RestController
import org.springframework.web.server.ServerWebExchange
import org.springframework.web.reactive.function.client.WebClient
import org.springframework.web.reactive.function.client.bodyToMono
import reactor.core.publisher.Flux
import reactor.core.publisher.Mono
import tools.jackson.databind.json.JsonMapper
import java.time.Duration

/**
 * Mono handlers (`reactive`, `reactive-parallel`, `jdbc`, `jdbc-elastic`). WebFlux invokes them on
 * the Netty event loop; only the CPU and JDBC work may move, as [ReactivePlacement] says.
 */
@RestController
@Profile("mono")
class ReactiveController(
    private val redis: ReactiveStringRedisTemplate,
    private val items: ReactiveItems,
    placement: ReactivePlacement,
    private val downstream: WebClient,
    private val json: JsonMapper,
    private val cache: CacheProperties,
) {
    private val cpuScheduler = placement.cpu.scheduler()

    @GetMapping("/plaintext", produces = [MediaType.TEXT_PLAIN_VALUE])
    fun plaintext(exchange: ServerWebExchange): Mono<String> {
        exchange.reportThread()
        return Mono.just(Contract.HELLO)
    }

    @GetMapping("/json")
    fun json(exchange: ServerWebExchange): Mono<Message> {
        exchange.reportThread()
        return Mono.just(Message(Contract.HELLO))
    }

    /** A timer, no thread waits: the event loop arms it, Reactor's parallel scheduler fires it. */
    @GetMapping("/sleep")
    fun sleep(@RequestParam ms: String?, exchange: ServerWebExchange): Mono<Slept> {
        val millis = sleepMs(ms)
        exchange.reportThread()
        return Mono.delay(Duration.ofMillis(millis)).thenReturn(Slept(millis))
    }

    @GetMapping("/cpu")
    fun cpu(@RequestParam n: String?, exchange: ServerWebExchange): Mono<Primes> {
        val limit = primesN(n)
        return Mono.fromCallable { exchange.reportThread(); Primes(limit, countPrimes(limit)) }
            .subscribeOn(cpuScheduler)
    }

    @GetMapping("/cpu-yield")
    fun cpuYield(@RequestParam n: String?, exchange: ServerWebExchange): Mono<Primes> {
        val limit = primesN(n)
        return Mono.fromCallable { exchange.reportThread(); Primes(limit, countPrimesYielding(limit)) }
            .subscribeOn(cpuScheduler)
    }

    @GetMapping("/redis")
    fun redis(exchange: ServerWebExchange): Mono<List<String>> {
        exchange.reportThread()
        return redis.opsForValue().multiGet(Contract.REDIS_KEYS)
    }

    @GetMapping("/db")
    fun read(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): Mono<ResponseEntity<Item>> =
        items.find(itemId(id), exchange::reportThread)
            .map { ResponseEntity.ok(it) }
            .defaultIfEmpty(ResponseEntity.notFound().build())

    @PostMapping("/db")
    fun create(@RequestBody item: NewItem, exchange: ServerWebExchange): Mono<ResponseEntity<Created>> =
        items.insert(item, exchange::reportThread).map(::created)

    /**
     * Every call subscribed at once by mergeSequential, which emits their bodies in the order of `i`;
     * each bounded by Mono.timeout from its subscription (the pool wait included), and the first failure
     * cancels the others (Reactor Netty closes their connections). X-Thread: where collectList completes,
     * the event loop that delivered the last body.
     */
    @GetMapping("/fan-out")
    fun fanOut(@RequestParam(required = false) calls: String?, exchange: ServerWebExchange): Mono<List<Call>> {
        val n = fanOutCalls(calls)
        val each = (1..n).map { i ->
            downstream.downstreamCall(i).bodyToMono<Call>()
                .switchIfEmpty(Mono.error<Call> { EmptyBody() })
                .timeout(DOWNSTREAM_TIMEOUT)
        }
        return Flux.mergeSequential(each)
            .collectList()
            .doOnNext { exchange.reportThread() }
            .onErrorMap(::downstreamFailure)
    }

    /**
     * GET from Redis; a hit answers the cached text, a miss reads the row (where [ReactiveItems] runs it:
     * R2DBC, or JDBC on the thread that had Redis's answer or on boundedElastic) and SETs it with EX before
     * answering. X-Thread: the thread that had Redis's answer (Lettuce's event loop), the hit's map or the
     * miss's switchIfEmpty.
     */
    @GetMapping("/cache-aside")
    fun cacheAside(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): Mono<ResponseEntity<ByteArray>> {
        val itemId = itemId(id)
        val key = Contract.cacheKey(itemId)
        return redis.opsForValue().get(key)
            .map { cached -> exchange.reportThread(); jsonText(cached) }
            .switchIfEmpty(Mono.defer {
                exchange.reportThread()
                items.find(itemId) {}
                    .flatMap { item ->
                        val text = json.writeValueAsString(item)
                        redis.opsForValue().set(key, text, cache.ttl).thenReturn(jsonText(text))
                    }
                    .defaultIfEmpty(notFoundText())
            })
    }
}
