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
  void withoutAMaxAgeUsableForThreeOfTheDaemonsRounds() throws IOException {
    Path f = dir.resolve("heat.json");
    HeatSource s = new HeatSource(f.toUri(), 1000, HeatSource.BY_ROUNDS, now::get);
    // rounds of 10 s acting 2 s after publishing: three take 36 s
    Files.write(f, HeatDocumentTest.json(HeatDocumentTest.GOOD.replace("'round': 7",
        "'round': 7, 'interval_ms': 10000, 'lead_ms': 2000")));
    s.refresh();
    now.addAndGet(36_000);
    assertNotNull(s.usable());
    now.addAndGet(1);
    assertNull(s.usable());
    s.refresh();
    assertEquals(HeatSource.State.STALE, s.state());
    // no interval stated: three of the daemon's default rounds
    Files.write(f, HeatDocumentTest.json(HeatDocumentTest.GOOD));
    now.set(1000 + HeatDocument.MAX_AGE_MS_WITHOUT_INTERVAL);
    s.refresh();
    assertNotNull(s.usable());
    now.addAndGet(1);
    assertNull(s.usable());
  }

  @Test
  void anExplicitMaxAgeWinsOverTheDaemonsRounds() throws IOException {
    Path f = dir.resolve("heat.json");
    HeatSource s = source(f);  // 60 s
    Files.write(f, HeatDocumentTest.json(HeatDocumentTest.GOOD.replace("'round': 7",
        "'round': 7, 'interval_ms': 1000")));
    s.refresh();
    now.addAndGet(60_000);  // 20 of the daemon's rounds of 1 s
    assertNotNull(s.usable());
    Files.write(f, HeatDocumentTest.json(HeatDocumentTest.GOOD.replace("'round': 7",
        "'round': 7, 'interval_ms': 600000")));
    s.refresh();
    now.addAndGet(1);  // 60.001 s: within one of those rounds, past the max age
    assertNull(s.usable());
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
