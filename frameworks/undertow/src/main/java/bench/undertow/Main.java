package bench.undertow;

import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.server.DefaultByteBufferPool;
import io.undertow.server.HttpHandler;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** Starts plain Undertow (no servlet layer) with the variant named by {@code -Dbench.variant}. */
public final class Main {
    /** The contract's size for a pool of platform threads that runs blocking handlers (CONTRACT.md). */
    private static final int BLOCKING_WORKERS = 200;

    private Main() {
    }

    public static void main(String[] args) {
        Variant variant = Variant.fromSystemProperty();
        int port = Integer.parseInt(env("PORT", "8080"));
        String bindAddress = env("BIND_ADDRESS", "127.0.0.1");

        ItemStore items = new ItemStore(env("DB_HOST", "127.0.0.1"), env("DB_PORT", "3306"), env("DB_NAME", "bench"),
                env("DB_USER", "bench"), env("DB_PASSWORD", ""), Integer.parseInt(env("DB_POOL_SIZE", "16")));
        RedisValues redis = new RedisValues(env("REDIS_HOST", "127.0.0.1"),
                Integer.parseInt(env("REDIS_PORT", "6379")), env("REDIS_PASSWORD", ""));
        Downstream downstream = new Downstream(env("DOWNSTREAM_URL", "http://127.0.0.1:8081"),
                Integer.parseInt(env("DOWNSTREAM_POOL_SIZE", "512")));
        long cacheTtlSeconds = Long.parseLong(env("CACHE_TTL_S", "10"));

        // The virtual variant hands blocking work to a virtual thread per request; the others
        // keep Undertow's default, the XNIO worker pool (null tells dispatch() to use it).
        ExecutorService virtualThreads = variant == Variant.VIRTUAL ? Executors.newVirtualThreadPerTaskExecutor() : null;
        Endpoints endpoints = new Endpoints(items.items(), redis, downstream, cacheTtlSeconds, virtualThreads);

        boolean nonBlocking = variant == Variant.NONBLOCKING;
        HttpHandler routes = Handlers.routing()
                .get("/plaintext", endpoints::plaintext)
                .get("/json", endpoints::json)
                .get("/sleep", nonBlocking ? endpoints::sleepOnTimer : endpoints::sleep)
                .get("/cpu", endpoints::cpu)
                .get("/redis", nonBlocking ? endpoints::redisAsync : endpoints::redis)
                .get("/db", endpoints::dbRead)
                .get("/fan-out", switch (variant) {
                    case WORKER -> endpoints::fanOut;
                    case VIRTUAL -> endpoints::fanOutVirtual;
                    case NONBLOCKING -> endpoints::fanOutAsync;
                })
                .get("/cache-aside", nonBlocking ? endpoints::cacheAsideAsync : endpoints::cacheAside)
                .post("/db", endpoints::dbWrite);

        // I/O threads stay at Undertow's default (one per CPU, at least 2). The worker pool runs the
        // blocking handlers, so it takes the contract's size for such a pool, Tomcat's 200: Undertow's
        // default of 8 per I/O thread (16 here) held /sleep?ms=100 to 160 requests a second.
        Undertow.Builder builder = Undertow.builder()
                .addHttpListener(port, bindAddress)
                .setWorkerThreads(BLOCKING_WORKERS)
                .setHandler(routes);
        if (virtualThreads != null) {
            builder.setByteBufferPool(bufferPoolWithoutThreadCache());
        }
        Undertow server = builder.build();
        server.start();

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.stop();
            if (virtualThreads != null) {
                virtualThreads.close();
            }
            redis.close();
            items.close();
        }, "shutdown"));
        System.out.printf("undertow variant=%s listening on %s:%d%n", variant.label(), bindAddress, port);
    }

    /**
     * Undertow's default pool (direct buffers of 16 KiB less 20 bytes, as its builder picks for a
     * heap of 128 MiB or more) without the per-thread cache. The cache is kept per thread and
     * given back only when the thread's cache object is finalized; with a new virtual thread per
     * request, every request pins a direct buffer until a collection that a 512 MiB heap rarely
     * needs; a run at 256 connections of /sleep was reported to die of it (OutOfMemoryError: Cannot
     * reserve 16364 bytes of direct buffer memory). UNDERTOW-2389 and Spring Boot's report
     * spring-projects/spring-boot#39812 describe the same leak.
     */
    private static DefaultByteBufferPool bufferPoolWithoutThreadCache() {
        return new DefaultByteBufferPool(true, 16 * 1024 - 20, -1, 0);
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }
}
