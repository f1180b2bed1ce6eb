package bench.gateway;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication.Type;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.server.WebFilter;

/**
 * The gateway's own thread, in {@code X-Gateway-Thread}, for a request that carries
 * {@code X-Report-Thread} (CONTRACT.md): the backend's {@code X-Thread} passes through unchanged,
 * so without this nothing would show that the MVC gateway really runs on virtual threads.
 * The header is set before the request is routed, on the thread that accepted it into the gateway.
 */
@Configuration(proxyBeanMethods = false)
class GatewayThread {

    static final String ASK = "X-Report-Thread";
    static final String ANSWER = "X-Gateway-Thread";

    /** WebFlux gateway: a Netty event-loop thread. */
    @Bean
    @ConditionalOnWebApplication(type = Type.REACTIVE)
    WebFilter gatewayThreadWebFilter() {
        return (exchange, chain) -> {
            if (exchange.getRequest().getHeaders().containsHeader(ASK)) {
                exchange.getResponse().getHeaders().set(ANSWER, Thread.currentThread().toString());
            }
            return chain.filter(exchange);
        };
    }

    /** MVC gateway: a Tomcat worker, or a virtual thread per request. */
    @Bean
    @ConditionalOnWebApplication(type = Type.SERVLET)
    OncePerRequestFilter gatewayThreadServletFilter() {
        return new OncePerRequestFilter() {
            @Override
            protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
                    throws ServletException, IOException {
                if (request.getHeader(ASK) != null) {
                    response.setHeader(ANSWER, Thread.currentThread().toString());
                }
                chain.doFilter(request, response);
            }
        };
    }
}
