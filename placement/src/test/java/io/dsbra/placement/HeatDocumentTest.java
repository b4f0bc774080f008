package io.dsbra.placement;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HeatDocumentTest {
  static byte[] json(String s) {
    return s.replace('\'', '"').getBytes(StandardCharsets.UTF_8);
  }

  static final String GOOD = "{'format': 'dsbra-heat', 'version': 1, 'generated_ms': 1000,"
      + " 'round': 7, 'nodes': {'10.0.0.1': 0.5, '10.0.0.2': 0}, 'raised': ['/hot']}";

  @Test
  void readsTheDaemonsDocument() {
    HeatDocument doc = HeatDocument.parse(json(GOOD));
    assertEquals(1000, doc.generatedMs());
    assertEquals(7, doc.round());
    assertEquals(2, doc.nodeCount());
    assertEquals(0.5, doc.heatOf("h1", "10.0.0.1"));
    assertNull(doc.heatOf("10.0.0.9"));
    assertTrue(doc.isRaised("/hot"));
    assertFalse(doc.isRaised("/cold"));
    assertFalse(doc.isRaised(null));
    assertNull(doc.blocksOf("10.0.0.1"));
    assertEquals(0.5, doc.rfOf("/hot"));  // no rf given: the hottest node's heat
    HeatDocument more = HeatDocument.parse(json(GOOD.replace("'round': 7",
        "'round': 7, 'blocks': {'10.0.0.1': 3}, 'rf': {'/hot': 1.5}")));
    assertEquals(3.0, more.blocksOf("x", "10.0.0.1"));
    assertEquals(1.5, more.rfOf("/hot"));
    assertNull(doc.loweringOf(1, holders("10.0.0.1", "10.0.0.2")));  // no lowering: none
    assertFalse(doc.mayBeLowering(1, 2));
    assertEquals(0, doc.loweringCount());
  }

  static final String LOWERING = GOOD.replace("'round': 7", "'round': 7, 'lowering': {"
      + "'/warm': {'replication': 1, 'holders': [['10.0.0.1', '10.0.0.2'], ['10.0.0.3:9866', "
      + "'10.0.0.1']]}, '/cool': {'replication': 2, 'holders': [['10.0.0.1', '10.0.0.2', "
      + "'10.0.0.3:9866']]}}");

  /** DataNodes by their names as the plugin gives them: {host, IP, IP:port}. */
  static List<String[]> holders(String... ips) {
    String[][] out = new String[ips.length][];
    for (int i = 0; i < ips.length; i++) {
      out[i] = new String[] {"host-" + ips[i], ips[i], ips[i] + ":9866"};
    }
    return Arrays.asList(out);
  }

  @Test
  void findsTheLoweredFileByABlocksHoldersAndReplication() {
    HeatDocument doc = HeatDocument.parse(json(LOWERING));
    assertEquals(2, doc.loweringCount());
    assertTrue(doc.mayBeLowering(1, 2));
    assertTrue(doc.mayBeLowering(2, 3));
    assertFalse(doc.mayBeLowering(1, 3), "no block of 3 holders is lowered to 1");
    assertFalse(doc.mayBeLowering(3, 4));
    assertEquals("/warm", doc.loweringOf(1, holders("10.0.0.2", "10.0.0.1")));  // any order
    assertEquals("/warm", doc.loweringOf(1, holders("10.0.0.1", "10.0.0.3")));  // by IP:port
    assertEquals("/cool", doc.loweringOf(2, holders("10.0.0.3", "10.0.0.2", "10.0.0.1")));
    assertNull(doc.loweringOf(2, holders("10.0.0.1", "10.0.0.2")), "another replication");
    assertNull(doc.loweringOf(1, holders("10.0.0.1", "10.0.0.2", "10.0.0.3")), "more holders");
    assertNull(doc.loweringOf(1, holders("10.0.0.1")), "fewer holders");
    assertNull(doc.loweringOf(1, holders("10.0.0.1", "10.0.0.9")), "a holder not listed");
  }

  @Test
  void usableForThreeOfTheDaemonsRoundsItsWindowAndLeadOrThreeMinutes() {
    assertEquals(HeatDocument.MAX_AGE_MS_WITHOUT_INTERVAL, HeatDocument.parse(json(GOOD))
        .maxAgeMs());
    assertEquals(3 * 5_000, HeatDocument.parse(json(GOOD.replace("'round': 7",
        "'round': 7, 'interval_ms': 5000"))).maxAgeMs());
    assertEquals(3 * (60_000 + 6_000), HeatDocument.parse(json(GOOD.replace("'round': 7",
        "'round': 7, 'interval_ms': 60000, 'lead_ms': 6000"))).maxAgeMs());
  }

  @Test
  void refusesWhatItCannotUseNamingTheProblem() {
    String[][] cases = {
        {"not json", "not JSON"},
        {"[1]", "not a JSON object"},
        {GOOD.replace("dsbra-heat", "other"), "format"},
        {GOOD.replace("'version': 1", "'version': 2"), "version"},
        {GOOD.replace("'generated_ms': 1000", "'generated_ms': 'x'"), "generated_ms"},
        {GOOD.replace("'nodes': {'10.0.0.1': 0.5, '10.0.0.2': 0}", "'nodes': []"), "nodes"},
        {GOOD.replace("0.5", "-1"), "heat of 10.0.0.1"},
        {GOOD.replace("0.5", "'hot'"), "heat of 10.0.0.1"},
        {GOOD.replace("['/hot']", "'/hot'"), "raised"},
        {GOOD.replace("['/hot']", "[1]"), "raised"},
        {GOOD.replace("'round': 7", "'round': 7, 'blocks': [2]"), "blocks is not an object"},
        {GOOD.replace("'round': 7", "'round': 7, 'rf': {'/hot': -1}"), "rf of /hot"},
        {GOOD.replace("'round': 7", "'round': 7, 'interval_ms': 0"), "interval_ms is not an "
            + "integer >= 1"},
        {GOOD.replace("'round': 7", "'round': 7, 'interval_ms': 1.5"), "interval_ms"},
        {GOOD.replace("'round': 7", "'round': 7, 'lead_ms': -1"), "lead_ms is not an integer"},
        {GOOD.replace("'round': 7", "'round': 7, 'lowering': ['/a']"), "lowering is not an "
            + "object"},
        {LOWERING.replace("'/cool': {'replication': 2", "'/cool': {'replication': 0"),
            "lowering of /cool: replication is not an integer >= 1"},
        {LOWERING.replace("'/cool': {'replication': 2", "'/cool': {'replication': '2'"),
            "lowering of /cool: replication"},
        {LOWERING.replace("'/cool': {'replication': 2, 'holders': [", "'/cool': {"
            + "'replication': 2, 'holders': 1, 'x': ["),
            "lowering of /cool: holders is not a list"},
        {LOWERING.replace("[['10.0.0.1', '10.0.0.2', '10.0.0.3:9866']]", "['10.0.0.1']"),
            "lowering of /cool: holders holds a non-list"},
        {LOWERING.replace("[['10.0.0.1', '10.0.0.2', '10.0.0.3:9866']]", "[[1]]"),
            "lowering of /cool: a block's holders hold a non-string"},
        {LOWERING.replace("[['10.0.0.1', '10.0.0.2', '10.0.0.3:9866']]",
            "[['10.0.0.1', '10.0.0.1']]"),
            "lowering of /cool: a block's holders name a node twice"},
        {LOWERING.replace("'/cool': {", "'/cool': 3, 'x': {"),
            "lowering of /cool is not an object"},
    };
    for (String[] c : cases) {
      MalformedHeatException e = assertThrows(MalformedHeatException.class,
          () -> HeatDocument.parse(json(c[0])), c[0]);
      assertTrue(e.getMessage().contains(c[1]), e.getMessage() + " should name " + c[1]);
      assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }
  }
}
