package org.apache.hadoop.hdfs.server.blockmanagement;

import io.dsbra.placement.HeatSource;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.net.DFSNetworkTopology;
import org.apache.hadoop.hdfs.protocol.BlockStoragePolicy;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.server.protocol.DatanodeStorage;
import org.apache.hadoop.hdfs.server.protocol.StorageReport;
import org.apache.hadoop.net.NetworkTopology;
import org.apache.hadoop.net.Node;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * The plugin's cost per NameNode call against BlockPlacementPolicyDefault's, side by side on one
 * synthetic topology (benchmarks/bench_placement_speed.py runs it; not a test). Each round times
 * CALLS calls of every operation with each policy, alternating which goes first, and prints one
 * JSON line per round and operation: {"round", "op", "default_ns", "heat_ns"} (ns per call).
 *
 * <p>Usage: PlacementSpeed NODES RACKS ROUNDS CALLS HEAT_FILE
 */
public class PlacementSpeed {
  static final long GB = 1L << 30;
  static final long BLOCK = 128L << 20;
  static final String[] OPS = {"delete-lowered", "delete-other", "replicate-raised",
      "replicate-other", "write"};

  final List<DatanodeStorageInfo> storages = new ArrayList<>();
  final int racks;
  final BlockStoragePolicy storagePolicy =
      BlockStoragePolicySuite.createDefaultSuite().getDefaultPolicy();
  long sink;  // keeps the JIT from dropping the calls

  PlacementSpeed(int racks) {
    this.racks = racks;
  }

  public static void main(String[] args) throws Exception {
    int nodes = Integer.parseInt(args[0]);
    int racks = Integer.parseInt(args[1]);
    int rounds = Integer.parseInt(args[2]);
    int calls = Integer.parseInt(args[3]);
    Path heatFile = Paths.get(args[4]);
    PlacementSpeed bench = new PlacementSpeed(racks);
    Configuration conf = new HdfsConfiguration();
    conf.setBoolean(DFSConfigKeys.DFS_NAMENODE_REDUNDANCY_CONSIDERLOAD_KEY, false);
    NetworkTopology topology = bench.topology(conf, nodes);
    BlockPlacementPolicyDefault standard = new BlockPlacementPolicyDefault();
    standard.initialize(conf, new Stats(nodes), topology, new Host2NodesMap());
    BlockPlacementPolicyDsbraHeat plugin = new BlockPlacementPolicyDsbraHeat();
    plugin.initialize(conf, new Stats(nodes), topology, new Host2NodesMap());
    bench.writeHeat(heatFile, nodes, calls);
    HeatSource source = new HeatSource(heatFile.toUri(), 1000, Long.MAX_VALUE / 4, System::currentTimeMillis);
    source.refresh();
    if (source.usable() == null) {
      throw new IllegalStateException("the heat document is not usable: " + source.state());
    }
    plugin.setHeatSource(source);
    for (int round = 0; round < rounds; round++) {
      for (String op : OPS) {
        long first;
        long second;
        if (round % 2 == 0) {
          first = bench.time(standard, op, calls);
          second = bench.time(plugin, op, calls);
        } else {
          second = bench.time(plugin, op, calls);
          first = bench.time(standard, op, calls);
        }
        System.out.printf("{\"round\": %d, \"op\": \"%s\", \"default_ns\": %.1f, \"heat_ns\": %.1f}%n",
            round, op, (double) first / calls, (double) second / calls);
      }
    }
    System.err.println("sink " + bench.sink);
  }

  /** Node i on rack i % racks, all with free space, so that any is a valid target. */
  NetworkTopology topology(Configuration conf, int nodes) {
    NetworkTopology topology = DFSNetworkTopology.getInstance(conf);
    for (int i = 0; i < nodes; i++) {
      DatanodeDescriptor dn = new DatanodeDescriptor(new DatanodeID("10." + (i >> 16) + "." + ((i >> 8) & 255)
          + "." + (i & 255), "h" + i, "uuid-" + i, 9866, 9864, 9865, 9867), "/r" + (i % racks));
      DatanodeStorage st = new DatanodeStorage("DS-" + i);
      DatanodeStorageInfo info = dn.updateStorage(st);
      long remaining = (10 + i % 7) * GB;
      dn.updateHeartbeat(new StorageReport[] {
          new StorageReport(st, false, 20 * GB, 20 * GB - remaining, remaining, 0, 0)}, 0L, 0L, 0, 0, null);
      topology.add(dn);
      storages.add(info);
    }
    return topology;
  }

