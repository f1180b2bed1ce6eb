package bench.vertx;

import bench.shared.Contract;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.mysqlclient.MySQLBuilder;
import io.vertx.mysqlclient.MySQLClient;
import io.vertx.mysqlclient.MySQLConnectOptions;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisAPI;
import io.vertx.redis.client.RedisOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Tuple;

/**
 * The Redis client and the MySQL pool, made once in {@link Main} and shared by every verticle
 * instance, as the SQL client's "pool sharing" docs advise for a pool used by several instances
 * (one pool of DB_POOL_SIZE in total, not one per instance). Every call returns a Vert.x Future:
 * the event-loop variant composes it, the virtual-thread variant awaits it.
 */
final class Backends {

  private final Pool pool;
  private final Redis redis;
  private final RedisAPI redisApi;

  private Backends(Pool pool, Redis redis) {
    this.pool = pool;
    this.redis = redis;
    this.redisApi = RedisAPI.api(redis);
  }

  static Backends create(Vertx vertx, Settings settings) {
    MySQLConnectOptions connect = new MySQLConnectOptions()
        .setHost(settings.dbHost())
        .setPort(settings.dbPort())
        .setDatabase(settings.dbName())
        .setUser(settings.dbUser())
        .setPassword(settings.dbPassword())
        // One EXECUTE per request instead of PREPARE + EXECUTE + CLOSE (the docs' "cached
        // prepared statements"); the JDBC targets also send one statement per request.
        .setCachePreparedStatements(true);
    Pool pool = MySQLBuilder.pool()
        .with(new PoolOptions().setMaxSize(settings.dbPoolSize()))
        .connectingTo(connect)
        .using(vertx)
        .build();

    RedisOptions redisOptions = new RedisOptions()
        .setConnectionString("redis://" + settings.redisHost() + ":" + settings.redisPort())
        .setPassword(settings.redisPassword())
        // A command holds its pooled connection for the round trip: the pool size is the number of
        // commands in flight, the contract's REDIS_POOL_SIZE (the default 6 would be the limit).
        .setMaxPoolSize(settings.redisPoolSize())
        // The pool's default wait queue (24) fails requests once more than size + 24 are in flight;
        // unbounded, a burst queues for a connection like the SQL pool's default does.
        .setMaxPoolWaiting(-1);
    Redis redis = Redis.createClient(vertx, redisOptions);
    return new Backends(pool, redis);
  }

  /** The item row, or null when there is none. */
  Future<JsonObject> item(int id) {
    return pool.preparedQuery(Contract.SELECT_ITEM).execute(Tuple.of(id)).map(Bodies::item);
  }

  /** Inserts the item in auto-commit mode and returns its generated id. */
  Future<Long> insert(Bodies.NewItem item) {
    return pool.preparedQuery(Contract.INSERT_ITEM)
        .execute(Tuple.of(item.name(), item.price()))
        .map(rows -> rows.property(MySQLClient.LAST_INSERTED_ID));
  }

  /** One MGET of the three bench keys, through the client's connection pool. */
  Future<JsonArray> redisValues() {
    return redisApi.mget(Contract.REDIS_KEYS).map(Bodies::values);
  }

  Future<Void> close() {
    return Future.join(pool.close(), redis.close()).mapEmpty();
  }
}
