package bench.webflux

import bench.shared.HttpDate
import org.springframework.http.HttpHeaders
import org.springframework.stereotype.Component
import org.springframework.web.server.ServerWebExchange
import org.springframework.web.server.WebFilter
import org.springframework.web.server.WebFilterChain
import reactor.core.publisher.Mono

/**
 * Reactor Netty sends no Date header of its own, where Tomcat does; every response carries one
 * (CONTRACT.md), from a WebFilter in front of every handler, the way WebFlux adds a header to all
 * responses. The gateway passes it on from this backend.
 */
@Component
class DateHeader : WebFilter {
    override fun filter(exchange: ServerWebExchange, chain: WebFilterChain): Mono<Void> {
        exchange.response.headers.set(HttpHeaders.DATE, HttpDate.now())
        return chain.filter(exchange)
    }
}
