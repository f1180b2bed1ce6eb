package bench.webflux

import bench.shared.JdbcItems
import bench.shared.Contract
import bench.shared.Item
import bench.shared.NewItem
import bench.shared.Primes
import bench.shared.Slept
import bench.shared.countPrimes
import bench.shared.countPrimesYielding
import org.springframework.context.annotation.Profile
import org.springframework.data.redis.core.StringRedisTemplate
import org.springframework.stereotype.Component

/**
 * The scenarios written blocking-style, for the `virtual` variant that runs them on virtual threads:
 * the thread really sleeps and really waits for Redis and JDBC.
 */
@Component
@Profile("virtual")
class BlockingWork(private val redis: StringRedisTemplate, private val items: JdbcItems) {

    fun sleep(ms: Long): Slept {
        Thread.sleep(ms)
        return Slept(ms)
    }

    fun primes(n: Int) = Primes(n, countPrimes(n))
    fun primesYielding(n: Int) = Primes(n, countPrimesYielding(n))

    fun redisValues(): List<String?> = redis.opsForValue().multiGet(Contract.REDIS_KEYS)!!

    fun find(id: Int): Item? = items.find(id)

    fun insert(item: NewItem): Long = items.insert(item)
}
