package bench.webflux

import bench.shared.Item
import bench.shared.JdbcItems
import bench.shared.NewItem
import org.springframework.context.annotation.Bean
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.Profile
import org.springframework.jdbc.core.simple.JdbcClient
import org.springframework.stereotype.Component
import reactor.core.publisher.Mono

/** The variants on the HikariCP pool get frameworks/spring-shared's JdbcItems, the one Spring MVC runs. */
@Configuration
@Profile("jdbc-pool")
class JdbcPool {
    @Bean
    fun jdbcItems(jdbc: JdbcClient) = JdbcItems(jdbc)
}

/**
 * JDBC behind a Mono for the `jdbc` and `jdbc-elastic` variants: the call runs where
 * `bench.reactive.jdbc` says, in place on the event loop or on boundedElastic.
 */
@Component
@Profile("mono & jdbc-pool")
class ScheduledJdbcItems(private val jdbc: JdbcItems, placement: ReactivePlacement) : ReactiveItems {
    private val scheduler = placement.jdbc.scheduler()

    override fun find(id: Int, report: () -> Unit): Mono<Item> =
        Mono.fromCallable { report(); jdbc.find(id) }.subscribeOn(scheduler)

    override fun insert(item: NewItem, report: () -> Unit): Mono<Long> =
        Mono.fromCallable { report(); jdbc.insert(item) }.subscribeOn(scheduler)
}
