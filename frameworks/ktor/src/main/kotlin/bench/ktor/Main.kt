package bench.ktor

import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationStopped
import io.ktor.server.cio.CIO
import io.ktor.server.engine.ApplicationEngine
import io.ktor.server.engine.ApplicationEngineFactory
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty

/** The variant's engine; both run the same [benchModule]. */
const val ENGINE_ENV = "KTOR_ENGINE"

fun main() {
    val settings = Settings.fromEnv()
    when (val engine = System.getenv(ENGINE_ENV) ?: "netty") {
        "netty" -> serve(Netty, settings)
        "cio" -> serve(CIO, settings)
        else -> error("$ENGINE_ENV must be 'netty' or 'cio', not '$engine'")
    }
}

// Engine configuration is left untouched: its thread counts are the defaults under test.
private fun <E : ApplicationEngine, C : ApplicationEngine.Configuration> serve(
    factory: ApplicationEngineFactory<E, C>,
    settings: Settings,
) {
    embeddedServer(factory, port = settings.port, host = settings.bindAddress) {
        benchModule(settings)
    }.start(wait = true)
}

private fun Application.benchModule(settings: Settings) {
    val redis = RedisValues(settings)
    val items = ItemRepository(settings)
    val downstream = Downstream(settings)
    monitor.subscribe(ApplicationStopped) {
        downstream.close()
        items.close()
        redis.close()
    }
    benchRoutes(redis, items, downstream, settings.cacheTtlS)
}
