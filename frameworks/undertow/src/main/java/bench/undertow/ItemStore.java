package bench.undertow;

import bench.shared.JdbcItems;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/** The HikariCP pool of DB_POOL_SIZE connections and the item table over it (frameworks/shared's JdbcItems). */
final class ItemStore implements AutoCloseable {
    private final HikariDataSource dataSource;
    private final JdbcItems items;

    ItemStore(String host, String port, String database, String user, String password, int poolSize) {
        HikariConfig config = new HikariConfig();
        // mariadb-java-client 4 asks for TLS by default; the benchmark's MariaDB is plain TCP.
        config.setJdbcUrl("jdbc:mariadb://" + host + ":" + port + "/" + database + "?sslMode=disable");
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(poolSize);
        config.setPoolName("bench-db");
        this.dataSource = new HikariDataSource(config);
        this.items = new JdbcItems(dataSource);
    }

    JdbcItems items() {
        return items;
    }

    @Override
    public void close() {
        dataSource.close();
    }
}
