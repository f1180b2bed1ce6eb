package bench.undertow;

import bench.shared.Contract;
import bench.shared.Item;
import bench.shared.JdbcItems;
import bench.shared.Primes;

import io.undertow.server.Connectors;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.SameThreadExecutor;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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

    record Failure(String error) {
    }

    private static final int NAME_MAX = 64;

    private final JdbcItems items;
    private final RedisValues redis;
    private final Downstream downstream;
    /** cache-aside's time to live of a cached item (CACHE_TTL_S). */
    private final long cacheTtlSeconds;
    /** Where blocking work runs; null selects Undertow's default, the connection's XNIO worker pool. */
    private final ExecutorService blockingExecutor;

    Endpoints(JdbcItems items, RedisValues redis, Downstream downstream, long cacheTtlSeconds,
            ExecutorService blockingExecutor) {
        this.items = items;
        this.redis = redis;
        this.downstream = downstream;
        this.cacheTtlSeconds = cacheTtlSeconds;
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

    /**
     * fan-out on a blocking thread (the worker variant's XNIO worker): the calls go out with sendAsync,
     * all started before this thread waits, and this thread waits for all of them and combines them.
     */
    void fanOut(HttpServerExchange exchange) {
        int calls = Contract.fanOutCalls(param(exchange, "calls"));
        if (calls == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        long deadline = System.nanoTime() + Downstream.TIMEOUT_NANOS;
        offload(exchange, blocking -> {
            var all = downstream.fanOutAsync(calls, deadline);
            List<JsonNode> bodies;
            try {
                // Each call ends itself at the deadline (orTimeout); this wait is a guard only.
                bodies = all.get(Downstream.remaining(deadline) + TimeUnit.SECONDS.toNanos(1), TimeUnit.NANOSECONDS);
            } catch (Exception failure) {
                all.cancel(true);
                failed(blocking, failure);
                return;
            }
            Responses.json(blocking, 200, bodies);
        });
    }

    /**
     * fan-out with nothing blocked: the calls go out with sendAsync from the I/O thread, and when
     * the last has answered (CompletableFuture.allOf) the bodies are handed back to the exchange's
     * I/O thread, which combines them and answers.
     */
    void fanOutAsync(HttpServerExchange exchange) {
        int calls = Contract.fanOutCalls(param(exchange, "calls"));
        if (calls == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        long deadline = System.nanoTime() + Downstream.TIMEOUT_NANOS;
        exchange.dispatch(SameThreadExecutor.INSTANCE, () -> downstream.fanOutAsync(calls, deadline)
                .whenComplete((bodies, failure) -> exchange.dispatch(exchange.getIoThread(), (HttpHandler) io -> {
                    if (failure != null) {
                        failed(io, failure);
                    } else {
                        Responses.json(io, 200, bodies);
                    }
                })));
    }

    /**
     * fan-out on the virtual variant: a virtual thread per call, each blocking in the client's send;
     * this request's own virtual thread takes them as they finish, so that the first failure ends
     * the request at once, and combines them. StructuredTaskScope would say the same, but it is a
     * preview API in JDK 25 (--enable-preview), so an executor of virtual threads does it.
     */
    void fanOutVirtual(HttpServerExchange exchange) {
        int calls = Contract.fanOutCalls(param(exchange, "calls"));
        if (calls == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        long deadline = System.nanoTime() + Downstream.TIMEOUT_NANOS;
        offload(exchange, blocking -> {
            CompletionService<JsonNode> finished = new ExecutorCompletionService<>(blockingExecutor);
            List<Future<JsonNode>> started = new ArrayList<>(calls);
            try {
                for (int i = 1; i <= calls; i++) {
                    int call = i;
                    started.add(finished.submit(() -> downstream.call(call, deadline)));
                }
                for (int done = 0; done < calls; done++) {
                    Future<JsonNode> next = finished.poll(Downstream.remaining(deadline), TimeUnit.NANOSECONDS);
                    if (next == null) {
                        throw new TimeoutException("downstream calls still running at the deadline");
                    }
                    next.get();   // a failed call ends the request here
                }
            } catch (Exception failure) {
                failed(blocking, failure);
                return;
            } finally {
                // Interrupts the calls still running: the client's send aborts their exchanges.
                started.forEach(call -> call.cancel(true));
            }
            Responses.json(blocking, 200, started.stream().map(Future::resultNow).toList());
        });
    }

    /** 504 or 502 with the contract's error, and the request's one log line. */
    private static void failed(HttpServerExchange exchange, Throwable failure) {
        Downstream.Outcome outcome = Downstream.logged(failure);
        Responses.json(exchange, outcome.status, new Failure(outcome.error));
    }

    /**
     * cache-aside on a blocking thread (a worker, or a virtual thread): GET; on a miss the SELECT
     * and SET ... EX, all with the same blocking clients as redis and db-read.
     */
    void cacheAside(HttpServerExchange exchange) {
        int id = Contract.itemId(param(exchange, "id"));
        if (id == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        offload(exchange, blocking -> {
            String key = Contract.cacheKey(id);
            String cached = redis.get(key);
            Responses.reportThread(blocking);   // the thread that had Redis's answer
            if (cached != null) {
                Responses.jsonBytes(blocking, 200, cached.getBytes(StandardCharsets.UTF_8));
                return;
            }
            Optional<Item> row = items.find(id);
            if (row.isEmpty()) {
                Responses.status(blocking, 404);
                return;
            }
            byte[] json = Responses.JSON.writeValueAsBytes(row.get());
            redis.set(key, new String(json, StandardCharsets.UTF_8), cacheTtlSeconds);
            Responses.jsonBytes(blocking, 200, json);
        });
    }

    /**
     * cache-aside without blocking where the clients allow it: GET through Lettuce's async API from
     * the I/O thread, its answer handed back to that I/O thread, which answers a hit. A miss needs
     * JDBC, which blocks, so the SELECT goes to the worker pool as db-read's does; the SET goes out
     * async from there, and the I/O thread answers once Redis has acknowledged it.
     */
    void cacheAsideAsync(HttpServerExchange exchange) {
        int id = Contract.itemId(param(exchange, "id"));
        if (id == INVALID) {
            Responses.status(exchange, 400);
            return;
        }
        String key = Contract.cacheKey(id);
        exchange.dispatch(SameThreadExecutor.INSTANCE, () -> redis.getAsync(key).whenComplete((cached, failure) ->
                exchange.dispatch(exchange.getIoThread(), (HttpHandler) io -> {
                    if (failure != null) {
                        throw new IllegalStateException("Redis GET failed", failure);
                    }
                    Responses.reportThread(io);   // the thread that had Redis's answer
                    if (cached != null) {
                        Responses.jsonBytes(io, 200, cached.getBytes(StandardCharsets.UTF_8));
                        return;
                    }
                    offload(io, blocking -> {
                        Optional<Item> row = items.find(id);
                        if (row.isEmpty()) {
                            Responses.status(blocking, 404);
                            return;
                        }
                        byte[] json = Responses.JSON.writeValueAsBytes(row.get());
                        // Keeps the exchange open when this handler returns; the reply comes from the I/O thread.
                        blocking.dispatch(SameThreadExecutor.INSTANCE, () -> redis
                                .setAsync(key, new String(json, StandardCharsets.UTF_8), cacheTtlSeconds)
                                .whenComplete((ok, setFailure) -> blocking.dispatch(blocking.getIoThread(),
                                        (HttpHandler) done -> {
                                            if (setFailure != null) {
                                                throw new IllegalStateException("Redis SET failed", setFailure);
                                            }
                                            Responses.jsonBytes(done, 200, json);
                                        })));
                    });
                })));
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
