package bench.vertx;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.List;

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

  @Override
  protected void fanOut(RoutingContext ctx, int calls) {
    // Every call is started before the virtual thread parks on Future.all; await throws the
    // first call's failure. The bodies are combined here, on the virtual thread.
    List<JsonObject> bodies;
    try {
      bodies = Future.all(backends.downstreamCalls(calls)).await().list();
    } catch (Exception failure) {
      replyDownstreamFailure(ctx, failure);
      return;
    }
    Reply.json(ctx, 200, Bodies.fanOut(bodies));
  }

  @Override
  protected void cacheAside(RoutingContext ctx, int id) {
    String json = backends.cachedItem(id).await();
    if (json == null) {
      JsonObject item = backends.item(id).await();
      if (item == null) {
        Reply.status(ctx, 404);
        return;
      }
      json = item.encode();
      backends.cacheItem(id, json).await();
    }
    Reply.jsonText(ctx, json);
  }
}
