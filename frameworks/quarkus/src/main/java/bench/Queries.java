package bench;

/** What every thread model sends to MariaDB and Redis: the same statements and keys. */
final class Queries {
    static final String SELECT_ITEM = "SELECT id, name, price FROM item WHERE id = ?";
    static final String INSERT_ITEM = "INSERT INTO item (name, price) VALUES (?, ?)";
    static final String[] REDIS_KEYS = { "bench:1", "bench:2", "bench:3" };

    private Queries() {
    }
}
