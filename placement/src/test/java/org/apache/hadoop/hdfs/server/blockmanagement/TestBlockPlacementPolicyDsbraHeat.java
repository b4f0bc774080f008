package org.apache.hadoop.hdfs.server.blockmanagement;

import io.dsbra.placement.HeatSource;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.protocol.BlockStoragePolicy;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.server.protocol.DatanodeStorage;
import org.apache.hadoop.hdfs.server.protocol.StorageReport;
import org.apache.hadoop.hdfs.net.DFSNetworkTopology;
import org.apache.hadoop.net.NetworkTopology;
import org.apache.hadoop.net.Node;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;
import org.apache.log4j.WriterAppender;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The policy's choices on a synthetic topology: six DataNodes, d1-d3 on /r1, d4-d6 on /r2,
 * the heat a test writes, the default policy's own rules around it.
 */
class TestBlockPlacementPolicyDsbraHeat {
  static final long GB = 1L << 30;
  static final long BLOCK = 8L << 20;

  @TempDir
  Path dir;

  final AtomicLong now = new AtomicLong(System.currentTimeMillis());
  Path heatFile;
  HeatSource source;
  BlockPlacementPolicyDsbraHeat policy;
  /** HDFS's own policy on the same DataNodes: what every deletion not by heat must equal. */
  BlockPlacementPolicyDefault hdfs;
  NetworkTopology topology;
  final Map<String, DatanodeStorageInfo> storages = new LinkedHashMap<>();

  @BeforeEach
  void cluster() {
    Configuration conf = new HdfsConfiguration();
    conf.setBoolean(DFSConfigKeys.DFS_NAMENODE_REDUNDANCY_CONSIDERLOAD_KEY, false);
    topology = DFSNetworkTopology.getInstance(conf);
    for (int i = 1; i <= 6; i++) {
      String rack = i <= 3 ? "/r1" : "/r2";
      DatanodeDescriptor dn = new DatanodeDescriptor(
          new DatanodeID("10.0.0." + i, "d" + i, "uuid-" + i, 9866, 9864, 9865, 9867), rack);
      DatanodeStorage st = new DatanodeStorage("DS-" + i);
      DatanodeStorageInfo info = dn.updateStorage(st);
      heartbeat(info, 0);
      topology.add(dn);
      storages.put("d" + i, info);
    }
    policy = new BlockPlacementPolicyDsbraHeat();
    policy.initialize(conf, new NoLoad(), topology, new Host2NodesMap());
    hdfs = new BlockPlacementPolicyDefault();
    hdfs.initialize(conf, new NoLoad(), topology, new Host2NodesMap());
    heatFile = dir.resolve("heat.json");
    source = new HeatSource(heatFile.toUri(), 1000, 60_000, now::get);
    policy.setHeatSource(source);
  }

  /** A heartbeat with {@code xceivers} open transfers; d1 has the least free space (the
   *  default policy's choice of a replica to delete). */
  static void heartbeat(DatanodeStorageInfo info, int xceivers) {
    DatanodeDescriptor dn = info.getDatanodeDescriptor();
    long remaining = (dn.getHostName().equals("d1") ? 5 : 10) * GB;
    dn.updateHeartbeat(new StorageReport[] {new StorageReport(new DatanodeStorage(
        info.getStorageID()), false, 20 * GB, 20 * GB - remaining, remaining, 0, 0)},
        0L, 0L, xceivers, 0, null);
  }

  /** Publishes heat as the daemon does: d<i> -> heat, the raised files. */
  void heat(long round, Map<String, Double> heat, String... raised) throws IOException {
    heatWith(round, heat, "", raised);
  }

  /** ``extra``: more members of the document, e.g. the optional blocks and rf. */
  void heatWith(long round, Map<String, Double> heat, String extra, String... raised)
      throws IOException {
    StringBuilder nodes = new StringBuilder();
    for (Map.Entry<String, Double> e : heat.entrySet()) {
      nodes.append(nodes.length() == 0 ? "" : ", ").append('"').append(e.getKey()).append("\": ")
          .append(e.getValue());
    }
    StringBuilder files = new StringBuilder();
    for (String f : raised) {
      files.append(files.length() == 0 ? "" : ", ").append('"').append(f).append('"');
    }
    String doc = "{\"format\": \"dsbra-heat\", \"version\": 1, \"generated_ms\": " + now.get()
        + ", \"round\": " + round + ", \"nodes\": {" + nodes + "}, \"raised\": [" + files + "]"
        + extra + "}";
    Files.write(heatFile, doc.getBytes(StandardCharsets.UTF_8));
    source.refresh();
  }

