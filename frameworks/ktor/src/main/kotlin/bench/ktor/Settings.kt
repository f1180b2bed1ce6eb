package bench.ktor

/** Configuration from the environment the orchestrator sets (frameworks/CONTRACT.md). */
class Settings(
    val port: Int,
    val bindAddress: String,
    val redisHost: String,
    val redisPort: Int,
    val redisPassword: String,
    val dbHost: String,
    val dbPort: Int,
    val dbName: String,
    val dbUser: String,
    val dbPassword: String,
    val dbPoolSize: Int,
    /** fan-out's downstream, `http://host:port` without a trailing slash; empty: every call fails (502). */
    val downstreamUrl: String,
    val downstreamPoolSize: Int,
    /** cache-aside's time to live of a cached item. */
    val cacheTtlS: Long,
) {
    // No toString: the passwords must never reach a log.
    companion object {
        fun fromEnv(env: Map<String, String> = System.getenv()): Settings {
            fun value(name: String, default: String? = null): String =
                env[name] ?: default ?: error("environment variable $name is not set")

            return Settings(
                port = value("PORT", "8080").toInt(),
                bindAddress = value("BIND_ADDRESS", "127.0.0.1"),
                redisHost = value("REDIS_HOST", "127.0.0.1"),
                redisPort = value("REDIS_PORT", "6379").toInt(),
                redisPassword = value("REDIS_PASSWORD", ""),
                dbHost = value("DB_HOST", "127.0.0.1"),
                dbPort = value("DB_PORT", "3306").toInt(),
                dbName = value("DB_NAME", "bench"),
                dbUser = value("DB_USER", "bench"),
                dbPassword = value("DB_PASSWORD", ""),
                dbPoolSize = value("DB_POOL_SIZE", "16").toInt(),
                downstreamUrl = value("DOWNSTREAM_URL", "").trimEnd('/'),
                downstreamPoolSize = value("DOWNSTREAM_POOL_SIZE", "512").toInt(),
                cacheTtlS = value("CACHE_TTL_S", "10").toLong(),
            )
        }
    }
}
