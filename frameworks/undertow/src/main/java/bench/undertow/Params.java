package bench.undertow;

import io.undertow.server.HttpServerExchange;

import java.util.Deque;

/** Query parameters under the contract's rules: a non-negative integer, else 400. */
final class Params {
    static final long INVALID = -1;

    private Params() {
    }

    /**
     * The parameter as a non-negative integer, {@code fallback} when absent, or {@link #INVALID}
     * when it is not a non-negative integer or exceeds {@code max}.
     */
    static long nonNegative(HttpServerExchange exchange, String name, long fallback, long max) {
        Deque<String> values = exchange.getQueryParameters().get(name);
        if (values == null || values.isEmpty()) {
            return fallback;
        }
        long value = parse(values.getFirst());
        return value > max ? INVALID : value;
    }

    private static long parse(String text) {
        if (text.isEmpty()) {
            return INVALID;
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return INVALID;
            }
        }
        // Still a non-negative integer, just too large for a long: saturate so that the caller's
        // upper bound (400) or the missing row (404) decides, as for any other large number.
        return text.length() > 18 ? Long.MAX_VALUE : Long.parseLong(text);
    }
}
