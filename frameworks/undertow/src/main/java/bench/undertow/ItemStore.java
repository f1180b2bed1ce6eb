package bench.undertow;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;

/** The item table over JDBC: one auto-committed statement per call, from a HikariCP pool. */
final class ItemStore implements AutoCloseable {
    record Item(long id, String name, BigDecimal price) {
    }

    private final HikariDataSource dataSource;

    ItemStore(String host, String port, String database, String user, String password, int poolSize) {
        HikariConfig config = new HikariConfig();
        // mariadb-java-client 4 asks for TLS by default; the benchmark's MariaDB is plain TCP.
        config.setJdbcUrl("jdbc:mariadb://" + host + ":" + port + "/" + database + "?sslMode=disable");
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(poolSize);
        config.setPoolName("bench-db");
        this.dataSource = new HikariDataSource(config);
    }

    Optional<Item> find(long id) throws SQLException {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT id, name, price FROM item WHERE id = ?")) {
            select.setLong(1, id);
            try (ResultSet row = select.executeQuery()) {
                return row.next()
                        ? Optional.of(new Item(row.getLong(1), row.getString(2), row.getBigDecimal(3)))
                        : Optional.empty();
            }
        }
    }

    long insert(String name, BigDecimal price) throws SQLException {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement insert = connection.prepareStatement(
                     "INSERT INTO item (name, price) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
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

    @Override
    public void close() {
        dataSource.close();
    }
}
