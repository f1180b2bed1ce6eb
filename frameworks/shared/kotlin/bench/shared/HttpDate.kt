package bench.shared

import java.time.Instant
import java.time.ZoneOffset
import java.time.format.DateTimeFormatter
import java.util.Locale

/**
 * The value of the Date header that every response carries (frameworks/CONTRACT.md; RFC 9110 section
 * 6.6.1: an origin server with a clock must send one), for the Kotlin targets whose server does not
 * add it. Formatted once a second and shared, as Tomcat and Undertow cache theirs (Java targets:
 * ../java/bench/shared/HttpDate.java).
 */
object HttpDate {
    // IMF-fixdate (RFC 9110 section 5.6.7): a two-digit day, which RFC_1123_DATE_TIME does not give
    private val imfFixdate = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)
    @Volatile private var second = -1L
    @Volatile private var value = ""

    fun now(): String {
        val s = System.currentTimeMillis() / 1000
        if (s != second) {
            // two threads that both see a new second write the same text: no lock is needed
            value = imfFixdate.format(Instant.ofEpochSecond(s).atOffset(ZoneOffset.UTC))
            second = s
        }
        return value
    }
}
