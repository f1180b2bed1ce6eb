package bench.webflux

import bench.shared.Item
import bench.shared.NewItem
import reactor.core.publisher.Mono

/**
 * The `item` table as the Mono and suspend handlers see it. [report] is called on the thread
 * that issues the statement, for X-Thread.
 */
interface ReactiveItems {
    fun find(id: Int, report: () -> Unit): Mono<Item>
    fun insert(item: NewItem, report: () -> Unit): Mono<Long>
}