  static Map<String, Double> heats(double... byNode) {
    Map<String, Double> m = new LinkedHashMap<>();
    for (int i = 0; i < byNode.length; i++) {
      m.put("d" + (i + 1), byNode[i]);  // the daemon's names: WebHDFS's hostName
    }
    return m;
  }

  /**
   * The "lowering" member of a document: {@code "/path", replication, "d1 d2 d3", ...}, each
   * string after a replication one block's holders.
   */
  static String lowering(Object... files) {
    StringBuilder out = new StringBuilder(", \"lowering\": {");
    for (int i = 0; i < files.length; ) {
      out.append(i == 0 ? "" : ", ").append('"').append(files[i++]).append("\": {")
          .append("\"replication\": ").append(files[i++]).append(", \"holders\": [");
      for (boolean first = true; i < files.length && files[i] instanceof String
          && !((String) files[i]).startsWith("/"); first = false) {
        out.append(first ? "" : ", ").append("[\"")
            .append(String.join("\", \"", ((String) files[i++]).split(" "))).append("\"]");
      }
      out.append("]}");
    }
    return out.append("}").toString();
  }

  /** The node the policy deletes from, of a block held by {@code holders} lowered by one. */
  String delete(String... holders) {
    List<String> out = deletes(policy, holders.length - 1, holders);
    assertEquals(1, out.size());
    return out.get(0);
  }

  /** The nodes {@code p} deletes from, in its order, of a block held by {@code holders}. */
  List<String> deletes(BlockPlacementPolicyDefault p, int replication, String... holders) {
    List<DatanodeStorageInfo> held = new ArrayList<>();
    for (String h : holders) {
      held.add(storages.get(h));
    }
    List<StorageType> excess = new ArrayList<>(
        Collections.nCopies(holders.length - replication, StorageType.DISK));
    List<String> out = new ArrayList<>();
    for (DatanodeStorageInfo s : p.chooseReplicasToDelete(held, held, replication, excess, null,
        null)) {
      out.add(s.getDatanodeDescriptor().getHostName());
    }
    return out;
  }

  /** The policy deletes exactly what HDFS's default does, in the same order. */
  void assertDefault(int replication, String... holders) {
    assertEquals(deletes(hdfs, replication, holders), deletes(policy, replication, holders),
        "HDFS's default for " + Arrays.toString(holders) + " down to " + replication);
  }

  /** The node the policy places one new copy of {@code path}'s block on. */
  String place(String path, String... holders) {
    List<DatanodeStorageInfo> chosen = new ArrayList<>();
    Set<Node> excluded = new HashSet<>();
    for (String h : holders) {
      chosen.add(storages.get(h));
      excluded.add(storages.get(h).getDatanodeDescriptor());  // as BlockManager passes them
    }
    BlockStoragePolicy storagePolicy = BlockStoragePolicySuite.createDefaultSuite()
        .getDefaultPolicy();
    DatanodeStorageInfo[] targets = policy.chooseTarget(path, 1,
        chosen.get(0).getDatanodeDescriptor(), chosen, false, excluded, BLOCK, storagePolicy,
        null);
    assertEquals(1, targets.length);
    return targets[0].getDatanodeDescriptor().getHostName();
  }

  @Test
  void deletesFromTheHottestHolder() throws IOException {
    heatWith(1, heats(0.1, 0.9, 0.5, 0.2, 0.3, 0.4),
        lowering("/a", 2, "d1 d2 d3", "/b", 2, "d4 d5 d6"));
    assertEquals("d2", delete("d1", "d2", "d3"));
    assertEquals("d6", delete("d4", "d5", "d6"));
  }

