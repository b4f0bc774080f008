package io.dsbra.placement;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

class HeatSourceTest {
  @TempDir
  Path dir;

  final AtomicLong now = new AtomicLong(1000);

  HeatSource source(Path file) {
    return new HeatSource(file.toUri(), 1000, 60_000, now::get);
  }

  @Test
  void missingFileMeansDefault() {
    HeatSource s = source(dir.resolve("heat.json"));
    s.refresh();
    assertEquals(HeatSource.State.MISSING, s.state());
    assertNull(s.usable());
  }

  @Test
  void usableUntilStaleThenDefault() throws IOException {
    Path f = dir.resolve("heat.json");
    Files.write(f, HeatDocumentTest.json(HeatDocumentTest.GOOD));
    HeatSource s = source(f);
    s.refresh();
    assertEquals(HeatSource.State.USABLE, s.state());
    assertNotNull(s.usable());
    now.addAndGet(60_001);  // older than max age: ignored at once, before any refresh
    assertNull(s.usable());
    s.refresh();
    assertEquals(HeatSource.State.STALE, s.state());
  }

  @Test
  void malformedReplacesAGoodDocument() throws IOException {
    Path f = dir.resolve("heat.json");
    Files.write(f, HeatDocumentTest.json(HeatDocumentTest.GOOD));
    HeatSource s = source(f);
    s.refresh();
    assertNotNull(s.usable());
    Files.write(f, HeatDocumentTest.json("{'format': 'dsbra-heat'"));
    s.refresh();
    assertEquals(HeatSource.State.MALFORMED, s.state());
    assertNull(s.usable());
    Files.delete(f);
    s.refresh();
    assertEquals(HeatSource.State.MISSING, s.state());
    assertNull(s.usable());
  }

  @Test
  void unreachableHttpIsMissingWithinTheTimeout() {
    // a port nothing listens on (the discard port on loopback): refused at once
    HeatSource s = new HeatSource(java.net.URI.create("http://127.0.0.1:9/heat"), 500, 60_000,
        now::get);
    s.refresh();
    assertEquals(HeatSource.State.MISSING, s.state());
    assertNull(s.usable());
  }
}
