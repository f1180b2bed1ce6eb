package bench;

import jakarta.ws.rs.BadRequestException;

/** The contract's query parameter rules: absent gives the default, anything but an integer in 0..max is a 400. */
public final class Params {
    static final int DEFAULT_SLEEP_MS = 100;
    static final int MAX_SLEEP_MS = 60_000;
    static final int DEFAULT_PRIMES_N = 20_000;
    static final int MAX_PRIMES_N = 10_000_000;

    private Params() {
    }

    public static int sleepMs(String raw) {
        return bounded(raw, DEFAULT_SLEEP_MS, MAX_SLEEP_MS);
    }

    public static int primesN(String raw) {
        return bounded(raw, DEFAULT_PRIMES_N, MAX_PRIMES_N);
    }

    // Taken as a String: a JAX-RS int parameter that fails to convert gives 404, not the contract's 400.
    private static int bounded(String raw, int defaultValue, int max) {
        if (raw == null) {
            return defaultValue;
        }
        int value;
        try {
            value = Integer.parseInt(raw);
        } catch (NumberFormatException e) {
            throw new BadRequestException();
        }
        if (value < 0 || value > max) {
            throw new BadRequestException();
        }
        return value;
    }
}
