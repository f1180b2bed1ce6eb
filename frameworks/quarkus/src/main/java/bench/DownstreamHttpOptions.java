package bench;

import io.vertx.core.http.HttpClientOptions;
import jakarta.ws.rs.ext.ContextResolver;

/**
 * The Vert.x HTTP client options the REST client to the downstream starts from (registered on DownstreamClient;
 * the REST client reads HttpClientOptions from a ContextResolver, then applies its quarkus.rest-client.downstream.*
 * settings, among them the pool size, on top). Here only what those settings cannot say: a call that finds all
 * DOWNSTREAM_POOL_SIZE connections busy waits in an unbounded queue (CONTRACT.md, "downstream calls in flight"),
 * its wait counted in its 5 s. -1 is Vert.x's default too; it is set so that the limit is stated, not inherited.
 */
public class DownstreamHttpOptions implements ContextResolver<HttpClientOptions> {
    @Override
    public HttpClientOptions getContext(Class<?> type) {
        return new HttpClientOptions().setMaxWaitQueueSize(-1);
    }
}
