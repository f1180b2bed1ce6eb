package bench;

/** The prime counter of frameworks/CONTRACT.md: plain trial division, no sieve, no skipped divisors. */
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
