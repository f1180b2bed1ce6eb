package bench;

import bench.shared.Contract;
import bench.shared.Primes;

import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

import org.jboss.resteasy.reactive.RestHeader;
import org.jboss.resteasy.reactive.RestQuery;
import org.jboss.resteasy.reactive.RestResponse;

import com.fasterxml.jackson.core.JsonProcessingException;

import bench.Payloads.Created;
import bench.shared.Item;
import bench.Payloads.Message;
import bench.Payloads.NewItem;
import bench.Payloads.PrimeCount;
import bench.Payloads.Slept;
import io.quarkus.resteasy.reactive.server.EndpointDisabled;
import io.smallrye.common.annotation.RunOnVirtualThread;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

/**
 * The {@code virtual} variant: the methods of BlockingResource, each request on a new virtual thread
 * (quarkus-virtual-thread-N), which the same blocking calls park instead of blocking a carrier thread.
 */
@Path("/")
@RunOnVirtualThread
@EndpointDisabled(name = "bench.serve.virtual", stringValue = "false", disableIfMissing = true)
public class VirtualResource {
    private final BlockingBackends backends;
    private final Downstream downstream;

    VirtualResource(BlockingBackends backends, Downstream downstream) {
        this.backends = backends;
        this.downstream = downstream;
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
    public RestResponse<Slept> sleep(@RestQuery String ms, @RestHeader(Replies.REPORT_THREAD) String reportThread)
            throws InterruptedException {
        int millis = Params.sleepMs(ms);
        Thread.sleep(millis);
        return Replies.ok(new Slept(millis), reportThread);
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
    public RestResponse<List<String>> redis(@RestHeader(Replies.REPORT_THREAD) String reportThread) {
        return Replies.ok(backends.redisValues(), reportThread);
    }

    @GET
    @Path("db")
    @Produces(MediaType.APPLICATION_JSON)
    public RestResponse<Item> read(@RestQuery String id, @RestHeader(Replies.REPORT_THREAD) String reportThread)
            throws SQLException {
        return backends.item(Params.itemId(id))
                .map(item -> Replies.ok(item, reportThread))
                .orElseGet(() -> Replies.notFound(reportThread));
    }

    @POST
    @Path("db")
    @Consumes(MediaType.APPLICATION_JSON)
    @Produces(MediaType.APPLICATION_JSON)
    public RestResponse<Created> create(NewItem item, @RestHeader(Replies.REPORT_THREAD) String reportThread)
            throws SQLException {
        return Replies.created(new Created(backends.insert(item)), reportThread);
    }

    /**
     * Each call a blocking REST client call on a virtual thread of its own, all started before this virtual
     * thread parks to wait for them; the bodies combined here.
     * Answers 504 or 502 when a call failed (Downstream.failed).
     */
    @GET
    @Path("fan-out")
    @Produces(MediaType.APPLICATION_JSON)
    public RestResponse<Object> fanOut(@RestQuery String calls, @RestHeader(Replies.REPORT_THREAD) String reportThread) {
        int n = Params.fanOutCalls(calls);
        try {
            return Replies.ok(downstream.fanOutOnVirtualThreads(n), reportThread);
        } catch (Exception failure) {
            return Downstream.failed(failure, n, reportThread);
        }
    }

    /** GET item:<id>; on a miss the SELECT, then SET ... EX; all on this thread. */
    @GET
    @Path("cache-aside")
    @Produces(MediaType.APPLICATION_JSON)
    public RestResponse<String> cacheAside(@RestQuery String id, @RestHeader(Replies.REPORT_THREAD) String reportThread)
            throws SQLException, JsonProcessingException {
        Optional<String> item = backends.cacheAside(Params.itemId(id));
        return item.isPresent() ? Replies.ok(item.get(), reportThread) : Replies.notFound(reportThread);
    }
}