  @Test
  void keepsTheDefaultRackRule() throws IOException {
    // d1, d2 on /r1 and d4 on /r2: the default deletes from the rack holding two, so d4
    // (hottest, alone on its rack) keeps its replica; d2 is the hotter of the two on /r1
    heatWith(1, heats(0.1, 0.5, 0.0, 0.9, 0.0, 0.0), lowering("/a", 2, "d1 d2 d4"));
    assertEquals("d2", delete("d1", "d2", "d4"));
  }

  @Test
  void aHolderThatStoppedHeartbeatingGoesFirstAsInTheDefault() throws IOException {
    heatWith(1, heats(0.1, 0.9, 0.5, 0, 0, 0), lowering("/a", 2, "d1 d2 d3"));
    storages.get("d3").getDatanodeDescriptor().setLastUpdateMonotonic(0);
    assertEquals("d3", delete("d1", "d2", "d3"));
  }

  @Test
  void withoutUsableHeatTheDefaultChooses() throws IOException {
    // the default: least free space, d1, whatever the heat says
    assertEquals("d1", delete("d1", "d2", "d3"));  // nothing published yet
    heatWith(1, heats(0.1, 0.9, 0.5, 0, 0, 0), lowering("/a", 2, "d1 d2 d3"));
    assertEquals("d2", delete("d1", "d2", "d3"));
    now.addAndGet(60_001);  // stale
    assertEquals("d1", delete("d1", "d2", "d3"));
    Files.write(heatFile, "{\"format\": \"dsbra-heat\", \"version\": 1".getBytes());
    source.refresh();  // malformed
    assertEquals("d1", delete("d1", "d2", "d3"));
    Files.delete(heatFile);
    source.refresh();  // missing
    assertEquals("d1", delete("d1", "d2", "d3"));
  }

  @Test
  void equallyHotFilesKeepTheirLastReplicasOnDifferentNodes() throws IOException {
    // four files on d2 and d3, equally hot: the default would leave every last replica on
    // the node with more free space; the spread alternates between them
    heatWith(1, heats(0, 0.5, 0.5, 0, 0, 0),
        lowering("/a", 1, "d2 d3", "/b", 1, "d2 d3", "/c", 1, "d2 d3", "/d", 1, "d2 d3"));
    Map<String, Integer> survivors = new HashMap<>();
    for (int f = 0; f < 4; f++) {
      String gone = delete("d2", "d3");
      survivors.merge(gone.equals("d2") ? "d3" : "d2", 1, Integer::sum);
    }
    assertEquals(2, survivors.get("d2"));
    assertEquals(2, survivors.get("d3"));
  }

  @Test
  void deletesByHeatOnlyABlockOfALoweringElseExactlyAsTheDefault() throws IOException {
    // d2 the hottest, d1 the default's choice (least free space) and the coolest: in every
    // case below heat would delete from another node first
    heatWith(1, heats(0.1, 0.9, 0.5, 0.2, 0.3, 0.4),
        lowering("/warm", 2, "d1 d2 d3", "d4 d5 d6", "/cool", 1, "d1 d2"));
    assertEquals(Arrays.asList("d2"), deletes(policy, 2, "d1", "d2", "d3"));  // /warm's block
    assertEquals(Arrays.asList("d2"), deletes(policy, 1, "d1", "d2"));  // /cool's
    assertEquals(Arrays.asList("d1"), deletes(hdfs, 2, "d1", "d2", "d3"));
    // the same holders down to another replication: a file dsbra did not lower
    assertDefault(1, "d1", "d2", "d3");
    assertDefault(2, "d1", "d2");
    // holders no lowering lists: fewer, more, others, or a block on the same nodes plus one
    assertDefault(1, "d1", "d3");
    assertDefault(2, "d1", "d2", "d4");
    assertDefault(3, "d1", "d2", "d3", "d4");
    // a document without lowering steers no deletion at all
    heat(2, heats(0.1, 0.9, 0.5, 0.2, 0.3, 0.4));
    assertDefault(2, "d1", "d2", "d3");
    assertDefault(1, "d1", "d2");
  }

  @Test
  void aLoweringsHoldersMatchByHostNameIpOrIpAndTransferPort() throws IOException {
    heatWith(1, heats(0.1, 0.9, 0.5, 0, 0, 0), lowering("/a", 2, "10.0.0.1:9866 10.0.0.2 d3"));
    assertEquals("d2", delete("d1", "d2", "d3"));
    heatWith(2, heats(0.1, 0.9, 0.5, 0, 0, 0), lowering("/a", 2, "10.0.0.1:9999 10.0.0.2 d3"));
    assertDefault(2, "d1", "d2", "d3");  // another port: another DataNode
  }

