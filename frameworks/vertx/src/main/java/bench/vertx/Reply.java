package bench.vertx;

import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RoutingContext;

/** Writes responses; every variant replies on the thread that did the work, so that thread is reported. */
final class Reply {

  private static final String REPORT_THREAD = "X-Report-Thread";
  private static final String THREAD = "X-Thread";

  private Reply() {}

  static void text(RoutingContext ctx, String body) {
    response(ctx, 200).putHeader(HttpHeaders.CONTENT_TYPE, "text/plain").end(body);
  }

  /** A JSON object or array, serialised by Vert.x's Json codec (Jackson's streaming generator). */
  static void json(RoutingContext ctx, int status, Object body) {
    response(ctx, status);
    ctx.json(body);
  }

  /** JSON text answered as it is, unparsed (cache-aside's hit: the row's JSON as Redis holds it). */
  static void jsonText(RoutingContext ctx, String json) {
    response(ctx, 200).putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(json);
  }

  static void status(RoutingContext ctx, int status) {
    response(ctx, status).end();
  }

  private static HttpServerResponse response(RoutingContext ctx, int status) {
    HttpServerResponse response = ctx.response().setStatusCode(status);
    if (ctx.request().headers().contains(REPORT_THREAD)) {
      response.putHeader(THREAD, Thread.currentThread().toString());
    }
    return response;
  }
}
