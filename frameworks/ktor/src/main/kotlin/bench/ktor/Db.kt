package bench.ktor

import bench.shared.Contract
import io.r2dbc.pool.ConnectionPool
import io.r2dbc.pool.ConnectionPoolConfiguration
import io.r2dbc.spi.Connection
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.flow.singleOrNull
import kotlinx.coroutines.reactive.asFlow
import kotlinx.coroutines.reactive.awaitFirstOrNull
import kotlinx.coroutines.reactive.awaitSingle
import kotlinx.coroutines.withContext
import org.mariadb.r2dbc.MariadbConnectionConfiguration
import org.mariadb.r2dbc.MariadbConnectionFactory
import java.math.BigDecimal

/** The `item` table through MariaDB's R2DBC driver and an r2dbc-pool of DB_POOL_SIZE connections. */
class ItemRepository(settings: Settings) : AutoCloseable {
    private val pool = ConnectionPool(
        ConnectionPoolConfiguration.builder(
            MariadbConnectionFactory(
                MariadbConnectionConfiguration.builder()
                    .host(settings.dbHost)
                    .port(settings.dbPort)
                    .database(settings.dbName)
                    .username(settings.dbUser)
                    .password(settings.dbPassword)
                    .build()
            )
        )
            // r2dbc-pool opens 10 at start by default; every other target's pool starts (or, as
            // Hikari, fills) at DB_POOL_SIZE: a fixed-size pool, the same for all.
            .initialSize(settings.dbPoolSize)
            .maxSize(settings.dbPoolSize)
            .build()
    )

    suspend fun find(id: Int): Item? = withConnection { connection ->
        connection.createStatement(Contract.SELECT_ITEM)
            .bind(0, id)
            .execute().awaitSingle()
            .map { row, _ ->
                Item(
                    id = row.get("id", Int::class.javaObjectType)!!,
                    name = row.get("name", String::class.java)!!,
                    price = row.get("price", BigDecimal::class.java)!!,
                )
            }
            // Collected to completion (id is the key: at most one row), so the connection
            // goes back to the pool with nothing left unread.
            .asFlow().singleOrNull()
    }

    suspend fun insert(item: NewItem): Long = withConnection { connection ->
        // The driver reads the generated key with INSERT ... RETURNING on MariaDB 10.5 and newer.
        connection.createStatement(Contract.INSERT_ITEM)
            .bind(0, item.name)
            .bind(1, item.price)
            .returnGeneratedValues("id")
            .execute().awaitSingle()
            .map { row, _ -> (row.get("id") as Number).toLong() }
            .awaitSingle()
    }

    private suspend inline fun <T> withConnection(block: (Connection) -> T): T {
        val connection = pool.create().awaitSingle()
        try {
            return block(connection)
        } finally {
            // Released even when the request is cancelled, or the pool would leak it.
            withContext(NonCancellable) { connection.close().awaitFirstOrNull() }
        }
    }

    override fun close() {
        pool.dispose()
    }
}
