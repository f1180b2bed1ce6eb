package bench;

import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import javax.sql.DataSource;

import org.eclipse.microprofile.config.inject.ConfigProperty;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import bench.Payloads.NewItem;
import bench.shared.Contract;
import bench.shared.Item;
import bench.shared.JdbcItems;
import io.quarkus.redis.datasource.RedisDataSource;
import io.quarkus.redis.datasource.value.SetArgs;
import io.quarkus.redis.datasource.value.ValueCommands;
import jakarta.inject.Singleton;

/** Redis and MariaDB for the blocking and virtual endpoints: calls that block the calling thread. */
@Singleton
public class BlockingBackends {
    private static final String[] KEYS = Contract.REDIS_KEYS.toArray(String[]::new);

    private final JdbcItems items;
    private final ValueCommands<String, String> redis;
    private final ObjectMapper json;
    private final long cacheTtlSeconds;

    BlockingBackends(DataSource dataSource, RedisDataSource redis, ObjectMapper json,
            @ConfigProperty(name = "bench.cache-ttl-s") long cacheTtlSeconds) {
        this.items = new JdbcItems(dataSource); // the Agroal pool of the default datasource
        this.redis = redis.value(String.class);
        this.json = json; // Quarkus's ObjectMapper, the one the REST layer answers db-read with
        this.cacheTtlSeconds = cacheTtlSeconds;
    }

    List<String> redisValues() {
        Map<String, String> values = redis.mget(KEYS);
        return Contract.REDIS_KEYS.stream().map(values::get).toList();
    }

    Optional<Item> item(int id) throws SQLException {
        return items.find(id);
    }

    /** cache-aside: {@code GET item:<id>}; null on a miss. */
    String cached(int id) {
        return redis.get(Contract.cacheKey(id));
    }

    /**
     * cache-aside's miss: the row as db-read answers it (Jackson, from the record), stored with
     * {@code SET item:<id> <json> EX <CACHE_TTL_S>}; returns the JSON text once Redis has acknowledged it.
     */
    String cache(Item item) throws JsonProcessingException {
        String text = json.writeValueAsString(item);
        redis.set(Contract.cacheKey(item.id()), text, new SetArgs().ex(cacheTtlSeconds));
        return text;
    }

    /** cache-aside on the calling thread: the cached text, else the row read and cached; empty: no such row. */
    Optional<String> cacheAside(int id) throws SQLException, JsonProcessingException {
        String hit = cached(id);
        if (hit != null) {
            return Optional.of(hit);
        }
        Optional<Item> row = item(id);
        return row.isEmpty() ? Optional.empty() : Optional.of(cache(row.get()));
    }

    long insert(NewItem item) throws SQLException {
        return items.insert(item.name(), item.price());
    }
}
