package bench;

import org.jboss.resteasy.reactive.RestResponse;
import org.jboss.resteasy.reactive.RestResponse.ResponseBuilder;
import org.jboss.resteasy.reactive.RestResponse.Status;

/**
 * Builds responses and, when the request carries X-Report-Thread, names the current thread in X-Thread.
 * Call it on the thread that did the work: in the reactive code that is inside the callback of the
 * timer, the Redis reply, the database reply or
 * the last downstream reply.
 */
final class Replies {
    static final String REPORT_THREAD = "X-Report-Thread";

    private Replies() {
    }

    static <T> RestResponse<T> ok(T body, String reportThread) {
        return build(ResponseBuilder.ok(body), reportThread);
    }

    static <T> RestResponse<T> created(T body, String reportThread) {
        return build(ResponseBuilder.create(Status.CREATED, body), reportThread);
    }

    static <T> RestResponse<T> status(Status status, T body, String reportThread) {
        return build(ResponseBuilder.create(status, body), reportThread);
    }

    static <T> RestResponse<T> notFound(String reportThread) {
        return build(ResponseBuilder.notFound(), reportThread);
    }

    private static <T> RestResponse<T> build(ResponseBuilder<T> builder, String reportThread) {
        if (reportThread != null) {
            builder.header("X-Thread", Thread.currentThread().toString());
        }
        return builder.build();
    }
}
