package bench.undertow;

/** The contract's prime count: plain trial division, deliberately without any shortcut. */
final class Primes {
    private Primes() {
    }

    static int countUpTo(int n) {
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
