package bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.eclipse.microprofile.rest.client.inject.RestClient;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.RestResponse;
import org.jboss.resteasy.reactive.RestResponse.Status;

import com.fasterxml.jackson.databind.JsonNode;

import bench.Payloads.DownstreamError;
import bench.shared.Contract;
import io.netty.channel.ConnectTimeoutException;
import io.smallrye.mutiny.Uni;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;

/**
 * fan-out's calls to the downstream service, one way per concurrency model, all through the one Quarkus REST
 * Client (DownstreamClient), and the contract's answer when a call fails.
 *
 * <ul>
 * <li>reactive: {@code calls} Unis joined with {@code Uni.join().all(..).andFailFast()}: all are subscribed (sent) at
 * once, the first failure cancels the others; each is bounded by {@code ifNoItem().after(5 s)}.</li>
 * <li>blocking: each call is a blocking client call on a thread of {@code downstream-call-N}, a pool of
 * DOWNSTREAM_POOL_SIZE platform threads (so that nothing in front of the client's DOWNSTREAM_POOL_SIZE connections is
 * smaller, CONTRACT.md), while the request's worker thread waits for them.</li>
 * <li>virtual: each call is a blocking client call on a virtual thread of its own (an executor of virtual threads:
 * StructuredTaskScope is still a preview API in JDK 25), while the request's virtual thread waits for them.</li>
 * </ul>
 *
 * Each call has Contract.DOWNSTREAM_TIMEOUT_MS from the moment the handler starts it (submits it, or subscribes to
 * it) to its parsed body, the wait for a pooled connection (and, blocking, for a pool thread) included. The client's
 * own read-timeout cannot be that bound (Vert.x applies it to the wait for a connection and to the silence after
 * the request, each), so the call is wrapped; the client's timeouts are set to the same 5 s as a backstop that closes
 * an abandoned call's connection.
 */
@Singleton
public class Downstream {
    private static final Logger LOG = Logger.getLogger(Downstream.class);
    private static final Duration TIMEOUT = Duration.ofMillis(Contract.DOWNSTREAM_TIMEOUT_MS);

    private final DownstreamClient client;
    private final ExecutorService platformThreads;
    private final ExecutorService virtualThreads;

    Downstream(@RestClient DownstreamClient client,
            @ConfigProperty(name = "quarkus.rest-client.downstream.connection-pool-size") int poolSize) {
        this.client = client;
        // blocking: as many threads as the client has connections (DOWNSTREAM_POOL_SIZE, the same property), started
        // on demand and retired after 60 s idle; calls beyond that wait in an unbounded queue, their wait counted in
        // their 5 s like the wait for a connection.
        ThreadPoolExecutor pool = new ThreadPoolExecutor(poolSize, poolSize, 60, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), Thread.ofPlatform().daemon(true).name("downstream-call-", 0).factory());
        pool.allowCoreThreadTimeOut(true);
        this.platformThreads = pool;
        // virtual: a new virtual thread per call, on the JDK's scheduler (the carriers the request's virtual thread uses)
        this.virtualThreads = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("downstream-call-", 0).factory());
    }

    @PreDestroy
    void stop() {
        platformThreads.shutdownNow();
        virtualThreads.shutdownNow();
    }

    /** reactive: the bodies in the order of i, or the first failure; completes on the event loop of the last reply. */
    Uni<List<JsonNode>> fanOut(int calls) {
        List<Uni<JsonNode>> each = new ArrayList<>(calls);
        for (int i = 1; i <= calls; i++) {
            each.add(client.callAsync(i).map(Downstream::body)
                    .ifNoItem().after(TIMEOUT).failWith(CallTimedOut::new));
        }
        return Uni.join().all(each).andFailFast();
    }

    /** blocking: each call on a thread of the platform pool; the caller blocks until all are in or one failed. */
    List<JsonNode> fanOutOnPlatformThreads(int calls) throws Exception {
        return await(calls, platformThreads);
    }

    /** virtual: each call on a virtual thread of its own; the caller (a virtual thread) parks until all are in. */
    List<JsonNode> fanOutOnVirtualThreads(int calls) throws Exception {
        return await(calls, virtualThreads);
    }

    /**
     * Starts every call, then takes them as they complete (so the first failure ends the wait at once), each within
     * the deadline of 5 s from its start. Calls still running when the request fails are cancelled: their threads
     * are interrupted, and the client's read timeout ends the HTTP exchange the blocking API cannot abort.
     */
    private List<JsonNode> await(int calls, ExecutorService executor) throws Exception {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        CompletionService<Reply> done = new ExecutorCompletionService<>(executor);
        List<Future<Reply>> started = new ArrayList<>(calls);
        try {
            for (int i = 1; i <= calls; i++) {
                int index = i;
                started.add(done.submit(() -> new Reply(index, body(client.call(index)))));
            }
            JsonNode[] bodies = new JsonNode[calls];
            for (int k = 0; k < calls; k++) {
                Future<Reply> next = done.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (next == null) {
                    throw new CallTimedOut();
                }
                Reply reply = next.get(); // ExecutionException: the call failed
                bodies[reply.index() - 1] = reply.body();
            }
            return Arrays.asList(bodies);
        } finally {
            for (Future<Reply> call : started) {
                call.cancel(true); // no-op for those done
            }
        }
    }

    private record Reply(int index, JsonNode body) {
    }

    /** A reply counts only with status 200 and a JSON body; 4xx and 5xx already failed in the client. */
    private static JsonNode body(RestResponse<JsonNode> response) {
        if (response.getStatus() != 200 || response.getEntity() == null) {
            throw new CallFailed("status " + response.getStatus() + (response.getEntity() == null ? ", no JSON body" : ""));
        }
        return response.getEntity();
    }

    /**
     * The contract's answer to a failed fan-out: 504 when a call timed out (the 5-s bound, or the client's own
     * connect or read timeout), 502 for anything else (refused, reset, a status other than 200, a body that is not
     * JSON). One log line, without a stack trace.
     */
    static RestResponse<Object> failed(Throwable failure, int calls, String reportThread) {
        boolean timedOut = timedOut(failure);
        String text = timedOut ? Contract.DOWNSTREAM_TIMED_OUT : Contract.DOWNSTREAM_FAILED;
        LOG.warnf("fan-out of %d calls: %s (%s)", calls, text, rootCause(failure));
        return Replies.status(timedOut ? Status.GATEWAY_TIMEOUT : Status.BAD_GATEWAY, new DownstreamError(text),
                reportThread);
    }

    private static boolean timedOut(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            // ours; Vert.x's (NoStackTraceTimeoutException: the client's read timeout, or the wait for a connection);
            // Netty's TCP connect timeout; Mutiny's, should any operator raise it
            if (t instanceof CallTimedOut || t instanceof TimeoutException || t instanceof ConnectTimeoutException
                    || t instanceof io.smallrye.mutiny.TimeoutException) {
                return true;
            }
        }
        return false;
    }

    private static String rootCause(Throwable failure) {
        Throwable t = failure;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.toString();
    }

    /** A call that took longer than Contract.DOWNSTREAM_TIMEOUT_MS; no stack trace, it is expected. */
    static final class CallTimedOut extends RuntimeException {
        CallTimedOut() {
            super("a call took longer than " + Contract.DOWNSTREAM_TIMEOUT_MS + " ms", null, false, false);
        }
    }

    /** A reply that the contract does not accept as a success. */
    static final class CallFailed extends RuntimeException {
        CallFailed(String message) {
            super(message, null, false, false);
        }
    }
}
