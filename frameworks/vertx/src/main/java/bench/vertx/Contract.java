package bench.vertx;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Response;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import java.math.BigDecimal;
import java.util.List;

/** What every variant computes, builds and asks the backends, exactly as frameworks/CONTRACT.md says. */
final class Contract {

  static final int DEFAULT_SLEEP_MS = 100;
  static final int MAX_SLEEP_MS = 60_000;
  static final int DEFAULT_PRIMES_N = 20_000;
  static final int MAX_PRIMES_N = 10_000_000;

  static final String SELECT_ITEM = "SELECT id, name, price FROM item WHERE id = ?";
  static final String INSERT_ITEM = "INSERT INTO item (name, price) VALUES (?, ?)";
  static final List<String> REDIS_KEYS = List.of("bench:1", "bench:2", "bench:3");

  /** The body of {@code POST /db}. */
  record NewItem(String name, BigDecimal price) {}

  private Contract() {}

  /** An absent parameter takes its default; anything but an integer in 0..max gives -1 (a 400). */
  static int boundedParam(String raw, int fallback, int max) {
    if (raw == null) {
      return fallback;
    }
    try {
      int value = Integer.parseInt(raw);
      return value >= 0 && value <= max ? value : -1;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

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
    return new JsonObject().put("message", "Hello, World!");
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

  /** The MGET reply as a JSON array of strings (null for a missing key). */
  static JsonArray values(Response mget) {
    JsonArray values = new JsonArray();
    for (Response value : mget) {
      values.add(value == null ? null : value.toString());
    }
    return values;
  }
}
