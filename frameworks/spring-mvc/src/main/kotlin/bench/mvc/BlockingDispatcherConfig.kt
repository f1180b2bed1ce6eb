package bench.mvc

import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asCoroutineDispatcher
import org.springframework.boot.autoconfigure.condition.ConditionalOnThreading
import org.springframework.boot.thread.Threading
import org.springframework.context.annotation.Bean
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.Profile
import java.util.concurrent.Executors

/**
 * Where the coroutine handlers run blocking JDBC calls, chosen by `spring.threads.virtual.enabled`:
 * Dispatchers.IO (kotlinx's pool for blocking I/O, 64 threads) on platform threads, or a new
 * virtual thread per call.
 */
@Configuration(proxyBeanMethods = false)
@Profile("coroutines")
class BlockingDispatcherConfig {

    // Dispatchers.IO is process-wide and refuses close(), so Spring must not try to close it.
    @Bean(destroyMethod = "")
    @ConditionalOnThreading(Threading.PLATFORM)
    fun ioDispatcher(): CoroutineDispatcher = Dispatchers.IO

    // Closed with the context, which shuts its executor down.
    @Bean
    @ConditionalOnThreading(Threading.VIRTUAL)
    fun virtualThreadDispatcher(): CoroutineDispatcher =
        Executors.newVirtualThreadPerTaskExecutor().asCoroutineDispatcher()
}
