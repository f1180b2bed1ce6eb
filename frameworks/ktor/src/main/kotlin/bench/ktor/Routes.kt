package bench.ktor

import bench.shared.Contract
import bench.shared.HttpDate
import bench.shared.countPrimes

import io.ktor.http.ContentType
import io.ktor.http.HttpHeaders
import io.ktor.http.HttpStatusCode
import io.ktor.serialization.kotlinx.json.DefaultJson
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
import kotlinx.serialization.json.JsonArray


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
fun Application.benchRoutes(redis: RedisValues, items: ItemRepository, downstream: Downstream, cacheTtlS: Long) {
    // DefaultJson, named: cache-aside stores a row's JSON exactly as db-read answers it.
    install(ContentNegotiation) { json(DefaultJson) }
    install(DateHeader)

    routing {
        get("/plaintext") {
            call.reportThread()
            call.respondText(Contract.HELLO)
        }
        get("/json") {
            call.reportThread()
            call.respond(Message(Contract.HELLO))
        }
        get("/sleep") {
            val ms = Contract.sleepMs(call.request.queryParameters["ms"])
                ?: return@get call.badRequest("ms must be ASCII digits, at most 60000")
            call.reportThread()
            delay(ms.toLong())
            call.respond(Slept(ms))
        }
        get("/cpu") {
            val n = Contract.primesN(call.request.queryParameters["n"])
                ?: return@get call.badRequest("n must be ASCII digits, at most 10000000")
            call.reportThread()
            // Inline on the handler's own thread: that is the model this target measures.
            call.respond(Primes(n, countPrimes(n)))
        }
        get("/redis") {
            call.reportThread()
            call.respond(redis.mget())
        }
        get("/db") {
            val id = Contract.itemId(call.request.queryParameters["id"])
                ?: return@get call.badRequest("id must be ASCII digits")
            call.reportThread()
            val item = items.find(id) ?: return@get call.respond(HttpStatusCode.NotFound)
            call.respond(item)
        }
        post("/db") {
            val item = call.receive<NewItem>()
            call.reportThread()
            call.respond(HttpStatusCode.Created, Created(items.insert(item)))
        }
        get("/fan-out") {
            val calls = Contract.fanOutCalls(call.request.queryParameters["calls"])
                ?: return@get call.badRequest("calls must be ASCII digits, 1 to 16")
            when (val result = downstream.fanOut(calls)) {
                is FanOut.Bodies -> {
                    // Back on the handler's dispatcher after awaitAll: the thread that combines the bodies.
                    call.reportThread()
                    call.respond(JsonArray(result.bodies))
                }
                is FanOut.Failed -> call.respond(result.status, ErrorBody(result.error))
            }
        }
        get("/cache-aside") {
            val id = Contract.itemId(call.request.queryParameters["id"])
                ?: return@get call.badRequest("id must be ASCII digits")
            val key = Contract.cacheKey(id)
            val cached = redis.get(key)
            // Resumed with Redis's answer, on the handler's dispatcher.
            call.reportThread()
            if (cached != null) {
                // A hit answers the cached text as it is, unparsed.
                return@get call.respondText(cached, ContentType.Application.Json)
            }
            val item = items.find(id) ?: return@get call.respond(HttpStatusCode.NotFound)
            val json = DefaultJson.encodeToString(Item.serializer(), item)
            redis.setEx(key, json, cacheTtlS)
            call.respondText(json, ContentType.Application.Json)
        }
    }
}

/** Names the thread doing the scenario's work, when the client asks (CONTRACT.md). */
private fun ApplicationCall.reportThread() {
    if (request.headers.contains("X-Report-Thread")) {
        response.header("X-Thread", Thread.currentThread().toString())
    }
}

private suspend fun ApplicationCall.badRequest(message: String) =
    respondText(message, status = HttpStatusCode.BadRequest)
