package bench.shared

/** Counts the primes <= n by plain trial division, exactly as frameworks/CONTRACT.md prescribes. */
fun countPrimes(n: Int): Int {
    var count = 0
    for (k in 2..n) {
        var d = 2
        var prime = true
        while (d * d <= k) {
            if (k % d == 0) { prime = false; break }
            d++
        }
        if (prime) count++
    }
    return count
}
