package bench.ktor

import bench.shared.Contract
import io.lettuce.core.ExperimentalLettuceCoroutinesApi
import io.lettuce.core.RedisClient
import io.lettuce.core.RedisURI
import io.lettuce.core.SetArgs
import io.lettuce.core.api.coroutines
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.toList

private val KEYS = Contract.REDIS_KEYS.toTypedArray()

/**
 * One shared Lettuce connection, as Lettuce recommends: it is thread-safe and pipelines the
 * commands of concurrent callers. Its coroutine API suspends instead of blocking.
 */
@OptIn(ExperimentalLettuceCoroutinesApi::class)
class RedisValues(settings: Settings) : AutoCloseable {
    private val client = RedisClient.create(
        RedisURI.builder()
            .withHost(settings.redisHost)
            .withPort(settings.redisPort)
            .apply { if (settings.redisPassword.isNotEmpty()) withPassword(settings.redisPassword.toCharArray()) }
            .build()
    )
    private val connection = client.connect()
    private val commands = connection.coroutines()

    suspend fun mget(): List<String?> =
        commands.mget(*KEYS).map { it.getValueOrElse(null) }.toList()

    /** cache-aside: one `GET`; null on a miss. */
    suspend fun get(key: String): String? = commands.get(key)

    /** cache-aside: one `SET key value EX ttl`. */
    suspend fun setEx(key: String, value: String, ttlSeconds: Long) {
        commands.set(key, value, SetArgs.Builder.ex(ttlSeconds))
    }

    override fun close() {
        connection.close()
        client.shutdown()
    }
}
