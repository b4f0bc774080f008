package io.dsbra.placement;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

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
    };
    for (String[] c : cases) {
      MalformedHeatException e = assertThrows(MalformedHeatException.class,
          () -> HeatDocument.parse(json(c[0])), c[0]);
      assertTrue(e.getMessage().contains(c[1]), e.getMessage() + " should name " + c[1]);
      assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }
  }
}
