package bench.undertow;

import bench.shared.Contract;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * The three seeded keys, read with one MGET over a single shared Lettuce connection: Lettuce
 * connections are thread-safe and multiplex concurrent commands, which is what it recommends
 * over a pool for non-transactional commands.
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

    private static List<String> values(List<KeyValue<String, String>> pairs) {
        return pairs.stream().map(pair -> pair.getValueOrElse(null)).toList();
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
