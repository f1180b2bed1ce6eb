package bench.shared;

/**
 * The prime count of frameworks/CONTRACT.md, for every Java target: plain trial division, no sieve, no
 * skipped divisors. One copy, so that no target's loop can drift from the others' (Kotlin targets use
 * ../kotlin/bench/shared/Primes.kt, the same loop).
 */
public final class Primes {
    private Primes() {
    }

    public static int count(int n) {
        int count = 0;
        for (int k = 2; k <= n; k++) {
            boolean prime = true;
            for (int d = 2; d * d <= k; d++) {
                if (k % d == 0) {
                    prime = false;
                    break;
                }
            }
            if (prime) {
                count++;
            }
        }
        return count;
    }
}
