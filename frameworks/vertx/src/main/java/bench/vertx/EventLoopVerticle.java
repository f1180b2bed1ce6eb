package bench.vertx;

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
}
