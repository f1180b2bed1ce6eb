package bench.vertx;

import io.vertx.core.DeploymentOptions;
import io.vertx.core.Vertx;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/** Creates Vert.x with its default options, the shared backends, and deploys the variant's verticle. */
public final class Main {

  static {
    // One line per log record (the JDK's default format takes two): a failed fan-out logs one line.
    // Set before anything logs, since SimpleFormatter reads it once; a -D on the command line wins.
    if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
      System.setProperty("java.util.logging.SimpleFormatter.format", "%1$tFT%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n");
    }
  }

  private static final Logger LOG = Logger.getLogger(Main.class.getName());

  private Main() {}

  public static void main(String[] args) {
    Settings settings = Settings.fromEnv();
    Variant variant = Variant.selected();
    Vertx vertx = Vertx.vertx();
    Backends backends = Backends.create(vertx, settings);

    // One instance per core, as the Vert.x docs advise for scaling an HTTP server: each instance
    // gets its own event loop (eventloop) or its own virtual-thread context (virtual).
    int instances = Runtime.getRuntime().availableProcessors();
    DeploymentOptions options = new DeploymentOptions()
        .setThreadingModel(variant.threadingModel)
        .setInstances(instances);

    vertx.deployVerticle(() -> variant.verticle(backends, settings), options)
        .onSuccess(id -> LOG.info(() -> "vertx:" + variant.name().toLowerCase() + " listening on "
            + settings.bindAddress() + ":" + settings.port() + " with " + instances + " instance(s)"))
        .onFailure(err -> {
          LOG.log(Level.SEVERE, "deployment failed", err);
          System.exit(1);
        });

    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        backends.close().eventually(vertx::close).await(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        LOG.log(Level.WARNING, "shutdown did not complete", e);
      }
    }, "shutdown"));
  }
}
