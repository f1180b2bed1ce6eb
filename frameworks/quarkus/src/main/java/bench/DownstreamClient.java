package bench;

import org.eclipse.microprofile.rest.client.annotation.RegisterProvider;
import org.eclipse.microprofile.rest.client.inject.RegisterRestClient;
import org.jboss.resteasy.reactive.RestResponse;

import com.fasterxml.jackson.databind.JsonNode;

import io.smallrye.mutiny.Uni;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;

/**
 * The downstream service of fan-out (CONTRACT.md): {@code GET {DOWNSTREAM_URL}/call?i=K}, through the Quarkus
 * REST Client (quarkus-rest-client-jackson), its URL, pool and timeouts under {@code quarkus.rest-client.downstream}
 * in application.properties. The body is parsed by Jackson into a tree, so a body that is not JSON fails the call.
 * RestResponse rather than the bare body, so that a 2xx or 3xx other than 200 is seen (4xx and 5xx fail the call
 * through the client's default exception mapper).
 */
@RegisterRestClient(configKey = "downstream")
@RegisterProvider(DownstreamHttpOptions.class) // the unbounded wait queue for a connection
@Path("/call")
@Produces(MediaType.APPLICATION_JSON)
public interface DownstreamClient {

    /** reactive: a lazy Uni, sent when subscribed; it completes on the Vert.x event loop of the caller's context. */
    @GET
    Uni<RestResponse<JsonNode>> callAsync(@QueryParam("i") int i);

    /** blocking and virtual: blocks the calling (non-event-loop) thread until the response is read. */
    @GET
    RestResponse<JsonNode> call(@QueryParam("i") int i);
}
