package bench.vertx;

import bench.shared.Contract;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpResponseExpectation;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import io.vertx.ext.web.codec.BodyCodec;
import io.vertx.mysqlclient.MySQLBuilder;
import io.vertx.mysqlclient.MySQLClient;
import io.vertx.mysqlclient.MySQLConnectOptions;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisAPI;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Response;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Tuple;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The Redis client, the MySQL pool and the downstream's WebClient, made once in {@link Main} and
 * shared by every verticle instance, as the SQL client's "pool sharing" docs advise for a pool used
 * by several instances (one pool of DB_POOL_SIZE in total, not one per instance) and the Web
 * Client's docs for a client ("created once on application startup and then reused"). Every call
 * returns a Vert.x Future: the event-loop variant composes it, the virtual-thread variant awaits it.
 */
final class Backends {

  private final Pool pool;
  private final Redis redis;
  private final RedisAPI redisApi;
  private final WebClient downstream;
  /** DOWNSTREAM_URL's host and port; null when it is not set, and every call then fails (a 502). */
  private final String downstreamHost;
  private final int downstreamPort;
  private final String cacheTtl;

  private Backends(Pool pool, Redis redis, WebClient downstream, String downstreamUrl, int cacheTtlS) {
    this.pool = pool;
    this.redis = redis;
    this.redisApi = RedisAPI.api(redis);
    this.downstream = downstream;
    URI uri = downstreamUrl == null ? null : URI.create(downstreamUrl);
    this.downstreamHost = uri == null ? null : uri.getHost();
    this.downstreamPort = uri == null || uri.getPort() == -1 ? 80 : uri.getPort();
    this.cacheTtl = Integer.toString(cacheTtlS);
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

    WebClientOptions clientOptions = new WebClientOptions()
        // The contract's HTTP/1.1 with keep-alive, said explicitly although both are the defaults;
        // no pipelining (the default too): one call per connection at a time.
        .setProtocolVersion(HttpVersion.HTTP_1_1)
        .setKeepAlive(true)
        .setPipelining(false);
    // The HTTP client's PoolOptions (io.vertx.core.http), not the SQL pool's imported above.
    io.vertx.core.http.PoolOptions httpPool = new io.vertx.core.http.PoolOptions()
        // The pool is per endpoint (host:port), so this is the process's limit to the one
        // downstream: DOWNSTREAM_POOL_SIZE connections, so as many calls in flight (the default 5
        // would be the limit long before the framework).
        .setHttp1MaxSize(settings.downstreamPoolSize())
        // -1 is the default already (unbounded): a call that finds every connection busy queues
        // rather than failing with ConnectionPoolTooBusyException; its wait counts in its 5 s.
        .setMaxWaitQueueSize(-1);
    WebClient downstream = WebClient.create(vertx, clientOptions, httpPool);
    return new Backends(pool, redis, downstream, settings.downstreamUrl(), settings.cacheTtlS());
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

  /**
   * fan-out: starts the {@code calls} GETs to the downstream, all at once, before anything awaits
   * them; the futures are in the order of {@code i}. Each fails with a TimeoutException when it
   * has not completed within DOWNSTREAM_TIMEOUT_MS of its start, the wait for a pooled connection
   * included, and with another exception when refused, reset, not 200 or not a JSON object.
   */
  List<Future<JsonObject>> downstreamCalls(int calls) {
    List<Future<JsonObject>> futures = new ArrayList<>(calls);
    for (int i = 1; i <= calls; i++) {
      futures.add(call(i));
    }
    return futures;
  }

  private Future<JsonObject> call(int i) {
    if (downstreamHost == null) {
      return Future.failedFuture("DOWNSTREAM_URL is not set");
    }
    return downstream.get(downstreamPort, downstreamHost, Contract.DOWNSTREAM_CALL + i)
        // The client's own timeouts (connect: the wait for a pooled connection; idle: no data
        // for that long), so that the client itself gives up a stalled call and closes its
        // connection: the Web Client has no way to cancel a send, this is its way to stop one.
        .timeout(Contract.DOWNSTREAM_TIMEOUT_MS)
        // Parsed by Vert.x's Json codec (the framework's JSON library); not JSON fails the call.
        .as(BodyCodec.jsonObject())
        .send()
        .expecting(HttpResponseExpectation.SC_OK)
        .map(Backends::jsonBody)
        // The client has no whole-call timeout (connect + idle can add up past 5 s), so the call
        // is wrapped: 5 s from its start to its complete body, whatever it waited for.
        .timeout(Contract.DOWNSTREAM_TIMEOUT_MS, TimeUnit.MILLISECONDS);
  }

  private static JsonObject jsonBody(HttpResponse<JsonObject> response) {
    JsonObject body = response.body();
    if (body == null) {
      throw new IllegalStateException("an empty body");
    }
    return body;
  }

  /** cache-aside: one GET of the item's key; the cached JSON text, or null on a miss. */
  Future<String> cachedItem(int id) {
    return redisApi.get(Contract.cacheKey(id)).map(value -> value == null ? null : value.toString());
  }

  /** cache-aside: one SET of the item's key to its JSON text, with CACHE_TTL_S as its time to live. */
  Future<Response> cacheItem(int id, String json) {
    return redisApi.set(List.of(Contract.cacheKey(id), json, "EX", cacheTtl));
  }

  Future<Void> close() {
    downstream.close();   // the Web Client's close returns nothing to wait for
    return Future.join(pool.close(), redis.close()).mapEmpty();
  }
}
