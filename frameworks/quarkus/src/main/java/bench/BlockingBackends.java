package bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import javax.sql.DataSource;

import bench.Payloads.Item;
import bench.Payloads.NewItem;
import io.quarkus.redis.datasource.RedisDataSource;
import io.quarkus.redis.datasource.value.ValueCommands;
import jakarta.inject.Singleton;

/** Redis and MariaDB for the blocking and virtual endpoints: calls that block the calling thread. */
@Singleton
public class BlockingBackends {
    private final DataSource dataSource;
    private final ValueCommands<String, String> redis;

    BlockingBackends(DataSource dataSource, RedisDataSource redis) {
        this.dataSource = dataSource; // the Agroal pool of the default datasource
        this.redis = redis.value(String.class);
    }

    List<String> redisValues() {
        Map<String, String> values = redis.mget(Queries.REDIS_KEYS);
        return Arrays.stream(Queries.REDIS_KEYS).map(values::get).toList();
    }

    Optional<Item> item(int id) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(Queries.SELECT_ITEM)) {
            statement.setInt(1, id);
            try (ResultSet rows = statement.executeQuery()) {
                if (!rows.next()) {
                    return Optional.empty();
                }
                return Optional.of(new Item(rows.getInt(1), rows.getString(2), rows.getBigDecimal(3)));
            }
        }
    }

    long insert(NewItem item) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(Queries.INSERT_ITEM,
                        Statement.RETURN_GENERATED_KEYS)) {
            statement.setString(1, item.name());
            statement.setBigDecimal(2, item.price());
            statement.executeUpdate();
            try (ResultSet keys = statement.getGeneratedKeys()) {
                keys.next();
                return keys.getLong(1);
            }
        }
    }
}
