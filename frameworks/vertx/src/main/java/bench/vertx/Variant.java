package bench.vertx;

import io.vertx.core.ThreadingModel;
import java.util.Locale;

/** The variants of framework.toml, chosen at start-up by the system property {@code bench.variant}. */
enum Variant {
  EVENTLOOP(ThreadingModel.EVENT_LOOP) {
    @Override
    BenchVerticle verticle(Backends backends, Settings settings) {
      return new EventLoopVerticle(backends, settings);
    }
  },
  VIRTUAL(ThreadingModel.VIRTUAL_THREAD) {
    @Override
    BenchVerticle verticle(Backends backends, Settings settings) {
      return new VirtualThreadVerticle(backends, settings);
    }
  };

  static final String PROPERTY = "bench.variant";

  final ThreadingModel threadingModel;

  Variant(ThreadingModel threadingModel) {
    this.threadingModel = threadingModel;
  }

  abstract BenchVerticle verticle(Backends backends, Settings settings);

  static Variant selected() {
    return valueOf(System.getProperty(PROPERTY, "eventloop").toUpperCase(Locale.ROOT));
  }
}
