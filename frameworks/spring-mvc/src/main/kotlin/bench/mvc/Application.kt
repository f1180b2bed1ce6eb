package bench.mvc

import bench.shared.JdbcItems
import org.springframework.boot.autoconfigure.SpringBootApplication
import org.springframework.boot.runApplication
import org.springframework.context.annotation.Bean
import org.springframework.jdbc.core.simple.JdbcClient

@SpringBootApplication
class Application {
    /** The item table, shared by every variant (frameworks/spring-shared). */
    @Bean
    fun items(jdbc: JdbcClient) = JdbcItems(jdbc)
}

fun main(args: Array<String>) {
    runApplication<Application>(*args)
}
