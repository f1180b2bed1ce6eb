package bench.undertow;

import bench.shared.Contract;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * The three seeded keys, read with one MGET, and cache-aside's items (GET, SET ... EX), all over a
 * single shared Lettuce connection: Lettuce connections are thread-safe and multiplex concurrent
 * commands, which is what it recommends over a pool for non-transactional commands.
 */
final class RedisValues implements AutoCloseable {
    private static final String[] KEYS = Contract.REDIS_KEYS.toArray(String[]::new);

    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;

    RedisValues(String host, int port, String password) {
        RedisURI.Builder uri = RedisURI.builder().withHost(host).withPort(port);
        if (password != null && !password.isEmpty()) {
            uri.withPassword(password.toCharArray());
        }
        this.client = RedisClient.create(uri.build());
        this.connection = client.connect();
    }

    /** Blocks the calling thread until the reply arrives. */
    List<String> mget() {
        return values(connection.sync().mget(KEYS));
    }

    /** Completes on Lettuce's own event-loop thread. */
    CompletionStage<List<String>> mgetAsync() {
        return connection.async().mget(KEYS).thenApply(RedisValues::values);
    }

    /** cache-aside's GET: the cached text, null when the key is absent. Blocks the calling thread. */
    String get(String key) {
        return connection.sync().get(key);
    }

    /** Completes on Lettuce's own event-loop thread, with null when the key is absent. */
    CompletionStage<String> getAsync(String key) {
        return connection.async().get(key);
    }

    /** cache-aside's {@code SET key value EX ttl} (SET with EX, as the contract says, not SETEX). Blocks. */
    void set(String key, String value, long ttlSeconds) {
        connection.sync().set(key, value, SetArgs.Builder.ex(ttlSeconds));
    }

    /** Completes on Lettuce's own event-loop thread. */
    CompletionStage<String> setAsync(String key, String value, long ttlSeconds) {
        return connection.async().set(key, value, SetArgs.Builder.ex(ttlSeconds));
    }

    private static List<String> values(List<KeyValue<String, String>> pairs) {
        return pairs.stream().map(pair -> pair.getValueOrElse(null)).toList();
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
