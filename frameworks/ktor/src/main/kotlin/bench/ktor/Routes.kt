package bench.ktor

import bench.shared.HttpDate
import bench.shared.countPrimes

import io.ktor.http.HttpHeaders
import io.ktor.http.HttpStatusCode
import io.ktor.serialization.kotlinx.json.json
import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.createApplicationPlugin
import io.ktor.server.application.install
import io.ktor.server.plugins.contentnegotiation.ContentNegotiation
import io.ktor.server.request.receive
import io.ktor.server.response.header
import io.ktor.server.response.respond
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.post
import io.ktor.server.routing.routing
import kotlinx.coroutines.delay

const val MAX_SLEEP_MS = 60_000
const val MAX_PRIMES_N = 10_000_000

/**
 * Netty and CIO send no Date header of their own; every response carries one (CONTRACT.md). Ktor's
 * DefaultHeaders plugin would add it (and a Server header), but its artifact is not served by the
 * registry here, so a plugin of three lines sets the value every target without one shares.
 */
val DateHeader = createApplicationPlugin("DateHeader") {
    onCall { call -> call.response.header(HttpHeaders.Date, HttpDate.now()) }
}

/**
 * The contract's endpoints, shared by both engines. Handlers are plain suspend functions:
 * they run on whatever dispatcher the engine calls them on, and every wait suspends.
 */
fun Application.benchRoutes(redis: RedisValues, items: ItemRepository) {
    install(ContentNegotiation) { json() }
    install(DateHeader)

    routing {
        get("/plaintext") {
            call.reportThread()
            call.respondText("Hello, World!")
        }
        get("/json") {
            call.reportThread()
            call.respond(Message("Hello, World!"))
        }
        get("/sleep") {
            val ms = call.boundedParam("ms", default = 100, max = MAX_SLEEP_MS)
                ?: return@get call.badRequest("ms must be an integer in 0..$MAX_SLEEP_MS")
            call.reportThread()
            delay(ms.toLong())
            call.respond(Slept(ms))
        }
        get("/cpu") {
            val n = call.boundedParam("n", default = 20_000, max = MAX_PRIMES_N)
                ?: return@get call.badRequest("n must be an integer in 0..$MAX_PRIMES_N")
            call.reportThread()
            // Inline on the handler's own thread: that is the model this target measures.
            call.respond(Primes(n, countPrimes(n)))
        }
        get("/redis") {
            call.reportThread()
            call.respond(redis.mget())
        }
        get("/db") {
            val id = call.request.queryParameters["id"]?.toIntOrNull()
                ?: return@get call.badRequest("id must be an integer")
            call.reportThread()
            val item = items.find(id) ?: return@get call.respond(HttpStatusCode.NotFound)
            call.respond(item)
        }
        post("/db") {
            val item = call.receive<NewItem>()
            call.reportThread()
            call.respond(HttpStatusCode.Created, Created(items.insert(item)))
        }
    }
}

/** Names the thread doing the scenario's work, when the client asks (CONTRACT.md). */
private fun ApplicationCall.reportThread() {
    if (request.headers.contains("X-Report-Thread")) {
        response.header("X-Thread", Thread.currentThread().toString())
    }
}

/** Absent gives the default; anything but an integer in 0..max gives null. */
private fun ApplicationCall.boundedParam(name: String, default: Int, max: Int): Int? {
    val raw = request.queryParameters[name] ?: return default
    return raw.toIntOrNull()?.takeIf { it in 0..max }
}

private suspend fun ApplicationCall.badRequest(message: String) =
    respondText(message, status = HttpStatusCode.BadRequest)
