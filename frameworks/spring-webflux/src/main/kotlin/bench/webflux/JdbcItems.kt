package bench.webflux

import bench.shared.Item
import bench.shared.NewItem
import org.springframework.context.annotation.Profile
import org.springframework.jdbc.core.simple.JdbcClient
import org.springframework.jdbc.support.GeneratedKeyHolder
import org.springframework.stereotype.Component
import org.springframework.stereotype.Repository
import reactor.core.publisher.Mono

/** Blocking access through Boot's JdbcClient over the HikariCP pool; callers decide which thread blocks. */
@Repository
@Profile("jdbc-pool")
class JdbcItems(private val jdbc: JdbcClient) {

    fun find(id: Int): Item? =
        jdbc.sql(SELECT_ITEM)
            .param("id", id)
            .query { rs, _ -> Item(rs.getInt(1), rs.getString(2), rs.getBigDecimal(3)) }
            .optional()
            .orElse(null)

    fun insert(item: NewItem): Long {
        val keys = GeneratedKeyHolder()
        jdbc.sql(INSERT_ITEM)
            .param("name", item.name)
            .param("price", item.price)
            .update(keys)
        return keys.key!!.toLong()
    }
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
