package io.dsbra.placement;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One heat document as the dsbra daemon publishes it every round (docs/placement.md):
 * <pre>
 * {"format": "dsbra-heat", "version": 1, "generated_ms": 1764100000000, "round": 12,
 *  "interval_ms": 60000, "lead_ms": 6000,
 *  "nodes": {"10.82.0.11": 0.31, ...}, "raised": ["/data/hot", ...], "lowered": [...],
 *  "lowering": {"/data/warm": {"replication": 1, "holders": [["10.82.0.11", "10.82.0.12"]]}}}
 * </pre>
 * {@code nodes}: each live DataNode's heat (DSBRA's DNAvg: the mean replication factor RF of
 * the blocks it holds), keyed by the name the daemon knows it by (WebHDFS's hostName);
 * {@code raised}: the files whose replication dsbra holds above their base. Optional:
 * {@code blocks}, the round's blocks each node holds, and {@code rf}, the RF of each file
 * raised this round, so that each copy placed adds its RF to its node's heat as DNAvg would
 * (a round's copies then spread instead of all going to the one coolest node);
 * {@code lowering}, each file lowered this round: its new replication and, per block that loses
 * a replica, the DataNodes holding it (only such a block's deletion goes by heat, see
 * {@link #loweringOf}); {@code interval_ms} and {@code lead_ms}, the daemon's round (see
 * {@link #maxAgeMs}). Immutable.
 */
public final class HeatDocument {
  public static final String FORMAT = "dsbra-heat";
  public static final int VERSION = 1;
  private static final ObjectMapper JSON = new ObjectMapper();
  /** A document outlives this many of the daemon's rounds, unless the plugin's conf says. */
  public static final int USABLE_ROUNDS = 3;
  /** A document without the daemon's round: three of its default 60 s rounds. */
  public static final long MAX_AGE_MS_WITHOUT_INTERVAL = 180_000;

  private final long generatedMs;
  private final long round;
  private final Map<String, Double> heat;
  private final Set<String> raised;
  private final Map<String, Double> blocks;
  private final Map<String, Double> rf;
  private final long intervalMs;
  private final long leadMs;
  /** Per lowered block, [replication, its holders' names sorted]: the file lowered. */
  private final Map<List<String>, String> lowering;
  /** Every name the lowering's holders use. */
  private final Set<String> holderNames;
  /** Per lowered block, its replication and number of holders (see {@link #shape}). */
  private final Set<Long> shapes;
  private final int loweringCount;

  HeatDocument(long generatedMs, long round, Map<String, Double> heat, Set<String> raised,
      Map<String, Double> blocks, Map<String, Double> rf, long intervalMs, long leadMs,
      Map<List<String>, String> lowering) {
    this.generatedMs = generatedMs;
    this.round = round;
    this.heat = Collections.unmodifiableMap(heat);
    this.raised = Collections.unmodifiableSet(raised);
    this.blocks = Collections.unmodifiableMap(blocks);
    this.rf = Collections.unmodifiableMap(rf);
    this.intervalMs = intervalMs;
    this.leadMs = leadMs;
    this.lowering = Collections.unmodifiableMap(lowering);
    Set<String> names = new HashSet<>();
    Set<Long> shapes = new HashSet<>();
    for (List<String> key : lowering.keySet()) {
      names.addAll(key.subList(1, key.size()));
      shapes.add(shape(Integer.parseInt(key.get(0)), key.size() - 1));
    }
    this.holderNames = Collections.unmodifiableSet(names);
    this.shapes = Collections.unmodifiableSet(shapes);
    this.loweringCount = new HashSet<>(lowering.values()).size();
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
        blocks, rf, optionalMillis(root, "interval_ms", 1), optionalMillis(root, "lead_ms", 0),
        lowering(root));
  }

  /** An optional integer of milliseconds, at least {@code min}; 0 when absent. */
  private static long optionalMillis(JsonNode root, String key, long min) {
    JsonNode v = root.path(key);
    if (v.isMissingNode()) {
      return 0;
    }
    if (!v.isIntegralNumber() || v.asLong() < min) {
      throw new MalformedHeatException(key + " is not an integer >= " + min);
    }
    return v.asLong();
  }

  /** The optional lowering, as {@link #lowering} keys it. */
  private static Map<List<String>, String> lowering(JsonNode root) {
    Map<List<String>, String> out = new HashMap<>();
    JsonNode files = root.path("lowering");
    if (files.isMissingNode()) {
      return out;
    }
    if (!files.isObject()) {
      throw new MalformedHeatException("lowering is not an object");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = files.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> file = it.next();
      String what = "lowering of " + file.getKey();
      if (!file.getValue().isObject()) {
        throw new MalformedHeatException(what + " is not an object");
      }
      JsonNode replication = file.getValue().path("replication");
      if (!replication.isInt() || replication.asInt() < 1) {
        throw new MalformedHeatException(what + ": replication is not an integer >= 1");
      }
      JsonNode holders = file.getValue().path("holders");
      if (!holders.isArray()) {
        throw new MalformedHeatException(what + ": holders is not a list");
      }
      for (JsonNode block : holders) {
        if (!block.isArray()) {
          throw new MalformedHeatException(what + ": holders holds a non-list");
        }
        List<String> names = new ArrayList<>();
        for (JsonNode n : block) {
          if (!n.isTextual()) {
            throw new MalformedHeatException(what + ": a block's holders hold a non-string");
          }
          names.add(n.asText());
        }
        if (new HashSet<>(names).size() < names.size()) {
          throw new MalformedHeatException(what + ": a block's holders name a node twice");
        }
        out.putIfAbsent(key(replication.asInt(), names), file.getKey());
      }
    }
    return out;
  }

  /** [replication, names sorted]: a block's holders are a set. */
  private static List<String> key(int replication, List<String> names) {
    List<String> key = new ArrayList<>(names.size() + 1);
    key.add(Integer.toString(replication));
    List<String> sorted = new ArrayList<>(names);
    Collections.sort(sorted);
    key.addAll(sorted);
    return key;
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

  private static long shape(int replication, int holders) {
    return ((long) replication << 32) | holders;
  }

  /**
   * Whether a block of {@code holders} replicas lowered to {@code replication} may be one of
   * the lowering: a check on two numbers, so most deletions of other files cost no lookup.
   */
  public boolean mayBeLowering(int replication, int holders) {
    return shapes.contains(shape(replication, holders));
  }

  /**
   * The file this round lowers to {@code replication} one of whose blocks the daemon saw on
   * exactly {@code holders} (each a DataNode's names, e.g. host name, IP, IP:port: the document
   * may use any, the same one throughout, as the daemon does), else null. HDFS's deletion call
   * is told only the holders and the replication wanted, not the block: this is how a deletion
   * is told to be dsbra's.
   */
  public String loweringOf(int replication, List<String[]> holders) {
    List<String> names = new ArrayList<>(holders.size());
    for (String[] node : holders) {
      String name = null;
      for (String n : node) {
        if (n != null && holderNames.contains(n)) {
          name = n;
          break;
        }
      }
      if (name == null) {
        return null;
      }
      names.add(name);
    }
    return lowering.get(key(replication, names));
  }

  /** How many files the round lowers (that have a block losing a replica). */
  public int loweringCount() {
    return loweringCount;
  }

  /**
   * How long after {@code generated_ms} the document is used when the plugin's conf sets no
   * max age: {@link #USABLE_ROUNDS} of the daemon's rounds, each its window
   * ({@code interval_ms}) and the lead before it acts ({@code lead_ms}); without
   * {@code interval_ms}, {@link #MAX_AGE_MS_WITHOUT_INTERVAL}.
   */
  public long maxAgeMs() {
    return intervalMs > 0 ? USABLE_ROUNDS * (intervalMs + leadMs) : MAX_AGE_MS_WITHOUT_INTERVAL;
  }
}
