package bench.shared

/** Counts the primes <= n by plain trial division, exactly as frameworks/CONTRACT.md prescribes. */
fun countPrimes(n: Int): Int = count(n, yieldEachPrime = false)

/**
 * The cpu-yield scenario: the same count, offering the CPU to another thread after each prime (the
 * MVC-vs-reactive study's context-switch experiment). On a platform thread the kernel decides
 * whether to switch; a virtual thread lets its carrier run another virtual thread; an event loop
 * has nothing of its own to switch to, so its OS thread yields only to other OS threads.
 */
fun countPrimesYielding(n: Int): Int = count(n, yieldEachPrime = true)

private fun count(n: Int, yieldEachPrime: Boolean): Int {
    var count = 0
    for (k in 2..n) {
        var d = 2
        var prime = true
        while (d * d <= k) {
            if (k % d == 0) { prime = false; break }
            d++
        }
        if (prime) {
            count++
            if (yieldEachPrime) Thread.`yield`()
        }
    }
    return count
}
