package bench;

import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import javax.sql.DataSource;

import bench.Payloads.NewItem;
import bench.shared.Contract;
import bench.shared.Item;
import bench.shared.JdbcItems;
import io.quarkus.redis.datasource.RedisDataSource;
import io.quarkus.redis.datasource.value.ValueCommands;
import jakarta.inject.Singleton;

/** Redis and MariaDB for the blocking and virtual endpoints: calls that block the calling thread. */
@Singleton
public class BlockingBackends {
    private static final String[] KEYS = Contract.REDIS_KEYS.toArray(String[]::new);

    private final JdbcItems items;
    private final ValueCommands<String, String> redis;

    BlockingBackends(DataSource dataSource, RedisDataSource redis) {
        this.items = new JdbcItems(dataSource); // the Agroal pool of the default datasource
        this.redis = redis.value(String.class);
    }

    List<String> redisValues() {
        Map<String, String> values = redis.mget(KEYS);
        return Contract.REDIS_KEYS.stream().map(values::get).toList();
    }

    Optional<Item> item(int id) throws SQLException {
        return items.find(id);
    }

    long insert(NewItem item) throws SQLException {
        return items.insert(item.name(), item.price());
    }
}
