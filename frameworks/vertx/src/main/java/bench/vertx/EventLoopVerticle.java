package bench.vertx;

import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;

/**
 * The classic Vert.x model: handlers run on the instance's event loop and never block; each wait
 * is a callback on a timer or a Future, which Vert.x runs back on the same event loop.
 */
final class EventLoopVerticle extends BenchVerticle {

  EventLoopVerticle(Backends backends, Settings settings) {
    super(backends, settings);
  }

  @Override
  protected void sleep(RoutingContext ctx, int ms) {
    vertx.setTimer(ms, timerId -> Reply.json(ctx, 200, Bodies.slept(ms)));
  }

  @Override
  protected void redis(RoutingContext ctx) {
    backends.redisValues()
        .onSuccess(values -> Reply.json(ctx, 200, values))
        .onFailure(ctx::fail);
  }

  @Override
  protected void dbRead(RoutingContext ctx, int id) {
    backends.item(id)
        .onSuccess(item -> replyItem(ctx, item))
        .onFailure(ctx::fail);
  }

  @Override
  protected void dbWrite(RoutingContext ctx, Bodies.NewItem item) {
    backends.insert(item)
        .onSuccess(id -> Reply.json(ctx, 201, Bodies.created(id)))
        .onFailure(ctx::fail);
  }

  @Override
  protected void fanOut(RoutingContext ctx, int calls) {
    // Every call is started before Future.all composes them; it fails at the first failed call.
    // The callback runs back on this instance's event loop, which combines the bodies.
    Future.all(backends.downstreamCalls(calls))
        .onSuccess(all -> Reply.json(ctx, 200, Bodies.fanOut(all.list())))
        .onFailure(failure -> replyDownstreamFailure(ctx, failure));
  }

  @Override
  protected void cacheAside(RoutingContext ctx, int id) {
    backends.cachedItem(id)
        .compose(cached -> cached != null ? Future.succeededFuture(cached) : fill(id))
        .onSuccess(json -> {
          if (json == null) {
            Reply.status(ctx, 404);
          } else {
            Reply.jsonText(ctx, json);
          }
        })
        .onFailure(ctx::fail);
  }

  /** A miss: the row from the database, cached before it is answered; null when there is no row. */
  private Future<String> fill(int id) {
    return backends.item(id).compose(item -> {
      if (item == null) {
        return Future.succeededFuture(null);
      }
      String json = item.encode();
      return backends.cacheItem(id, json).map(json);
    });
  }
}
