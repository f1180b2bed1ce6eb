package bench.webflux

import bench.shared.Created
import bench.shared.Item
import bench.shared.Message
import bench.shared.NewItem
import bench.shared.Primes
import bench.shared.Slept
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.withContext
import org.springframework.beans.factory.annotation.Qualifier
import org.springframework.boot.autoconfigure.task.TaskExecutionAutoConfiguration
import org.springframework.context.annotation.Profile
import org.springframework.core.task.AsyncTaskExecutor
import org.springframework.http.MediaType
import org.springframework.http.ResponseEntity
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RequestBody
import org.springframework.web.bind.annotation.RequestParam
import org.springframework.web.bind.annotation.RestController
import org.springframework.web.server.ServerWebExchange

/**
 * Suspend handlers with virtual threads (`coroutines-virtual`). WebFlux never hands a suspend
 * handler to its blocking executor: it starts it on the event loop. So each blocking piece of work
 * moves, the Kotlin way (as one would use Dispatchers.IO), with withContext to a dispatcher over
 * Boot's applicationTaskExecutor, which spring.threads.virtual.enabled=true makes a new virtual
 * thread per task. plaintext and json do not block and stay on the event loop.
 */
@RestController
@Profile("coroutines-virtual")
class CoroutineVirtualController(
    private val work: BlockingWork,
    @Qualifier(TaskExecutionAutoConfiguration.APPLICATION_TASK_EXECUTOR_BEAN_NAME) executor: AsyncTaskExecutor,
) {
    private val virtualThreads = executor.asCoroutineDispatcher()

    private suspend fun <T> onVirtualThread(exchange: ServerWebExchange, block: () -> T): T =
        withContext(virtualThreads) {
            exchange.reportThread()
            block()
        }

    @GetMapping("/plaintext", produces = [MediaType.TEXT_PLAIN_VALUE])
    suspend fun plaintext(exchange: ServerWebExchange): String {
        exchange.reportThread()
        return HELLO
    }

    @GetMapping("/json")
    suspend fun json(exchange: ServerWebExchange): Message {
        exchange.reportThread()
        return Message(HELLO)
    }

    @GetMapping("/sleep")
    suspend fun sleep(@RequestParam ms: String?, exchange: ServerWebExchange): Slept {
        val millis = sleepMs(ms)
        return onVirtualThread(exchange) { work.sleep(millis) }
    }

    @GetMapping("/cpu")
    suspend fun cpu(@RequestParam n: String?, exchange: ServerWebExchange): Primes {
        val limit = primesN(n)
        return onVirtualThread(exchange) { work.primes(limit) }
    }

    @GetMapping("/redis")
    suspend fun redis(exchange: ServerWebExchange): List<String?> =
        onVirtualThread(exchange) { work.redisValues() }

    @GetMapping("/db")
    suspend fun read(@RequestParam id: Int, exchange: ServerWebExchange): ResponseEntity<Item> =
        found(onVirtualThread(exchange) { work.find(id) })

    @PostMapping("/db")
    suspend fun create(@RequestBody item: NewItem, exchange: ServerWebExchange): ResponseEntity<Created> =
        created(onVirtualThread(exchange) { work.insert(item) })
}
