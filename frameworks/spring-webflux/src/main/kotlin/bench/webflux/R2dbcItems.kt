package bench.webflux

import bench.shared.Contract
import bench.shared.Item
import bench.shared.NewItem
import org.springframework.context.annotation.Profile
import org.springframework.r2dbc.core.DatabaseClient
import org.springframework.stereotype.Repository
import reactor.core.publisher.Mono
import java.math.BigDecimal

/** Non-blocking access through Boot's DatabaseClient over the r2dbc-pool ConnectionPool. */
@Repository
@Profile("r2dbc")
class R2dbcItems(private val db: DatabaseClient) : ReactiveItems {

    override fun find(id: Int, report: () -> Unit): Mono<Item> {
        report()
        return db.sql(Contract.SELECT_ITEM)
            .bind(0, id)
            .map { row, _ ->
                Item(
                    row.get("id", Int::class.javaObjectType)!!,
                    row.get("name", String::class.java)!!,
                    row.get("price", BigDecimal::class.java)!!,
                )
            }
            .one()
    }

    override fun insert(item: NewItem, report: () -> Unit): Mono<Long> {
        report()
        return db.sql(Contract.INSERT_ITEM)
            .bind(0, item.name)
            .bind(1, item.price)
            // The documented way to read a generated key with R2DBC; r2dbc-mariadb adds RETURNING id.
            .filter { statement -> statement.returnGeneratedValues("id") }
            .map { row -> row.get("id", Long::class.javaObjectType)!! }
            .one()
    }
}
