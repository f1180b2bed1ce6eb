package bench.webflux

import org.springframework.boot.autoconfigure.SpringBootApplication
import org.springframework.boot.context.properties.ConfigurationPropertiesScan
import org.springframework.boot.runApplication

/** One jar for every variant: the active Spring profile (= the variant's name) picks the code path. */
@SpringBootApplication
@ConfigurationPropertiesScan
class Application

/** Reactor reads it once, when Schedulers is first used: it has to be set before Spring starts. */
private const val BOUNDED_ELASTIC_SIZE = "reactor.schedulers.defaultBoundedElasticSize"

fun main(args: Array<String>) {
    // boundedElastic's default cap is 10 threads per core: 10 on the benchmark's one server CPU, fewer
    // than the DB_POOL_SIZE connections jdbc-elastic's JDBC calls could use. Sized to the pool, the
    // scheduler is not the limit on statements in flight; Reactor's documented property does it.
    if (System.getProperty(BOUNDED_ELASTIC_SIZE) == null) {
        System.setProperty(BOUNDED_ELASTIC_SIZE, System.getenv("DB_POOL_SIZE") ?: "16")
    }
    runApplication<Application>(*args)
}
