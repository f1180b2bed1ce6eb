package bench.webflux

import bench.shared.JdbcItems
import bench.shared.Contract
import bench.shared.Item
import bench.shared.NewItem
import bench.shared.Primes
import bench.shared.Slept
import bench.shared.countPrimes
import bench.shared.countPrimesYielding
import org.springframework.beans.factory.annotation.Qualifier
import org.springframework.boot.autoconfigure.task.TaskExecutionAutoConfiguration
import org.springframework.context.annotation.Profile
import org.springframework.core.task.AsyncTaskExecutor
import org.springframework.data.redis.core.StringRedisTemplate
import org.springframework.stereotype.Component
import org.springframework.web.client.RestClient
import org.springframework.web.client.body
import tools.jackson.databind.json.JsonMapper
import java.util.concurrent.Callable
import java.util.concurrent.ExecutionException
import java.util.concurrent.Future
import java.util.concurrent.TimeUnit
import java.util.concurrent.TimeoutException

/**
 * The scenarios written blocking-style, for the `virtual` variant that runs them on virtual threads:
 * the thread really sleeps and really waits for Redis and JDBC.
 */
@Component
@Profile("virtual")
class BlockingWork(
    private val redis: StringRedisTemplate,
    private val items: JdbcItems,
    private val downstream: RestClient,
    private val json: JsonMapper,
    private val cache: CacheProperties,
    @param:Qualifier(TaskExecutionAutoConfiguration.APPLICATION_TASK_EXECUTOR_BEAN_NAME)
    private val virtualThreads: AsyncTaskExecutor,
) {

    fun sleep(ms: Long): Slept {
        Thread.sleep(ms)
        return Slept(ms)
    }

    fun primes(n: Int) = Primes(n, countPrimes(n))
    fun primesYielding(n: Int) = Primes(n, countPrimesYielding(n))

    fun redisValues(): List<String?> = redis.opsForValue().multiGet(Contract.REDIS_KEYS)!!

    fun find(id: Int): Item? = items.find(id)

    fun insert(item: NewItem): Long = items.insert(item)

    /**
     * Each call blocking on a virtual thread of its own (Boot's applicationTaskExecutor, a new virtual
     * thread per task: no pool in front of the client), all submitted before the first is awaited; the
     * caller's virtual thread waits for each with Future.get, within 5 s of the calls' start (the pool
     * wait included). StructuredTaskScope would be the JDK's way, but it is a preview API in JDK 25. On
     * the first failure or the timeout the other calls are cancelled: their threads are interrupted,
     * which disposes the Reactor Netty exchange they block on and closes its connection.
     */
    fun fanOut(n: Int): List<Call> {
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Contract.DOWNSTREAM_TIMEOUT_MS)
        val calls: List<Future<Call>> = (1..n).map { i -> virtualThreads.submit(Callable { call(i) }) }
        try {
            return calls.map { it.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS) }
        } catch (e: TimeoutException) {
            throw DownstreamException(true, e)
        } catch (e: ExecutionException) {
            throw downstreamFailure(e.cause ?: e)
        } finally {
            calls.forEach { it.cancel(true) }   // a no-op for the calls that completed
        }
    }

    /** One blocking call through RestClient; a status other than 200 and an empty body are failures. */
    private fun call(i: Int): Call =
        downstream.get().uri(Contract.DOWNSTREAM_CALL + i)
            .retrieve()
            .onStatus({ it.value() != 200 }) { _, response -> throw DownstreamStatus(response.statusCode) }
            .body<Call>() ?: throw EmptyBody()

    /** The cached text, or null on a miss. */
    fun cached(key: String): String? = redis.opsForValue().get(key)

    /** A miss: the row's JSON, cached with SET ... EX before it is answered; null when there is no row. */
    fun loadAndCache(id: Int, key: String): String? {
        val item = items.find(id) ?: return null
        val text = json.writeValueAsString(item)
        redis.opsForValue().set(key, text, cache.ttl)
        return text
    }
}
