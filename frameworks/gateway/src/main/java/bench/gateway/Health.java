package bench.gateway;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The health path (framework.toml): 200 as soon as the gateway serves, whatever the backend's state,
 * answered by the gateway itself in both of its servers (an annotated controller is served by WebFlux
 * and by Web MVC alike). Spring Boot's actuator served it before, and brought Micrometer's observation
 * of every request, a cost the backends, which have no actuator, do not pay.
 */
@RestController
class Health {
    @GetMapping("/health")
    String health() {
        return "UP";
    }
}
