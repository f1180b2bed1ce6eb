package bench.undertow;

import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import io.undertow.util.HttpString;
import tools.jackson.databind.json.JsonMapper;

import java.nio.ByteBuffer;

/** Writes responses with Undertow's async Sender, which is safe from any one thread at a time. */
final class Responses {
    static final JsonMapper JSON = JsonMapper.builder().build();

    private static final HttpString REPORT_THREAD = new HttpString("X-Report-Thread");
    private static final HttpString THREAD = new HttpString("X-Thread");

    private Responses() {
    }

    static void text(HttpServerExchange exchange, String body) {
        reportThread(exchange);
        exchange.getResponseHeaders().put(Headers.CONTENT_TYPE, "text/plain");
        exchange.getResponseSender().send(body);
    }

    /** Serialises {@code body} with Jackson; the Sender sets Content-Length from the buffer. */
    static void json(HttpServerExchange exchange, int status, Object body) {
        jsonBytes(exchange, status, JSON.writeValueAsBytes(body));
    }

    /** JSON already written: cache-aside's row as it was serialised for the cache, or the cached text. */
    static void jsonBytes(HttpServerExchange exchange, int status, byte[] bytes) {
        reportThread(exchange);
        exchange.setStatusCode(status);
        exchange.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        exchange.getResponseSender().send(ByteBuffer.wrap(bytes));
    }

    static void status(HttpServerExchange exchange, int status) {
        exchange.setStatusCode(status);
        exchange.endExchange();
    }

    /**
     * Called on the thread that did the scenario's work, so that it is the one named. The first call
     * wins: cache-aside names the thread that had Redis's answer before a miss moves on to JDBC.
     */
    static void reportThread(HttpServerExchange exchange) {
        if (exchange.getRequestHeaders().contains(REPORT_THREAD) && !exchange.getResponseHeaders().contains(THREAD)) {
            exchange.getResponseHeaders().put(THREAD, Thread.currentThread().toString());
        }
    }
}