  /**
   * A heat for every node (the daemon's names: WebHDFS hostName), one raised file, and one file
   * lowered to 3 whose blocks are those of the first {@code blocks} calls.
   */
  void writeHeat(Path file, int nodes, int blocks) throws Exception {
    Random random = new Random(1);
    StringBuilder doc = new StringBuilder("{\"format\": \"dsbra-heat\", \"version\": 1, \"generated_ms\": ")
        .append(System.currentTimeMillis()).append(", \"round\": 1, \"nodes\": {");
    for (int i = 0; i < nodes; i++) {
      doc.append(i == 0 ? "" : ", ").append("\"h").append(i).append("\": ").append(random.nextDouble());
    }
    doc.append("}, \"raised\": [\"/raised\"], \"lowering\": {\"/lowered\": {\"replication\": 3, "
        + "\"holders\": [");
    for (int k = 0; k < blocks; k++) {
      doc.append(k == 0 ? "[" : ", [");
      List<DatanodeStorageInfo> held = holders(k);
      for (int i = 0; i < held.size(); i++) {
        doc.append(i == 0 ? "\"" : ", \"").append(held.get(i).getDatanodeDescriptor().getHostName()).append('"');
      }
      doc.append(']');
    }
    doc.append("]}}}");
    Files.write(file, doc.toString().getBytes(StandardCharsets.UTF_8));
  }

  /** Four holders of call k's block: two on one rack, two on the next. */
  List<DatanodeStorageInfo> holders(int k) {
    int n = storages.size();
    int base = (int) ((k * 7919L) % n);
    List<DatanodeStorageInfo> held = new ArrayList<>();
    for (int offset : new int[] {0, racks, 1, 1 + racks}) {
      held.add(storages.get((base + offset) % n));
    }
    return held;
  }

  long time(BlockPlacementPolicyDefault policy, String op, int calls) {
    long started = System.nanoTime();
    for (int k = 0; k < calls; k++) {
      sink += call(policy, op, k);
    }
    return System.nanoTime() - started;
  }

  int call(BlockPlacementPolicyDefault policy, String op, int k) {
    List<DatanodeStorageInfo> held = holders(k);
    switch (op) {
      case "delete-lowered": {  // a block of the lowered file: by heat
        List<StorageType> excess = new ArrayList<>(Collections.singletonList(StorageType.DISK));
        return policy.chooseReplicasToDelete(held, held, 3, excess, null, null).size();
      }
      case "delete-other": {  // the same holders down to 2: another file's, the default's
        List<StorageType> excess = new ArrayList<>(Collections.nCopies(2, StorageType.DISK));
        return policy.chooseReplicasToDelete(held, held, 2, excess, null, null).size();
      }
      case "replicate-raised":
      case "replicate-other": {
        List<DatanodeStorageInfo> chosen = held.subList(0, 3);
        Set<Node> excluded = new HashSet<>();
        for (DatanodeStorageInfo s : chosen) {
          excluded.add(s.getDatanodeDescriptor());
        }
        String path = op.equals("replicate-raised") ? "/raised" : "/other";
        return policy.chooseTarget(path, 1, chosen.get(0).getDatanodeDescriptor(), new ArrayList<>(chosen),
            false, excluded, BLOCK, storagePolicy, null).length;
      }
      default:  // a new file's first block, written from a DataNode
        return policy.chooseTarget("/new", 3, held.get(0).getDatanodeDescriptor(), new ArrayList<>(), false,
            new HashSet<>(), BLOCK, storagePolicy, null).length;
    }
  }

  static class Stats implements FSClusterStats {
    final int nodes;

    Stats(int nodes) {
      this.nodes = nodes;
    }

    @Override public int getTotalLoad() { return 0; }
    @Override public boolean isAvoidingStaleDataNodesForWrite() { return false; }
    @Override public int getNumDatanodesInService() { return nodes; }
    @Override public double getInServiceXceiverAverage() { return 0; }
    @Override public double getInServiceXceiverAverageForVolume() { return 0; }
    @Override public Map<StorageType, StorageTypeStats> getStorageTypeStats() { return new HashMap<>(); }
  }
}
