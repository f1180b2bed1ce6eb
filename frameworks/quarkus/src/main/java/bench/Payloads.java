package bench;

import java.math.BigDecimal;

/** Request and response bodies, serialised by Jackson; record component order is the JSON field order. */
public final class Payloads {
    private Payloads() {
    }

    public record Message(String message) {
    }

    public record Slept(long sleptMs) {
    }

    public record PrimeCount(int n, int primes) {
    }

    /** The body of {@code POST /db}. */
    public record NewItem(String name, BigDecimal price) {
    }

    public record Created(long id) {
    }

    /** fan-out's answer when a downstream call failed: {"error":"downstream timed out"} or {"error":"downstream failed"}. */
    public record DownstreamError(String error) {
    }
}
