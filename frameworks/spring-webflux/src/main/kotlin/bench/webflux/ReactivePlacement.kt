package bench.webflux

import org.springframework.boot.context.properties.ConfigurationProperties
import reactor.core.scheduler.Scheduler
import reactor.core.scheduler.Schedulers

/** Where the Mono handlers run CPU and JDBC work; each variant's profile in application.yaml sets it. */
@ConfigurationProperties("bench.reactive")
data class ReactivePlacement(val cpu: RunOn = RunOn.CALLER, val jdbc: RunOn = RunOn.CALLER)

enum class RunOn(val scheduler: () -> Scheduler) {
    /** The subscribing thread, i.e. the Netty event loop: Reactor's no-op scheduler. */
    CALLER(Schedulers::immediate),
    /** Reactor's shared CPU-bound pool, one thread per core. */
    PARALLEL(Schedulers::parallel),
    /** Reactor's shared pool for blocking calls, sized to DB_POOL_SIZE threads in main(). */
    BOUNDED_ELASTIC(Schedulers::boundedElastic),
}
