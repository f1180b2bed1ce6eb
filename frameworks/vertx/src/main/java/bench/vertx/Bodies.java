package bench.vertx;

import bench.shared.Contract;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Response;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import java.math.BigDecimal;
import java.util.List;

/**
 * The bodies every variant builds, as frameworks/CONTRACT.md shows them; its parameters, statements and
 * keys are frameworks/shared's bench.shared.Contract, the same for every Java target.
 */
final class Bodies {

  /** The body of {@code POST /db}. */
  record NewItem(String name, BigDecimal price) {}

  private Bodies() {}

  /** Parses {@code {"name": "...", "price": 1.5}}; null when the body is not that shape. */
  static NewItem newItem(String body) {
    try {
      JsonObject json = new JsonObject(body);
      if (json.getValue("name") instanceof String name && json.getValue("price") instanceof Number price) {
        // Through the decimal text, so 1.1 is stored as 1.10 and not as the nearest double.
        return new NewItem(name, new BigDecimal(price.toString()));
      }
    } catch (RuntimeException e) {
      // Not JSON, or not an object: a client error, answered below.
    }
    return null;
  }

  static JsonObject message() {
    return new JsonObject().put("message", Contract.HELLO);
  }

  static JsonObject slept(int ms) {
    return new JsonObject().put("sleptMs", ms);
  }

  static JsonObject primes(int n, int primes) {
    return new JsonObject().put("n", n).put("primes", primes);
  }

  /** The row as {@code {"id":..,"name":..,"price":..}}, or null when the query found none. */
  static JsonObject item(RowSet<Row> rows) {
    var it = rows.iterator();
    if (!it.hasNext()) {
      return null;
    }
    Row row = it.next();
    return new JsonObject()
        .put("id", row.getInteger("id"))
        .put("name", row.getString("name"))
        .put("price", row.getBigDecimal("price"));
  }

  static JsonObject created(long id) {
    return new JsonObject().put("id", id);
  }

  /** fan-out's answer: the downstream's bodies, parsed, in the order of their {@code i}. */
  static JsonArray fanOut(List<JsonObject> bodies) {
    return new JsonArray(bodies);
  }

  /** fan-out's 502 and 504: {@code {"error":"downstream failed"}} or {@code "downstream timed out"}. */
  static JsonObject error(String message) {
    return new JsonObject().put("error", message);
  }

  /** The MGET reply as a JSON array of strings (null for a missing key). */
  static JsonArray values(Response mget) {
    JsonArray values = new JsonArray();
    for (Response value : mget) {
      values.add(value == null ? null : value.toString());
    }
    return values;
  }
}