  @Test
  void aLoweringOfSeveralReplicasGoesHottestFirstEachTime() throws IOException {
    heatWith(1, heats(0.1, 0.9, 0.5, 0.7, 0, 0), lowering("/a", 1, "d1 d2 d3 d4"));
    // d1-d3 on /r1, d4 on /r2: the rack rule takes from /r1 while it holds two or more, d2
    // then d3 by heat; then of d1 and d4 the hotter, d4 (the default: d1 first)
    assertEquals(Arrays.asList("d2", "d3", "d4"), deletes(policy, 1, "d1", "d2", "d3", "d4"));
    assertEquals("d1", deletes(hdfs, 1, "d1", "d2", "d3", "d4").get(0));
  }

  @Test
  void theLogSaysWhichPathEachDeletionTook() throws IOException {
    String log = debugLog(() -> {
      delete("d1", "d2", "d3");
      heatWith(4, heats(0.1, 0.9, 0.5, 0, 0, 0), lowering("/warm", 2, "d1 d2 d3"));
      delete("d1", "d2", "d3");
      deletes(policy, 1, "d1", "d2", "d3");
    });
    // what an operator reads with the plugin's logger at DEBUG, and the integration test parses
    assertEquals(Arrays.asList(
        "dsbra heat unusable: deletion from [d1] by HDFS's default (holders [d1, d2, d3] down"
            + " to 2)",
        "dsbra heat round 4 deletion from [d2] by heat, a lowering of /warm (holders [d1, d2, d3]"
            + " down to 2)",
        "dsbra heat round 4 deletion from [d1, d2] by HDFS's default, no lowering of the heat"
            + " document (holders [d1, d2, d3] down to 1)"),
        Arrays.asList(log.split("\n")));
  }

  interface Action {
    void run() throws IOException;
  }

  /** What the plugin logs, at DEBUG, while {@code action} runs. */
  static String debugLog(Action action) throws IOException {
    StringWriter log = new StringWriter();
    Logger logger = Logger.getLogger(BlockPlacementPolicyDsbraHeat.class);
    WriterAppender appender = new WriterAppender(new PatternLayout("%m%n"), log);
    logger.addAppender(appender);
    logger.setLevel(Level.DEBUG);
    try {
      action.run();
    } finally {
      logger.removeAppender(appender);
    }
    return log.toString();
  }

  @Test
  void placesARaisedFilesCopyOnTheLeastHeatedNodeTheRackRuleAllows() throws IOException {
    // one replica on d1 (/r1): the default puts the second on another rack; of /r2 the
    // least heated is d5, though d3 on /r1 is cooler still
    heat(1, heats(0.9, 0.8, 0.0, 0.4, 0.1, 0.3), "/hot");
    for (int i = 0; i < 10; i++) {
      assertEquals("d5", place("/hot", "d1"));
    }
    // two replicas on two racks already: the default puts the third on the source's rack
    // (d1's, /r1); of it the least heated is d3
    for (int i = 0; i < 10; i++) {
      assertEquals("d3", place("/hot", "d1", "d4"));
    }
  }

  @Test
  void theCoolestNodeHdfsFindsTooBusyIsPassedOverForTheNextCoolest() throws IOException {
    Configuration conf = new HdfsConfiguration();  // the load rule on, as HDFS ships it
    policy = new BlockPlacementPolicyDsbraHeat();
    policy.initialize(conf, new Load(1.0), topology, new Host2NodesMap());
    policy.setHeatSource(source);
    heartbeat(storages.get("d5"), 3);  // above twice the cluster's average of 1
    // holder d1 (/r1): the copy goes to /r2, where d5 is the coolest, then d6
    heat(1, heats(0.9, 0.8, 0.0, 0.4, 0.1, 0.3), "/hot");
    String log = debugLog(() -> {
      for (int i = 0; i < 10; i++) {
        assertEquals("d6", place("/hot", "d1"));
      }
    });
    // what an operator reads with the plugin's logger at DEBUG, and the end-to-end test parses
    assertTrue(log.contains("dsbra heat round 1 placed /hot on [d6] (coolest first; "
        + "HDFS's checks refused {d5=too busy (3 xceivers)})"), log);
    heartbeat(storages.get("d5"), 0);
    assertEquals("d5", place("/hot", "d1"));
  }

