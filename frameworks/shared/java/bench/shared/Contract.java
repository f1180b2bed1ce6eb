package bench.shared;

import java.util.List;

/**
 * The contract's rules that are the same in every Java target (frameworks/CONTRACT.md): its query
 * parameters, the statements sent to MariaDB and the keys read from Redis, written once so that no
 * target parses or queries differently from the others. The Kotlin targets compile shared/kotlin's copy.
 */
public final class Contract {
    public static final String HELLO = "Hello, World!";
    public static final String SELECT_ITEM = "SELECT id, name, price FROM item WHERE id = ?";
    public static final String INSERT_ITEM = "INSERT INTO item (name, price) VALUES (?, ?)";
    public static final List<String> REDIS_KEYS = List.of("bench:1", "bench:2", "bench:3");
    /** fan-out: the downstream's path for call {@code i} (1-based), after DOWNSTREAM_URL. */
    public static final String DOWNSTREAM_CALL = "/call?i=";
    /** fan-out: a call's whole time, the wait for a pooled connection included, before the request answers 504. */
    public static final int DOWNSTREAM_TIMEOUT_MS = 5_000;
    public static final String DOWNSTREAM_TIMED_OUT = "downstream timed out";
    public static final String DOWNSTREAM_FAILED = "downstream failed";
    /** What a parameter reads as when the contract answers it with 400. */
    public static final int INVALID = -1;

    private Contract() {
    }

    public static int sleepMs(String raw) {
        return param(raw, 100, 60_000);
    }

    public static int primesN(String raw) {
        return param(raw, 20_000, 10_000_000);
    }

    /** Required: an absent id is a 400 like a malformed one; a well-formed id with no row is the caller's 404. */
    public static int itemId(String raw) {
        return param(raw, INVALID, Integer.MAX_VALUE);
    }

    /** fan-out's calls: 1 to 16, 3 when absent; 0 is a 400 like a malformed value. */
    public static int fanOutCalls(String raw) {
        int calls = param(raw, 3, 16);
        return calls == 0 ? INVALID : calls;
    }

    /** cache-aside's Redis key for an item. */
    public static String cacheKey(int id) {
        return "item:" + id;
    }

    /**
     * ASCII digits only, at most {@code max}: no sign, no spaces, no other script's digits, which
     * Integer.parseInt (a sign) and Kotlin's toIntOrNull (a sign, any Unicode digit) would accept.
     */
    static int param(String raw, int absent, int max) {
        // Empty counts as absent: Quarkus's @RestQuery reads "?ms=" as no parameter, and one rule must hold for all.
        if (raw == null || raw.isEmpty()) {
            return absent;
        }
        long value = 0;
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c < '0' || c > '9') {
                return INVALID;
            }
            value = value * 10 + (c - '0');
            if (value > max) {
                return INVALID;
            }
        }
        return (int) value;
    }
}
