package bench.gateway;

import java.net.http.HttpClient;

import org.springframework.boot.http.client.JdkClientHttpRequestFactoryBuilder;
import org.springframework.boot.http.client.autoconfigure.ClientHttpRequestFactoryBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Profile;

/**
 * The MVC gateway's JDK HttpClient sends what the WebFlux gateway's Reactor Netty client sends: a plain
 * HTTP/1.1 request. Left alone, it offers an h2c upgrade (Upgrade: h2c, HTTP2-Settings: the JDK client's
 * default version is HTTP/2) and Spring's factory adds Accept-Encoding: gzip, deflate to every proxied
 * request, which Reactor Netty's client does not (its compression is off by default); the backend would
 * then do different work for the two gateways.
 */
@Configuration(proxyBeanMethods = false)
@Profile("mvc")
class BackendClient {

    @Bean
    ClientHttpRequestFactoryBuilderCustomizer<JdkClientHttpRequestFactoryBuilder> plainHttp11() {
        return builder -> builder
                .withHttpClientCustomizer(client -> client.version(HttpClient.Version.HTTP_1_1))
                .withCustomizer(factory -> factory.enableCompression(false));
    }
}
