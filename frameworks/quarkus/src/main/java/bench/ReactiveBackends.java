package bench;

import java.util.List;
import java.util.Map;

import org.eclipse.microprofile.config.inject.ConfigProperty;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import bench.Payloads.NewItem;
import bench.shared.Contract;
import bench.shared.Item;
import io.quarkus.redis.datasource.ReactiveRedisDataSource;
import io.quarkus.redis.datasource.value.ReactiveValueCommands;
import io.quarkus.redis.datasource.value.SetArgs;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.RowIterator;
import io.vertx.mutiny.sqlclient.Tuple;
import io.vertx.mutiny.mysqlclient.MySQLClient;
import jakarta.inject.Singleton;

/** Redis and MariaDB for the reactive endpoints: each Uni completes on the event loop of the request. */
@Singleton
public class ReactiveBackends {
    private static final String[] KEYS = Contract.REDIS_KEYS.toArray(String[]::new);

    private final Pool pool;
    private final ReactiveValueCommands<String, String> redis;
    private final ObjectMapper json;
    private final long cacheTtlSeconds;

    ReactiveBackends(Pool pool, ReactiveRedisDataSource redis, ObjectMapper json,
            @ConfigProperty(name = "bench.cache-ttl-s") long cacheTtlSeconds) {
        this.pool = pool; // the Vert.x MySQL client pool of the default datasource
        this.redis = redis.value(String.class);
        this.json = json; // Quarkus's ObjectMapper, the one the REST layer answers db-read with
        this.cacheTtlSeconds = cacheTtlSeconds;
    }

    Uni<List<String>> redisValues() {
        return redis.mget(KEYS).map(ReactiveBackends::inKeyOrder);
    }

    /** The row, or a null item when there is none. */
    Uni<Item> item(int id) {
        return pool.preparedQuery(Contract.SELECT_ITEM).execute(Tuple.of(id)).map(rows -> {
            RowIterator<Row> it = rows.iterator();
            if (!it.hasNext()) {
                return null;
            }
            Row row = it.next();
            return new Item(row.getInteger(0), row.getString(1), row.getBigDecimal(2));
        });
    }

    /** cache-aside: {@code GET item:<id>}; a null item on a miss. */
    Uni<String> cached(int id) {
        return redis.get(Contract.cacheKey(id));
    }

    /**
     * cache-aside's miss: the row as db-read answers it (Jackson, from the record), stored with
     * {@code SET item:<id> <json> EX <CACHE_TTL_S>}; the JSON text once Redis has acknowledged it.
     */
    Uni<String> cache(Item item) {
        String text;
        try {
            text = json.writeValueAsString(item);
        } catch (JsonProcessingException e) {
            return Uni.createFrom().failure(e);
        }
        return redis.set(Contract.cacheKey(item.id()), text, new SetArgs().ex(cacheTtlSeconds)).replaceWith(text);
    }

    Uni<Long> insert(NewItem item) {
        return pool.preparedQuery(Contract.INSERT_ITEM)
                .execute(Tuple.of(item.name(), item.price()))
                .map(rows -> rows.property(MySQLClient.LAST_INSERTED_ID));
    }

    private static List<String> inKeyOrder(Map<String, String> values) {
        return Contract.REDIS_KEYS.stream().map(values::get).toList();
    }
}
