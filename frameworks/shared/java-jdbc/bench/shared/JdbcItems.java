package bench.shared;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;

import javax.sql.DataSource;

/**
 * The item table over plain JDBC, for every Java target that blocks a thread on the database
 * (Quarkus's blocking and virtual variants on Agroal, Undertow on HikariCP): one auto-committed
 * statement per call on a connection borrowed from the target's pool for that call only.
 */
public final class JdbcItems {
    private final DataSource pool;

    public JdbcItems(DataSource pool) {
        this.pool = pool;
    }

    public Optional<Item> find(int id) throws SQLException {
        try (Connection connection = pool.getConnection();
                PreparedStatement select = connection.prepareStatement(Contract.SELECT_ITEM)) {
            select.setInt(1, id);
            try (ResultSet row = select.executeQuery()) {
                return row.next()
                        ? Optional.of(new Item(row.getInt(1), row.getString(2), row.getBigDecimal(3)))
                        : Optional.empty();
            }
        }
    }

    /** Inserts the row and returns the key MariaDB generated for it, read from the OK packet. */
    public long insert(String name, BigDecimal price) throws SQLException {
        try (Connection connection = pool.getConnection();
                PreparedStatement insert = connection.prepareStatement(Contract.INSERT_ITEM,
                        Statement.RETURN_GENERATED_KEYS)) {
            insert.setString(1, name);
            insert.setBigDecimal(2, price);
            insert.executeUpdate();
            try (ResultSet keys = insert.getGeneratedKeys()) {
                if (!keys.next()) {
                    throw new SQLException("INSERT returned no generated key");
                }
                return keys.getLong(1);
            }
        }
    }
}
