package bench.shared

import org.springframework.jdbc.core.simple.JdbcClient
import org.springframework.jdbc.support.GeneratedKeyHolder

/**
 * The `item` table through Boot's JdbcClient on the HikariCP pool, for both Spring apps (Spring MVC's
 * variants, WebFlux's jdbc ones): blocking, so each caller decides which thread waits. A plain class
 * that each app declares as a bean, because WebFlux has it only under its JDBC profiles.
 */
class JdbcItems(private val jdbc: JdbcClient) {

    fun find(id: Int): Item? =
        jdbc.sql(Contract.SELECT_ITEM)
            .param(id)
            .query { rs, _ -> Item(rs.getInt(1), rs.getString(2), rs.getBigDecimal(3)) }
            .optional()
            .orElse(null)

    /** Inserts the row and returns the key MariaDB generated for it, read from the OK packet. */
    fun insert(item: NewItem): Long {
        val keys = GeneratedKeyHolder()
        jdbc.sql(Contract.INSERT_ITEM)
            .param(item.name)
            .param(item.price)
            .update(keys)
        return keys.key!!.toLong()
    }
}
