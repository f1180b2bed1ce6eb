package bench.vertx;

/** The environment of frameworks/CONTRACT.md. */
record Settings(
    int port,
    String bindAddress,
    String redisHost,
    int redisPort,
    String redisPassword,
    String dbHost,
    int dbPort,
    String dbName,
    String dbUser,
    String dbPassword,
    int dbPoolSize,
    int redisPoolSize,
    String downstreamUrl,
    int downstreamPoolSize,
    int cacheTtlS) {

  static Settings fromEnv() {
    return new Settings(
        Integer.parseInt(env("PORT", "8080")),
        env("BIND_ADDRESS", "127.0.0.1"),
        env("REDIS_HOST", "127.0.0.1"),
        Integer.parseInt(env("REDIS_PORT", "6379")),
        env("REDIS_PASSWORD", null),
        env("DB_HOST", "127.0.0.1"),
        Integer.parseInt(env("DB_PORT", "3306")),
        env("DB_NAME", "bench"),
        env("DB_USER", "bench"),
        env("DB_PASSWORD", null),
        Integer.parseInt(env("DB_POOL_SIZE", "16")),
        Integer.parseInt(env("REDIS_POOL_SIZE", "16")),
        env("DOWNSTREAM_URL", null),
        Integer.parseInt(env("DOWNSTREAM_POOL_SIZE", "512")),
        Integer.parseInt(env("CACHE_TTL_S", "10")));
  }

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isEmpty() ? fallback : value;
  }

  // Credentials stay out of any log line that prints the settings.
  @Override
  public String toString() {
    return "Settings[port=" + port + ", bindAddress=" + bindAddress
        + ", redis=" + redisHost + ":" + redisPort
        + ", db=" + dbHost + ":" + dbPort + "/" + dbName + ", dbPoolSize=" + dbPoolSize
        + ", redisPoolSize=" + redisPoolSize + ", downstream=" + downstreamUrl
        + ", downstreamPoolSize=" + downstreamPoolSize + ", cacheTtlS=" + cacheTtlS + "]";
  }
}
