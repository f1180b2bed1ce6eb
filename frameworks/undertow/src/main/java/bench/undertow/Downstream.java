package bench.undertow;

import bench.shared.Contract;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * fan-out's calls to the downstream service through the JDK's java.net.http.HttpClient (Undertow has
 * no HTTP client of its own), HTTP/1.1 with keep-alive. The client has no limit on its connections:
 * a request that finds no idle one opens another. So it is held to DOWNSTREAM_POOL_SIZE calls in
 * flight, hence connections, by a semaphore in front of it, whose wait queue is unbounded (CONTRACT.md,
 * "downstream calls in flight"). Each call has {@link Contract#DOWNSTREAM_TIMEOUT_MS} from the moment
 * the handler starts it to its complete body, the wait for a permit included. HttpRequest.timeout is
 * not that: the client cancels its timer once the response headers arrive (MultiExchange.cancelTimer),
 * so a body that never comes would wait for ever; every call is wrapped instead (orTimeout, or the
 * waiting thread's Future.get with the time left).
 */
final class Downstream {
    /** Why a fan-out failed: the two answers of the contract. */
    enum Outcome {
        TIMED_OUT(504, Contract.DOWNSTREAM_TIMED_OUT),
        FAILED(502, Contract.DOWNSTREAM_FAILED);

        final int status;
        final String error;

        Outcome(int status, String error) {
            this.status = status;
            this.error = error;
        }
    }

    /** A call's answer that is not one: a status other than 200, or a body that is not JSON. */
    static final class BadAnswer extends RuntimeException {
        BadAnswer(String message) {
            super(message, null, false, false);
        }
    }

    static final long TIMEOUT_NANOS = TimeUnit.MILLISECONDS.toNanos(Contract.DOWNSTREAM_TIMEOUT_MS);
    private static final int MAX_CALLS = 16;
    private static final Logger LOG = oneLineLogger();

    private final HttpClient client;
    /** GET {DOWNSTREAM_URL}/call?i=K for K = 1..16, built once: an HttpRequest is immutable and reusable. */
    private final HttpRequest[] requests = new HttpRequest[MAX_CALLS + 1];
    /** The limit for calls that block a thread each (the virtual variant): FIFO, waiters unbounded. */
    private final Semaphore blockingPermits;
    /** The same limit for sendAsync (the worker and nonblocking variants): no thread waits for it. */
    private final AsyncPermits asyncPermits;

    Downstream(String baseUrl, int poolSize) {
        // The client's idle keep-alive cache: unbounded by default (0). At most poolSize calls are in
        // flight, so at most poolSize connections busy; a call that starts in the instant between
        // one call's permit coming back and its connection going back to the cache may still open
        // one more, and this bound closes the oldest idle one then, so that no more than poolSize
        // are kept. Read once, when the client's ConnectionPool class loads: set before the client.
        System.setProperty("jdk.httpclient.connectionPoolSize", Integer.toString(poolSize));
        // How long an idle connection is kept: the JDK's default, 30 s, written down. It is under the
        // downstream's keepalive_timeout (nginx's default 75 s; the harness's nginx keeps 300 s), so
        // that the client, not the server, closes an idle connection, and no call is sent on one the
        // server is closing.
        System.setProperty("jdk.httpclient.keepalive.timeout", "30");
        this.client = HttpClient.newBuilder()
                // The contract's HTTP/1.1 with keep-alive; the default, HTTP/2, would send each new
                // connection's first request with an h2c Upgrade header.
                .version(HttpClient.Version.HTTP_1_1)
                // Straight to the downstream on 127.0.0.1, whatever proxy properties the JVM has.
                .proxy(HttpClient.Builder.NO_PROXY)
                .followRedirects(HttpClient.Redirect.NEVER)
                // No wait may outlast the call's own 5 s; the wrap below ends the call at its deadline anyway.
                .connectTimeout(Duration.ofMillis(Contract.DOWNSTREAM_TIMEOUT_MS))
                // Left at its default: a cached thread pool without a bound (HttpClient.Builder.executor),
                // so no thread pool in front of the client is smaller than DOWNSTREAM_POOL_SIZE.
                .build();
        for (int i = 1; i <= MAX_CALLS; i++) {
            requests[i] = HttpRequest.newBuilder(URI.create(baseUrl + Contract.DOWNSTREAM_CALL + i)).GET().build();
        }
        // Fair: permits go to waiters in arrival order, a queue with no bound on its length.
        this.blockingPermits = new Semaphore(poolSize, true);
        this.asyncPermits = new AsyncPermits(poolSize);
    }

    // ---- sendAsync: the worker variant waits for the result on its XNIO worker, nonblocking does not wait

    /**
     * Starts every call at once and completes with their bodies in the order of i (CompletableFuture.allOf),
     * or with the first failure, which cancels the calls still running (the client aborts their exchanges).
     */
    CompletableFuture<List<JsonNode>> fanOutAsync(int calls, long deadline) {
        List<CompletableFuture<JsonNode>> started = new ArrayList<>(calls);
        for (int i = 1; i <= calls; i++) {
            started.add(callAsync(i, deadline));
        }
        CompletableFuture<List<JsonNode>> all = CompletableFuture.allOf(started.toArray(CompletableFuture[]::new))
                .thenApply(done -> started.stream().map(CompletableFuture::join).toList());
        // allOf waits for every call even after one has failed: the first failure ends the request now.
        for (CompletableFuture<JsonNode> call : started) {
            call.whenComplete((body, failure) -> {
                if (failure != null) {
                    all.completeExceptionally(failure);
                }
            });
        }
        all.whenComplete((bodies, failure) -> {
            if (failure != null) {
                started.forEach(call -> call.cancel(true));
            }
        });
        return all;
    }

    private CompletableFuture<JsonNode> callAsync(int i, long deadline) {
        CompletableFuture<JsonNode> call = new CompletableFuture<>();
        CompletableFuture<Void> permit = asyncPermits.acquire();
        permit.thenRun(() -> {
            if (call.isDone()) {   // timed out or cancelled while it waited: the permit goes back unused
                asyncPermits.release();
                return;
            }
            CompletableFuture<HttpResponse<byte[]>> sent = client.sendAsync(requests[i], BodyHandlers.ofByteArray());
            sent.whenComplete((response, failure) -> {
                asyncPermits.release();
                if (failure != null) {
                    call.completeExceptionally(failure);
                    return;
                }
                try {
                    call.complete(body(response));
                } catch (RuntimeException bad) {
                    call.completeExceptionally(bad);
                }
            });
            // A timeout, or a sibling's failure, aborts the exchange: the client closes its connection.
            call.whenComplete((body, failure) -> {
                if (failure != null) {
                    sent.cancel(true);
                }
            });
        });
        call.orTimeout(remaining(deadline), TimeUnit.NANOSECONDS);
        // A call that ends while it still waits for a permit gives up its place in the queue.
        call.whenComplete((body, failure) -> {
            if (failure != null) {
                permit.cancel(false);
            }
        });
        return call;
    }

    // ---- blocking: the virtual variant calls this on a virtual thread per call

    /** One call on the calling thread; an interrupt (the request gave up) aborts the exchange. */
    JsonNode call(int i, long deadline) throws Exception {
        if (!blockingPermits.tryAcquire(remaining(deadline), TimeUnit.NANOSECONDS)) {
            throw new TimeoutException("no connection to the downstream free within the call's time");
        }
        try {
            return body(client.send(requests[i], BodyHandlers.ofByteArray()));
        } finally {
            blockingPermits.release();
        }
    }

    // ---- shared

    static long remaining(long deadline) {
        return Math.max(0, deadline - System.nanoTime());
    }

    private static JsonNode body(HttpResponse<byte[]> response) {
        if (response.statusCode() != 200) {
            throw new BadAnswer("status " + response.statusCode());
        }
        JsonNode body;
        try {
            body = Responses.JSON.readTree(response.body());
        } catch (JacksonException e) {
            throw new BadAnswer("a body that is not JSON");
        }
        if (body == null || body.isMissingNode()) {
            throw new BadAnswer("an empty body");
        }
        return body;
    }

    /** A timeout of a call or of its wait for a permit is a 504; anything else (refused, reset, a bad answer) a 502. */
    static Outcome outcome(Throwable failure) {
        Throwable cause = unwrap(failure);
        return cause instanceof TimeoutException || cause instanceof HttpTimeoutException
                ? Outcome.TIMED_OUT : Outcome.FAILED;
    }

    /** The request's one log line: what failed, without a stack trace. */
    static Outcome logged(Throwable failure) {
        Outcome outcome = outcome(failure);
        Throwable cause = unwrap(failure);
        LOG.warning(() -> "fan-out answered " + outcome.status + ": " + cause.getClass().getSimpleName()
                + (cause.getMessage() == null ? "" : " " + cause.getMessage()));
        return outcome;
    }

    private static Throwable unwrap(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    /** A logger of its own that writes each record on one line (java.util.logging's default takes two). */
    private static Logger oneLineLogger() {
        Logger logger = Logger.getLogger("bench.undertow.downstream");
        ConsoleHandler handler = new ConsoleHandler();
        handler.setFormatter(new Formatter() {
            @Override
            public String format(LogRecord record) {
                return record.getInstant() + " " + record.getLevel() + " " + record.getLoggerName() + ": "
                        + record.getMessage() + System.lineSeparator();
            }
        });
        logger.setUseParentHandlers(false);
        logger.addHandler(handler);
        logger.setLevel(Level.INFO);
        return logger;
    }

    /**
     * A semaphore for calls that no thread waits for: a permit is a future, completed at once when
     * one is free, else queued (first come, first served, no bound on the queue) until a call ends.
     * A waiter that gave up (its call timed out, or a sibling failed) is skipped when its turn comes.
     */
    static final class AsyncPermits {
        private final ArrayDeque<CompletableFuture<Void>> waiting = new ArrayDeque<>();
        private int free;

        AsyncPermits(int permits) {
            this.free = permits;
        }

        CompletableFuture<Void> acquire() {
            synchronized (this) {
                if (free > 0) {
                    free--;
                    return CompletableFuture.completedFuture(null);
                }
                CompletableFuture<Void> waiter = new CompletableFuture<>();
                waiting.add(waiter);
                return waiter;
            }
        }

        void release() {
            while (true) {
                CompletableFuture<Void> next;
                synchronized (this) {
                    next = waiting.poll();
                    if (next == null) {
                        free++;
                        return;
                    }
                }
                // Completed outside the lock: it starts that waiter's call on this thread.
                if (next.complete(null)) {
                    return;
                }
            }
        }
    }
}
