package bench.undertow;

import java.util.Locale;

/** The concurrency model, chosen at start-up by the system property {@code bench.variant}. */
enum Variant {
    /** Blocking work on Undertow's XNIO worker pool. */
    WORKER,
    /** Blocking work on a new virtual thread per request. */
    VIRTUAL,
    /** Sleep on an XNIO timer and Redis through Lettuce's async API, both on the I/O thread. */
    NONBLOCKING;

    static Variant fromSystemProperty() {
        String name = System.getProperty("bench.variant", "worker");
        try {
            return valueOf(name.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown bench.variant '" + name + "' (worker, virtual, nonblocking)", e);
        }
    }

    String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