  @Test
  void aRoundsCopiesSpreadAsEachAddsItsRfToItsNodesHeat() throws IOException {
    // holders d1 (/r1) and d4 (/r2): the default puts a third copy on the source's rack, /r1,
    // where d3 is the coolest and d2 next; each node holds 2 of the round's blocks and each
    // file's RF is 1, so a copy on d3 makes it (0 * 2 + 1) / 3 = 0.33, hotter than d2's 0.05:
    // the next copy goes to d2, then d3 again (d2 would be (0.1 + 1) / 3 = 0.37)
    heatWith(3, heats(0.5, 0.05, 0.0, 0.5, 0.5, 0.5),
        ", \"blocks\": {\"d1\": 2, \"d2\": 2, \"d3\": 2, \"d4\": 2, \"d5\": 2, \"d6\": 2},"
            + " \"rf\": {\"/a\": 1, \"/b\": 1, \"/c\": 1}", "/a", "/b", "/c");
    assertEquals("d3", place("/a", "d1", "d4"));
    assertEquals("d2", place("/b", "d1", "d4"));
    assertEquals("d3", place("/c", "d1", "d4"));
    // a new round's document starts from its own heat again
    heatWith(4, heats(0.5, 0.05, 0.0, 0.5, 0.5, 0.5),
        ", \"blocks\": {\"d3\": 2}, \"rf\": {\"/a\": 1}", "/a");
    assertEquals("d3", place("/a", "d1", "d4"));
  }

  @Test
  void placesByHeatOnlyACopyOfARaisedFile() throws IOException {
    heat(1, heats(0.9, 0.8, 0.0, 0.4, 0.1, 0.3), "/hot");
    List<DatanodeStorageInfo> one = Arrays.asList(storages.get("d1"));
    assertTrue(policy.placesByHeat("/hot", one, false));
    assertFalse(policy.placesByHeat("/cold", one, false), "a file dsbra did not raise");
    assertFalse(policy.placesByHeat("/hot", Collections.emptyList(), false), "a new block");
    assertFalse(policy.placesByHeat("/hot", one, true), "pipeline recovery");
    now.addAndGet(60_001);
    assertFalse(policy.placesByHeat("/hot", one, false), "stale heat");
  }

  @Test
  void aPlacementWithNoEligibleNodeFailsAsTheDefaultDoes() throws IOException {
    heat(1, heats(0.9, 0.8, 0.0, 0.4, 0.1, 0.3), "/hot");
    List<DatanodeStorageInfo> all = new ArrayList<>(storages.values());
    Set<Node> excluded = new HashSet<>();
    for (DatanodeStorageInfo s : all) {
      excluded.add(s.getDatanodeDescriptor());
    }
    DatanodeStorageInfo[] targets = policy.chooseTarget("/hot", 1,
        all.get(0).getDatanodeDescriptor(), all, false, excluded, BLOCK,
        BlockStoragePolicySuite.createDefaultSuite().getDefaultPolicy(), null);
    assertEquals(0, targets.length);
    assertNotEquals(null, targets);
  }

  /** Cluster statistics with no load: the load check is off in most of these tests. */
  static class NoLoad extends Load {
    NoLoad() {
      super(0);
    }
  }

  /** Cluster statistics with {@code average} xceivers per DataNode. */
  static class Load implements FSClusterStats {
    final double average;

    Load(double average) {
      this.average = average;
    }

    @Override public int getTotalLoad() { return (int) (average * 6); }
    @Override public boolean isAvoidingStaleDataNodesForWrite() { return false; }
    @Override public int getNumDatanodesInService() { return 6; }
    @Override public double getInServiceXceiverAverage() { return average; }
    @Override public double getInServiceXceiverAverageForVolume() { return average; }
    @Override public Map<StorageType, StorageTypeStats> getStorageTypeStats() {
      return new HashMap<>();
    }
  }
}
