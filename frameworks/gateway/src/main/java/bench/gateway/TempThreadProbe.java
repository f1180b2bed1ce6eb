package bench.gateway;

// TEMPORARY: reports the gateway's own threads; removed after the check.
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.filter.OncePerRequestFilter;
import reactor.core.publisher.Mono;

@Configuration
public class TempThreadProbe {

    @Configuration
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
    static class Reactive {
        @Bean
        GlobalFilter probe() {
            return (exchange, chain) -> {
                exchange.getResponse().getHeaders().add("X-Gw-Thread-In", Thread.currentThread().toString());
                exchange.getResponse().beforeCommit(() -> {
                    exchange.getResponse().getHeaders().add("X-Gw-Thread-Out", Thread.currentThread().toString());
                    return Mono.empty();
                });
                return chain.filter(exchange);
            };
        }
    }

    @Configuration
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    static class Servlet {
        @Bean
        OncePerRequestFilter probe() {
            return new OncePerRequestFilter() {
                @Override
                protected void doFilterInternal(jakarta.servlet.http.HttpServletRequest req,
                        jakarta.servlet.http.HttpServletResponse res, jakarta.servlet.FilterChain chain)
                        throws jakarta.servlet.ServletException, java.io.IOException {
                    res.addHeader("X-Gw-Thread-In", Thread.currentThread().toString());
                    chain.doFilter(req, res);
                }
            };
        }
    }
}
