package bench;

import bench.shared.HttpDate;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

/**
 * Quarkus's HTTP server (Vert.x) sends no Date header of its own; every response carries one
 * (CONTRACT.md). A route in front of every other one, as the Quarkus guide on Vert.x routes shows
 * (observing the Router at start-up), sets it on the event loop before REST dispatches the request.
 */
@ApplicationScoped
public class DateHeader {
    void install(@Observes Router router) {
        router.route().order(Integer.MIN_VALUE).handler(ctx -> {
            ctx.response().putHeader(HttpHeaders.DATE, HttpDate.now());
            ctx.next();
        });
    }
}
