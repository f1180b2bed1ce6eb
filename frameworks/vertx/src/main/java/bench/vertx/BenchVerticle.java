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

/**
 * One HTTP server and its router. Each deployed instance listens on the same port; Vert.x shares
 * the port and spreads the connections over the instances. Routing, parameter rules, plaintext,
 * json and cpu are the same in both variants (they never wait); the subclasses differ only in how
 * they wait for a timer, Redis or the database.
 */
abstract class BenchVerticle extends VerticleBase {

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

  protected static void replyItem(RoutingContext ctx, JsonObject item) {
    if (item == null) {
      Reply.status(ctx, 404);
    } else {
      Reply.json(ctx, 200, item);
    }
  }
}
