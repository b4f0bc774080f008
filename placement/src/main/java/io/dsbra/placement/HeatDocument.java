package io.dsbra.placement;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * One heat document as the dsbra daemon publishes it every round (docs/placement.md):
 * <pre>
 * {"format": "dsbra-heat", "version": 1, "generated_ms": 1764100000000, "round": 12,
 *  "nodes": {"10.82.0.11": 0.31, ...}, "raised": ["/data/hot", ...], "lowered": [...]}
 * </pre>
 * {@code nodes}: each live DataNode's heat (DSBRA's DNAvg: the mean replication factor RF of
 * the blocks it holds), keyed by the name the daemon knows it by (WebHDFS's hostName);
 * {@code raised}: the files whose replication dsbra holds above their base. Optional:
 * {@code blocks}, the round's blocks each node holds, and {@code rf}, the RF of each file
 * raised this round, so that each copy placed adds its RF to its node's heat as DNAvg would
 * (a round's copies then spread instead of all going to the one coolest node). Immutable.
 */
public final class HeatDocument {
  public static final String FORMAT = "dsbra-heat";
  public static final int VERSION = 1;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final long generatedMs;
  private final long round;
  private final Map<String, Double> heat;
  private final Set<String> raised;
  private final Map<String, Double> blocks;
  private final Map<String, Double> rf;

  HeatDocument(long generatedMs, long round, Map<String, Double> heat, Set<String> raised,
      Map<String, Double> blocks, Map<String, Double> rf) {
    this.generatedMs = generatedMs;
    this.round = round;
    this.heat = Collections.unmodifiableMap(heat);
    this.raised = Collections.unmodifiableSet(raised);
    this.blocks = Collections.unmodifiableMap(blocks);
    this.rf = Collections.unmodifiableMap(rf);
  }

  /** Parses a document; {@link MalformedHeatException} names the first problem found. */
  public static HeatDocument parse(byte[] body) {
    JsonNode root;
    try {
      root = JSON.readTree(body);
    } catch (IOException e) {
      throw new MalformedHeatException("not JSON: " + firstLine(e.getMessage()));
    }
    if (root == null || !root.isObject()) {
      throw new MalformedHeatException("not a JSON object");
    }
    if (!FORMAT.equals(root.path("format").asText(null))) {
      throw new MalformedHeatException("format is not \"" + FORMAT + "\"");
    }
    JsonNode version = root.path("version");
    if (!version.isInt() || version.asInt() != VERSION) {
      throw new MalformedHeatException("version " + version + " is not " + VERSION);
    }
    JsonNode generated = root.path("generated_ms");
    if (!generated.isIntegralNumber() || generated.asLong() <= 0) {
      throw new MalformedHeatException("generated_ms is not a positive integer");
    }
    JsonNode nodes = root.path("nodes");
    if (!nodes.isObject()) {
      throw new MalformedHeatException("nodes is not an object");
    }
    Map<String, Double> heat = numbers(nodes, "heat of ");
    Set<String> raised = new HashSet<>();
    JsonNode files = root.path("raised");
    if (!files.isMissingNode()) {
      if (!files.isArray()) {
        throw new MalformedHeatException("raised is not a list");
      }
      for (JsonNode f : files) {
        if (!f.isTextual()) {
          throw new MalformedHeatException("raised holds a non-string");
        }
        raised.add(f.asText());
      }
    }
    Map<String, Double> blocks = new HashMap<>();
    Map<String, Double> rf = new HashMap<>();
    for (String optional : new String[] {"blocks", "rf"}) {
      JsonNode m = root.path(optional);
      if (m.isMissingNode()) {
        continue;
      }
      if (!m.isObject()) {
        throw new MalformedHeatException(optional + " is not an object");
      }
      (optional.equals("blocks") ? blocks : rf).putAll(numbers(m, optional + " of "));
    }
    return new HeatDocument(generated.asLong(), root.path("round").asLong(0), heat, raised,
        blocks, rf);
  }

  private static Map<String, Double> numbers(JsonNode object, String what) {
    Map<String, Double> out = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = object.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      double v = e.getValue().asDouble(Double.NaN);
      if (!e.getValue().isNumber() || Double.isNaN(v) || Double.isInfinite(v) || v < 0) {
        throw new MalformedHeatException(what + e.getKey() + " is not a number >= 0");
      }
      out.put(e.getKey(), v);
    }
    return out;
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "unreadable";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  public long generatedMs() {
    return generatedMs;
  }

  public long round() {
    return round;
  }

  public int nodeCount() {
    return heat.size();
  }

  /** The heat published for the first of {@code names} the document knows, else null. */
  public Double heatOf(String... names) {
    return firstOf(heat, names);
  }

  /** The round's blocks on the first of {@code names} the document knows, else null. */
  public Double blocksOf(String... names) {
    return firstOf(blocks, names);
  }

  private static Double firstOf(Map<String, Double> byNode, String... names) {
    for (String n : names) {
      Double v = n == null ? null : byNode.get(n);
      if (v != null) {
        return v;
      }
    }
    return null;
  }

  /** The RF of a file raised this round; others (raised before): the hottest node's heat. */
  public double rfOf(String path) {
    Double v = path == null ? null : rf.get(path);
    if (v != null) {
      return v;
    }
    double max = 0;
    for (double h : heat.values()) {
      max = Math.max(max, h);
    }
    return max;
  }

  public int raisedCount() {
    return raised.size();
  }

  public boolean isRaised(String path) {
    return path != null && raised.contains(path);
  }
}
