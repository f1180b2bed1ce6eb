package bench.vertx;

import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * Deployed with {@code ThreadingModel.VIRTUAL_THREAD}: each request runs on a virtual thread and
 * waits with {@code Future.await()}, which parks the virtual thread while the instance goes on
 * with other requests. Blocking without await (e.g. {@code Thread.sleep}) would stall the whole
 * instance, which runs one task at a time, so the sleep awaits a Vert.x timer.
 */
final class VirtualThreadVerticle extends BenchVerticle {

  VirtualThreadVerticle(Backends backends, Settings settings) {
    super(backends, settings);
  }

  @Override
  protected void sleep(RoutingContext ctx, int ms) {
    vertx.timer(ms).await();
    Reply.json(ctx, 200, Bodies.slept(ms));
  }

  @Override
  protected void redis(RoutingContext ctx) {
    Reply.json(ctx, 200, backends.redisValues().await());
  }

  @Override
  protected void dbRead(RoutingContext ctx, int id) {
    JsonObject item = backends.item(id).await();
    replyItem(ctx, item);
  }

  @Override
  protected void dbWrite(RoutingContext ctx, Bodies.NewItem item) {
    long id = backends.insert(item).await();
    Reply.json(ctx, 201, Bodies.created(id));
  }
}
