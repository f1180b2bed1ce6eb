package bench.vertx;

import bench.shared.Contract;
import bench.shared.HttpDate;
import bench.shared.Primes;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.concurrent.TimeoutException;
import java.util.logging.Logger;

/**
 * One HTTP server and its router. Each deployed instance listens on the same port; Vert.x shares
 * the port and spreads the connections over the instances. Routing, parameter rules, plaintext,
 * json and cpu are the same in both variants (they never wait); the subclasses differ only in how
 * they wait for a timer, Redis or the database.
 */
abstract class BenchVerticle extends VerticleBase {

  private static final Logger LOG = Logger.getLogger(BenchVerticle.class.getName());

  protected final Backends backends;
  private final Settings settings;

  BenchVerticle(Backends backends, Settings settings) {
    this.backends = backends;
    this.settings = settings;
  }

  /** Waits {@code ms >= 1} milliseconds, then replies {@code {"sleptMs":ms}}. */
  protected abstract void sleep(RoutingContext ctx, int ms);

  protected abstract void redis(RoutingContext ctx);

  protected abstract void dbRead(RoutingContext ctx, int id);

  protected abstract void dbWrite(RoutingContext ctx, Bodies.NewItem item);

  /** Makes {@code calls} (1..16) downstream calls at once and answers their bodies in order. */
  protected abstract void fanOut(RoutingContext ctx, int calls);

  /** Redis first, the database on a miss (then cached with CACHE_TTL_S); 404 when there is no row. */
  protected abstract void cacheAside(RoutingContext ctx, int id);

  @Override
  public Future<?> start() {
    Router router = Router.router(vertx);
    // Vert.x sends no Date header of its own; every response carries one (CONTRACT.md)
    router.route().handler(ctx -> {
      ctx.response().putHeader(HttpHeaders.DATE, HttpDate.now());
      ctx.next();
    });
    router.get("/plaintext").handler(ctx -> Reply.text(ctx, Contract.HELLO));
    router.get("/json").handler(ctx -> Reply.json(ctx, 200, Bodies.message()));
    router.get("/sleep").handler(this::handleSleep);
    // CPU work runs inline on the verticle's thread: an event loop, or the virtual thread.
    router.get("/cpu").handler(this::handleCpu);
    router.get("/redis").handler(this::redis);
    router.get("/db").handler(this::handleDbRead);
    router.post("/db").handler(BodyHandler.create(false)).handler(this::handleDbWrite);
    router.get("/fan-out").handler(this::handleFanOut);
    router.get("/cache-aside").handler(this::handleCacheAside);

    HttpServerOptions options = new HttpServerOptions()
        .setHost(settings.bindAddress())
        .setPort(settings.port());
    return vertx.createHttpServer(options).requestHandler(router).listen();
  }

  private void handleSleep(RoutingContext ctx) {
    int ms = Contract.sleepMs(ctx.request().getParam("ms"));
    if (ms == Contract.INVALID) {
      Reply.status(ctx, 400);
    } else if (ms == 0) {
      // Vert.x timers need a delay of at least 1 ms; waiting 0 ms is not waiting.
      Reply.json(ctx, 200, Bodies.slept(0));
    } else {
      sleep(ctx, ms);
    }
  }

  private void handleCpu(RoutingContext ctx) {
    int n = Contract.primesN(ctx.request().getParam("n"));
    if (n == Contract.INVALID) {
      Reply.status(ctx, 400);
    } else {
      Reply.json(ctx, 200, Bodies.primes(n, Primes.count(n)));
    }
  }

  private void handleDbRead(RoutingContext ctx) {
    int id = Contract.itemId(ctx.request().getParam("id"));
    if (id == Contract.INVALID) {
      Reply.status(ctx, 400);
    } else {
      dbRead(ctx, id);
    }
  }

  private void handleDbWrite(RoutingContext ctx) {
    Bodies.NewItem item = Bodies.newItem(ctx.body().asString());
    if (item == null) {
      Reply.status(ctx, 400);
    } else {
      dbWrite(ctx, item);
    }
  }

  private void handleFanOut(RoutingContext ctx) {
    int calls = Contract.fanOutCalls(ctx.request().getParam("calls"));
    if (calls == Contract.INVALID) {
      Reply.status(ctx, 400);
    } else {
      fanOut(ctx, calls);
    }
  }

  private void handleCacheAside(RoutingContext ctx) {
    int id = Contract.itemId(ctx.request().getParam("id"));
    if (id == Contract.INVALID) {
      Reply.status(ctx, 400);
    } else {
      cacheAside(ctx, id);
    }
  }

  /**
   * A failed downstream call, as the contract answers it: 504 when it timed out (the wrapping
   * Future.timeout or the client's own connect or idle timeout), 502 for anything else (refused,
   * reset, not 200, not JSON). One log line, without the stack trace.
   */
  protected static void replyDownstreamFailure(RoutingContext ctx, Throwable failure) {
    boolean timedOut = false;
    for (Throwable t = failure; t != null && !timedOut; t = t.getCause()) {
      timedOut = t instanceof TimeoutException;
    }
    String message = timedOut ? Contract.DOWNSTREAM_TIMED_OUT : Contract.DOWNSTREAM_FAILED;
    LOG.warning(() -> ("fan-out: " + message + ": " + failure).replace('\n', ' '));
    Reply.json(ctx, timedOut ? 504 : 502, Bodies.error(message));
  }

  protected static void replyItem(RoutingContext ctx, JsonObject item) {
    if (item == null) {
      Reply.status(ctx, 404);
    } else {
      Reply.json(ctx, 200, item);
    }
  }
}
