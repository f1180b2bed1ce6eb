package bench.mvc

import bench.shared.Item
import bench.shared.NewItem
import org.springframework.jdbc.core.simple.JdbcClient
import org.springframework.jdbc.support.GeneratedKeyHolder
import org.springframework.stereotype.Repository

/** The `item` table through JdbcClient on the Hikari pool; blocking, shared by every variant. */
@Repository
class Items(private val jdbc: JdbcClient) {

    fun find(id: Int): Item? =
        jdbc.sql("SELECT id, name, price FROM item WHERE id = ?")
            .param(id)
            .query { rs, _ -> Item(rs.getInt(1), rs.getString(2), rs.getBigDecimal(3)) }
            .optional()
            .orElse(null)

    fun insert(item: NewItem): Long {
        val keys = GeneratedKeyHolder()
        jdbc.sql("INSERT INTO item (name, price) VALUES (?, ?)")
            .param(item.name)
            .param(item.price)
            .update(keys)
        return keys.getKeyAs(Number::class.java)!!.toLong()
    }
}
