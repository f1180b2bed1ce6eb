package bench.webflux

import bench.shared.Contract
import bench.shared.Created
import bench.shared.Item
import bench.shared.Message
import bench.shared.NewItem
import bench.shared.Primes
import bench.shared.Slept
import org.springframework.context.annotation.Profile
import org.springframework.http.MediaType
import org.springframework.http.ResponseEntity
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RequestBody
import org.springframework.web.bind.annotation.RequestParam
import org.springframework.web.bind.annotation.RestController
import org.springframework.web.server.ServerWebExchange

/**
 * Plain handlers (`virtual`). With spring.threads.virtual.enabled=true, Boot hands WebFlux its
 * virtual-thread applicationTaskExecutor as the blocking executor, and WebFlux invokes every
 * handler method that returns neither a reactive type nor suspends on a new virtual thread.
 */
@RestController
@Profile("virtual")
class BlockingController(private val work: BlockingWork) {

    @GetMapping("/plaintext", produces = [MediaType.TEXT_PLAIN_VALUE])
    fun plaintext(exchange: ServerWebExchange): String {
        exchange.reportThread()
        return Contract.HELLO
    }

    @GetMapping("/json")
    fun json(exchange: ServerWebExchange): Message {
        exchange.reportThread()
        return Message(Contract.HELLO)
    }

    @GetMapping("/sleep")
    fun sleep(@RequestParam ms: String?, exchange: ServerWebExchange): Slept {
        val millis = sleepMs(ms)
        exchange.reportThread()
        return work.sleep(millis)
    }

    @GetMapping("/cpu")
    fun cpu(@RequestParam n: String?, exchange: ServerWebExchange): Primes {
        val limit = primesN(n)
        exchange.reportThread()
        return work.primes(limit)
    }

    @GetMapping("/cpu-yield")
    fun cpuYield(@RequestParam n: String?, exchange: ServerWebExchange): Primes {
        val limit = primesN(n)
        exchange.reportThread()
        return work.primesYielding(limit)
    }

    @GetMapping("/redis")
    fun redis(exchange: ServerWebExchange): List<String?> {
        exchange.reportThread()
        return work.redisValues()
    }

    @GetMapping("/db")
    fun read(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): ResponseEntity<Item> {
        exchange.reportThread()
        return found(work.find(itemId(id)))
    }

    @PostMapping("/db")
    fun create(@RequestBody item: NewItem, exchange: ServerWebExchange): ResponseEntity<Created> {
        exchange.reportThread()
        return created(work.insert(item))
    }

    /** X-Thread: this handler's virtual thread, which combines the bodies the calls' virtual threads got. */
    @GetMapping("/fan-out")
    fun fanOut(@RequestParam(required = false) calls: String?, exchange: ServerWebExchange): List<Call> {
        val n = fanOutCalls(calls)
        return work.fanOut(n).also { exchange.reportThread() }
    }

    /** Blocking Lettuce and JDBC on this virtual thread, which has Redis's answer (X-Thread). */
    @GetMapping("/cache-aside")
    fun cacheAside(@RequestParam(required = false) id: String?, exchange: ServerWebExchange): ResponseEntity<ByteArray> {
        val itemId = itemId(id)
        val key = Contract.cacheKey(itemId)
        val cached = work.cached(key)
        exchange.reportThread()
        if (cached != null) return jsonText(cached)
        return work.loadAndCache(itemId, key)?.let(::jsonText) ?: notFoundText()
    }
}
