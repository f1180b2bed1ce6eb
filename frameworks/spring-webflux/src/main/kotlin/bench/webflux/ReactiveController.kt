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
import reactor.core.publisher.Mono
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
}
