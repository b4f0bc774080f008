package io.dsbra.placement;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLConnection;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Keeps the latest usable heat document, fetched by a background thread (a file: or http: URI)
 * so that the NameNode's placement calls only read a volatile field: no I/O, no waiting, never
 * inside the NameNode's locks. A document that is missing, malformed or older than its max age
 * (the plugin's {@code maxAgeMs} if set, else a few of the daemon's rounds,
 * {@link HeatDocument#maxAgeMs}) is not usable: callers then place exactly as the default
 * policy does. Each change of that state is logged once.
 */
public final class HeatSource implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HeatSource.class);
  /** Larger documents are refused: a NameNode must not buffer an unbounded reply. */
  static final int MAX_BYTES = 64 << 20;

  /** A {@code maxAgeMs} that leaves the max age to the document: a few of the daemon's rounds. */
  public static final long BY_ROUNDS = 0;

  /** What the last refresh found. */
  public enum State { UNSET, USABLE, MISSING, MALFORMED, STALE }

  private final URI uri;
  private final int timeoutMs;
  private final long maxAgeMs;
  private final LongSupplier clock;
  private volatile HeatDocument latest;
  private volatile State state = State.UNSET;
  private ScheduledExecutorService refresher;

  /** {@code maxAgeMs}: how old a document may be, or {@link #BY_ROUNDS} (or less). */
  public HeatSource(URI uri, int timeoutMs, long maxAgeMs, LongSupplier clock) {
    this.uri = uri;
    this.timeoutMs = timeoutMs;
    this.maxAgeMs = maxAgeMs;
    this.clock = clock;
  }

  /** Refreshes every {@code periodMs} on one daemon thread, the first time now. */
  public synchronized void start(long periodMs) {
    if (refresher != null) {
      return;
    }
    refresher = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "dsbra-heat-refresher");
      t.setDaemon(true);
      return t;
    });
    refresher.scheduleWithFixedDelay(this::refreshQuietly, 0, periodMs, TimeUnit.MILLISECONDS);
  }

  @Override
  public synchronized void close() {
    if (refresher != null) {
      refresher.shutdownNow();
      refresher = null;
    }
  }

  /** The document to place by now, or null: place as the default policy does. */
  public HeatDocument usable() {
    HeatDocument doc = latest;
    return doc != null && fresh(doc) ? doc : null;
  }

  public State state() {
    return state;
  }

  private boolean fresh(HeatDocument doc) {
    return Math.abs(clock.getAsLong() - doc.generatedMs()) <= maxAgeMs(doc);
  }

  /** The plugin's max age if it sets one, else the document's (a few of the daemon's rounds). */
  long maxAgeMs(HeatDocument doc) {
    return maxAgeMs > BY_ROUNDS ? maxAgeMs : doc.maxAgeMs();
  }

  private void refreshQuietly() {
    try {
      refresh();
    } catch (RuntimeException e) {  // the refresher thread must survive anything
      transition(State.MALFORMED, e.toString());
    }
  }

  /** One fetch; public for tests. */
  public void refresh() {
    byte[] body;
    try {
      body = fetch();
    } catch (IOException e) {
      latest = null;
      transition(State.MISSING, uri + ": " + e);
      return;
    }
    HeatDocument doc;
    try {
      doc = HeatDocument.parse(body);
    } catch (MalformedHeatException e) {
      latest = null;
      transition(State.MALFORMED, uri + ": " + e.getMessage());
      return;
    }
    HeatDocument before = latest;
    latest = doc;
    if (fresh(doc)) {
      transition(State.USABLE, "round " + doc.round() + ", " + doc.nodeCount() + " DataNodes");
      if (before == null || before.round() != doc.round()) {
        // every round, where the state lines come only on a change: `hadoop daemonlog` turns it on
        LOG.debug("dsbra heat round {} read: {} DataNodes, {} files raised, {} lowered",
            doc.round(), doc.nodeCount(), doc.raisedCount(), doc.loweringCount());
      }
    } else {
      transition(State.STALE, uri + ": generated " + (clock.getAsLong() - doc.generatedMs())
          + " ms ago, more than " + maxAgeMs(doc));
    }
  }

  private byte[] fetch() throws IOException {
    URLConnection conn = uri.toURL().openConnection();
    conn.setConnectTimeout(timeoutMs);
    conn.setReadTimeout(timeoutMs);
    conn.setUseCaches(false);
    try (InputStream in = conn.getInputStream()) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[8192];
      for (int n; (n = in.read(buf)) > 0; ) {
        out.write(buf, 0, n);
        if (out.size() > MAX_BYTES) {
          throw new IOException("larger than " + MAX_BYTES + " bytes");
        }
      }
      return out.toByteArray();
    }
  }

  private void transition(State next, String detail) {
    State before = state;
    state = next;
    if (before == next) {
      return;
    }
    if (next == State.USABLE) {
      LOG.info("dsbra heat usable ({}): heat-aware placement on", detail);
    } else {
      LOG.warn("dsbra heat {} ({}): default placement until it is usable",
          next.name().toLowerCase(), detail);
    }
  }
}
