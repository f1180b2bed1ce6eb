package bench.undertow;

import bench.shared.Contract;
import bench.shared.JdbcItems;
import bench.shared.Primes;

import io.undertow.server.Connectors;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.SameThreadExecutor;
import tools.jackson.core.JacksonException;

import java.math.BigDecimal;
import java.util.Deque;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

import static bench.shared.Contract.INVALID;

/**
 * The contract's endpoints as plain HttpHandlers. Every handler starts on the XNIO I/O thread,
 * where nothing may block: cheap work (parameters, plaintext, json) is answered there, blocking
 * work is handed to {@link #offload}.
 */
final class Endpoints {
    record Message(String message) {
    }

    record Slept(long sleptMs) {
    }

    record PrimeCount(int n, int primes) {
    }

    record NewItem(String name, BigDecimal price) {
    }

    record Created(long id) {
    }

    private static final int NAME_MAX = 64;

    private final JdbcItems items;
    private final RedisValues redis;
    /** Where blocking work runs; null selects Undertow's default, the connection's XNIO worker pool. */
    private final Executor blockingExecutor;

    Endpoints(JdbcItems items, RedisValues redis, Executor blockingExecutor) {
        this.items = items;
        this.redis = redis;
        this.blockingExecutor = blockingExecutor;
    }

    void plaintext(HttpServerExchange exchange) {
        Responses.text(exchange, Contract.HELLO);
    }

    void json(HttpServerExchange exchange) {
        Responses.json(exchange, 200, new Message(Contract.HELLO));
    }

    void sleep(HttpServerExchange exchange) {
        int ms = Contract.sleepMs(param(exchange, "ms"));
        if (ms == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        offload(exchange, blocking -> {
            Thread.sleep(ms);
            Responses.json(blocking, 200, new Slept(ms));
        });
    }

    /** Waits on the I/O thread's own timer, so no thread is held while waiting. */
    void sleepOnTimer(HttpServerExchange exchange) {
        int ms = Contract.sleepMs(param(exchange, "ms"));
        if (ms == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        // Dispatching to SameThreadExecutor keeps the exchange open once this handler returns;
        // the timer task then runs on the same I/O thread, as a root handler so that a failure
        // still ends the exchange with a 500.
        exchange.dispatch(SameThreadExecutor.INSTANCE, () -> exchange.getIoThread().executeAfter(
                () -> Connectors.executeRootHandler(done -> Responses.json(done, 200, new Slept(ms)), exchange),
                ms, TimeUnit.MILLISECONDS));
    }

    void cpu(HttpServerExchange exchange) {
        int n = Contract.primesN(param(exchange, "n"));
        if (n == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        offload(exchange, blocking -> Responses.json(blocking, 200, new PrimeCount(n, Primes.count(n))));
    }

    void redis(HttpServerExchange exchange) {
        offload(exchange, blocking -> Responses.json(blocking, 200, redis.mget()));
    }

    /**
     * Sends MGET from the I/O thread and answers on that thread when the reply arrives: the
     * reply completes on Lettuce's event loop, which only hands the result back, so that the
     * exchange is written from its own I/O thread and Lettuce's thread is free for other replies.
     */
    void redisAsync(HttpServerExchange exchange) {
        exchange.dispatch(SameThreadExecutor.INSTANCE, () -> redis.mgetAsync().whenComplete((values, failure) ->
                exchange.dispatch(exchange.getIoThread(), (HttpHandler) done -> {
                    if (failure != null) {
                        throw new IllegalStateException("Redis MGET failed", failure);
                    }
                    Responses.json(done, 200, values);
                })));
    }

    void dbRead(HttpServerExchange exchange) {
        int id = Contract.itemId(param(exchange, "id"));
        if (id == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        offload(exchange, blocking -> items.find(id).ifPresentOrElse(
                item -> Responses.json(blocking, 200, item),
                () -> Responses.status(blocking, 404)));
    }

    /** Reads the body without blocking on the I/O thread, then inserts on a blocking thread. */
    void dbWrite(HttpServerExchange exchange) {
        exchange.getRequestReceiver().receiveFullBytes((received, body) -> {
            NewItem item = parse(body);
            if (item == null) {
                Responses.status(received, 400);
                return;
            }
            offload(received, blocking ->
                    Responses.json(blocking, 201, new Created(items.insert(item.name(), item.price()))));
        });
    }

    /** The first value of a query parameter, null when absent. */
    private static String param(HttpServerExchange exchange, String name) {
        Deque<String> values = exchange.getQueryParameters().get(name);
        return values == null || values.isEmpty() ? null : values.getFirst();
    }

    private static NewItem parse(byte[] body) {
        try {
            NewItem item = Responses.JSON.readValue(body, NewItem.class);
            boolean valid = item != null && item.name() != null && item.name().length() <= NAME_MAX
                    && item.price() != null;
            return valid ? item : null;
        } catch (JacksonException e) {
            return null;
        }
    }

    /**
     * Undertow's documented way to leave the I/O thread: the exchange is dispatched when this
     * call stack returns. The work answers through the async Sender, not blocking streams, so
     * it needs no startBlocking(): XNIO's blocking streams wait in a per-thread Selector, which
     * a virtual thread per request would create anew each time.
     */
    private void offload(HttpServerExchange exchange, HttpHandler work) {
        exchange.dispatch(blockingExecutor, work);
    }
}
