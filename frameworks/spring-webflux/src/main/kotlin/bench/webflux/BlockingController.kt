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
}
