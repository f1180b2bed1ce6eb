package bench.shared;

import java.math.BigDecimal;

/** A row of the {@code item} table; the component order is the JSON field order. */
public record Item(int id, String name, BigDecimal price) {
}
