package bench;

import bench.shared.Contract;
import bench.shared.Primes;

import java.util.List;

import org.jboss.resteasy.reactive.RestHeader;
import org.jboss.resteasy.reactive.RestQuery;
import org.jboss.resteasy.reactive.RestResponse;

import bench.Payloads.Created;
import bench.shared.Item;
import bench.Payloads.Message;
import bench.Payloads.NewItem;
import bench.Payloads.PrimeCount;
import bench.Payloads.Slept;
import io.quarkus.resteasy.reactive.server.EndpointDisabled;
import io.smallrye.common.annotation.NonBlocking;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

/**
 * The {@code reactive} variant: every method runs on the Vert.x event loop (@NonBlocking), I/O returns a
 * Uni from the reactive Redis and MySQL clients, sleep is a Vert.x timer, and CPU work runs inline.
 * Served only when the active profile sets bench.serve.reactive (see application.properties).
 */
@Path("/")
@NonBlocking
@EndpointDisabled(name = "bench.serve.reactive", stringValue = "false", disableIfMissing = true)
public class ReactiveResource {
    private final ReactiveBackends backends;
    private final Downstream downstream;
    private final Vertx vertx;

    ReactiveResource(ReactiveBackends backends, Downstream downstream, Vertx vertx) {
        this.backends = backends;
        this.downstream = downstream;
        this.vertx = vertx;
    }

    @GET
    @Path("plaintext")
    @Produces(MediaType.TEXT_PLAIN)
    public RestResponse<String> plaintext(@RestHeader(Replies.REPORT_THREAD) String reportThread) {
        return Replies.ok(Contract.HELLO, reportThread);
    }

    @GET
    @Path("json")
    @Produces(MediaType.APPLICATION_JSON)
    public RestResponse<Message> json(@RestHeader(Replies.REPORT_THREAD) String reportThread) {
        return Replies.ok(new Message(Contract.HELLO), reportThread);
    }

    @GET
    @Path("sleep")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<RestResponse<Slept>> sleep(@RestQuery String ms, @RestHeader(Replies.REPORT_THREAD) String reportThread) {
        int millis = Params.sleepMs(ms);
        Uni<Void> wait = millis == 0
                ? Uni.createFrom().voidItem() // Vert.x refuses timers below 1 ms
                : Uni.createFrom().emitter(e -> vertx.setTimer(millis, id -> e.complete(null)));
        return wait.map(ignored -> Replies.ok(new Slept(millis), reportThread));
    }

    @GET
    @Path("cpu")
    @Produces(MediaType.APPLICATION_JSON)
    public RestResponse<PrimeCount> cpu(@RestQuery String n, @RestHeader(Replies.REPORT_THREAD) String reportThread) {
        int limit = Params.primesN(n);
        return Replies.ok(new PrimeCount(limit, Primes.count(limit)), reportThread);
    }

    @GET
    @Path("redis")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<RestResponse<List<String>>> redis(@RestHeader(Replies.REPORT_THREAD) String reportThread) {
        return backends.redisValues().map(values -> Replies.ok(values, reportThread));
    }

    @GET
    @Path("db")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<RestResponse<Item>> read(@RestQuery String id, @RestHeader(Replies.REPORT_THREAD) String reportThread) {
        return backends.item(Params.itemId(id)).map(item -> item == null
                ? Replies.<Item> notFound(reportThread)
                : Replies.ok(item, reportThread));
    }

    @POST
    @Path("db")
    @Consumes(MediaType.APPLICATION_JSON)
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<RestResponse<Created>> create(NewItem item, @RestHeader(Replies.REPORT_THREAD) String reportThread) {
        return backends.insert(item).map(id -> Replies.created(new Created(id), reportThread));
    }

    /**
     * All calls sent at once (Uni.join), each a Uni of the REST client; the bodies combined in the map that follows
     * the last reply, on the event loop. A failed call answers 504 or 502 (Downstream.failed).
     */
    @GET
    @Path("fan-out")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<RestResponse<Object>> fanOut(@RestQuery String calls, @RestHeader(Replies.REPORT_THREAD) String reportThread) {
        int n = Params.fanOutCalls(calls);
        return downstream.fanOut(n)
                .map(bodies -> Replies.<Object> ok(bodies, reportThread))
                .onFailure().recoverWithItem(failure -> Downstream.failed(failure, n, reportThread));
    }

    /** GET item:<id>; on a miss the SELECT, then SET ... EX; X-Thread names the thread that had Redis's (last) answer. */
    @GET
    @Path("cache-aside")
    @Produces(MediaType.APPLICATION_JSON)
    public Uni<RestResponse<String>> cacheAside(@RestQuery String id, @RestHeader(Replies.REPORT_THREAD) String reportThread) {
        int key = Params.itemId(id);
        return backends.cached(key).flatMap(hit -> hit != null
                ? Uni.createFrom().item(Replies.ok(hit, reportThread))
                : backends.item(key).flatMap(item -> item == null
                        ? Uni.createFrom().item(Replies.<String> notFound(reportThread))
                        : backends.cache(item).map(text -> Replies.ok(text, reportThread))));
    }
}
