package bench.shared;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * The value of the Date header that every response carries (frameworks/CONTRACT.md; RFC 9110 section
 * 6.6.1: an origin server with a clock must send one), for the Java targets whose server does not
 * add it. Formatted once a second and shared, as Tomcat and Undertow cache theirs, so that no target
 * pays a formatting per response that another does not (Kotlin targets: ../kotlin/bench/shared/HttpDate.kt).
 */
public final class HttpDate {
    // IMF-fixdate (RFC 9110 section 5.6.7): a two-digit day, which RFC_1123_DATE_TIME does not give
    private static final DateTimeFormatter IMF_FIXDATE =
            DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US);
    private static volatile long second = -1;
    private static volatile String value = "";

    private HttpDate() {
    }

    public static String now() {
        long s = System.currentTimeMillis() / 1000;
        if (s != second) {
            // two threads that both see a new second write the same text: no lock is needed
            value = IMF_FIXDATE.format(Instant.ofEpochSecond(s).atOffset(ZoneOffset.UTC));
            second = s;
        }
        return value;
    }
}
