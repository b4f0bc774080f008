package org.apache.hadoop.hdfs.server.blockmanagement;

import io.dsbra.placement.HeatDocument;
import io.dsbra.placement.HeatSource;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.AddBlockFlag;
import org.apache.hadoop.hdfs.protocol.BlockStoragePolicy;
import org.apache.hadoop.net.NetworkTopology;
import org.apache.hadoop.net.Node;
import org.apache.hadoop.net.NodeBase;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

import static org.apache.hadoop.util.Time.monotonicNow;

/**
 * HDFS's default block placement, with DSBRA's two node choices (docs/placement.md):
 * <ul>
 * <li>an excess replica of a block of a file dsbra lowers goes from the hottest holder by
 *     dsbra's heat, among the holders the default policy would let lose one (the same rack
 *     rule; a holder that stopped heartbeating still goes first, as in the default); on equal
 *     heat the last replicas of a round's files are spread over different nodes. HDFS names
 *     neither the block nor its file to this choice: a block is dsbra's when its holders and
 *     the replication wanted match one of the document's lowering (see
 *     {@link #chooseReplicasToDelete}); every other deletion is the default's;</li>
 * <li>a new copy of a block of a file dsbra raised goes to the least heated nodes the default
 *     policy would consider (its rack rules and its checks on load, space and stale nodes
 *     still decide, only the random draw among candidates becomes "least heated").</li>
 * </ul>
 * Writes of new blocks and pipeline recovery are exactly the default. Without a usable heat
 * document (none configured, unreadable, malformed, stale) every choice is the default.
 * <p>
 * The class sits in Hadoop's blockmanagement package because
 * {@link BlockPlacementPolicy#initialize} takes the package-private Host2NodesMap, as
 * Hadoop's own AvailableSpaceBlockPlacementPolicy does.
 */
public class BlockPlacementPolicyDsbraHeat extends BlockPlacementPolicyDefault {
  private static final Logger LOG = LoggerFactory.getLogger(BlockPlacementPolicyDsbraHeat.class);

  /** Where the daemon publishes heat: file:///var/lib/dsbra/heat.json or http://host:port/heat. */
  public static final String HEAT_URI_KEY = "dsbra.placement.heat.uri";
  public static final String REFRESH_MS_KEY = "dsbra.placement.heat.refresh.ms";
  public static final long REFRESH_MS_DEFAULT = 5_000;
  public static final String TIMEOUT_MS_KEY = "dsbra.placement.heat.timeout.ms";
  public static final int TIMEOUT_MS_DEFAULT = 2_000;
  /**
   * Heat older than this is ignored (the daemon stopped or cannot reach the cluster). Unset:
   * a few of the daemon's rounds, as its document states them ({@link HeatDocument#maxAgeMs}).
   */
  public static final String MAX_AGE_MS_KEY = "dsbra.placement.heat.max-age.ms";

  /** Set while choosing targets for a raised file's block: chooseDataNode then goes by heat. */
  private static final ThreadLocal<HeatDocument> PLACING = new ThreadLocal<>();
  /** Set while deleting a lowered file's excess replicas: chooseReplicaToDelete goes by heat. */
  private static final ThreadLocal<HeatDocument> DELETING = new ThreadLocal<>();
  /**
   * While placing by heat: the nodes the default policy's checks refused, host to why (a
   * node too busy by HDFS's load rule is refused even when it is the coolest).
   */
  private static final ThreadLocal<Map<String, String>> REFUSED =
      ThreadLocal.withInitial(LinkedHashMap::new);

  /** Per DataNode uuid: {RF sum, copies} this plugin placed since the document's round. */
  private final Map<String, double[]> placed = new ConcurrentHashMap<>();
  private volatile long placedRound = Long.MIN_VALUE;

  private volatile HeatSource heat;
  /** Per DataNode uuid: blocks whose last replica a deletion of this round left there. */
  private final Map<String, Integer> lastReplicas = new ConcurrentHashMap<>();
  private volatile long spreadRound = Long.MIN_VALUE;

  @Override
  public void initialize(Configuration conf, FSClusterStats stats, NetworkTopology clusterMap,
      Host2NodesMap host2datanodeMap) {
    super.initialize(conf, stats, clusterMap, host2datanodeMap);
    String uri = conf.getTrimmed(HEAT_URI_KEY, "");
    if (uri.isEmpty()) {
      LOG.warn("{} is not set: default block placement", HEAT_URI_KEY);
      return;
    }
    URI parsed;
    try {
      parsed = new URI(uri);
      parsed.toURL();
    } catch (Exception e) {
      LOG.error("{}={} is not a file: or http(s): URI ({}): default block placement",
          HEAT_URI_KEY, uri, e.getMessage());
      return;
    }
    long maxAgeMs = conf.getLong(MAX_AGE_MS_KEY, HeatSource.BY_ROUNDS);
    HeatSource source = new HeatSource(parsed, conf.getInt(TIMEOUT_MS_KEY, TIMEOUT_MS_DEFAULT),
        maxAgeMs, System::currentTimeMillis);
    source.start(conf.getLong(REFRESH_MS_KEY, REFRESH_MS_DEFAULT));
    LOG.info("dsbra heat-aware placement: heat from {}, usable for {}", parsed,
        maxAgeMs > HeatSource.BY_ROUNDS ? maxAgeMs + " ms (" + MAX_AGE_MS_KEY + ")"
            : HeatDocument.USABLE_ROUNDS + " of the daemon's rounds");
    heat = source;
  }

  /** Tests give a source they refresh themselves. */
  void setHeatSource(HeatSource source) {
    heat = source;
  }

  private HeatDocument usableHeat() {
    HeatSource source = heat;
    return source == null ? null : source.usable();
  }

  @Override
  public DatanodeStorageInfo[] chooseTarget(String srcPath, int numOfReplicas, Node writer,
      List<DatanodeStorageInfo> chosen, boolean returnChosenNodes, Set<Node> excludedNodes,
      long blocksize, BlockStoragePolicy storagePolicy, EnumSet<AddBlockFlag> flags) {
    return chooseTarget(srcPath, numOfReplicas, writer, chosen, returnChosenNodes,
        excludedNodes, blocksize, storagePolicy, flags, null);
  }

  @Override
  public DatanodeStorageInfo[] chooseTarget(String srcPath, int numOfReplicas, Node writer,
      List<DatanodeStorageInfo> chosen, boolean returnChosenNodes, Set<Node> excludedNodes,
      long blocksize, BlockStoragePolicy storagePolicy, EnumSet<AddBlockFlag> flags,
      EnumMap<StorageType, Integer> storageTypes) {
    HeatDocument doc = placesByHeat(srcPath, chosen, returnChosenNodes) ? usableHeat() : null;
    if (doc == null) {
      return super.chooseTarget(srcPath, numOfReplicas, writer, chosen, returnChosenNodes,
          excludedNodes, blocksize, storagePolicy, flags, storageTypes);
    }
    PLACING.set(doc);
    Map<String, String> refused = REFUSED.get();
    refused.clear();
    DatanodeStorageInfo[] targets;
    try {
      targets = super.chooseTarget(srcPath, numOfReplicas, writer, chosen, returnChosenNodes,
          excludedNodes, blocksize, storagePolicy, flags, storageTypes);
    } finally {
      PLACING.remove();
    }
    if (LOG.isDebugEnabled()) {
      List<String> on = new ArrayList<>();
      for (DatanodeStorageInfo t : targets) {
        on.add(t.getDatanodeDescriptor().getHostName());
      }
      LOG.debug("dsbra heat round {} placed {} on {} (coolest first; HDFS's checks refused {})",
          doc.round(), srcPath, on, refused);
    }
    synchronized (placed) {
      if (doc.round() != placedRound) {
        placed.clear();
        placedRound = doc.round();
      }
      double rf = doc.rfOf(srcPath);
      for (DatanodeStorageInfo t : targets) {
        double[] sumAndCount = placed.computeIfAbsent(
            t.getDatanodeDescriptor().getDatanodeUuid(), k -> new double[2]);
        sumAndCount[0] += rf;
        sumAndCount[1] += 1;
      }
    }
    return targets;
  }

  /**
   * Whether a chooseTarget call is a new copy of a raised file's block, placed by heat:
   * re-replication has live replicas and asks only for new nodes; a new block's write has
   * none, pipeline recovery asks for the chosen nodes back: both stay the default.
   */
  boolean placesByHeat(String srcPath, List<DatanodeStorageInfo> chosen,
      boolean returnChosenNodes) {
    HeatDocument doc = usableHeat();
    return doc != null && !returnChosenNodes && chosen != null && !chosen.isEmpty()
        && doc.isRaised(srcPath);
  }

  @Override
  protected DatanodeDescriptor chooseDataNode(String scope, Collection<Node> excludedNodes) {
    HeatDocument doc = PLACING.get();
    return doc == null ? super.chooseDataNode(scope, excludedNodes)
        : leastHeated(doc, scope, excludedNodes, null);
  }

  @Override
  protected DatanodeDescriptor chooseDataNode(String scope, Collection<Node> excludedNodes,
      StorageType type) {
    HeatDocument doc = PLACING.get();
    return doc == null ? super.chooseDataNode(scope, excludedNodes, type)
        : leastHeated(doc, scope, excludedNodes, type);
  }

  /** The default's load rule, noted when it refuses a node this plugin chose by heat. */
  @Override
  boolean excludeNodeByLoad(DatanodeDescriptor node) {
    boolean busy = super.excludeNodeByLoad(node);
    if (busy && PLACING.get() != null) {
      REFUSED.get().put(node.getHostName(),
          "too busy (" + node.getXceiverCount() + " xceivers)");
    }
    return busy;
  }

  /** The default's checks on a node chosen by heat; a refusal is noted with its reason. */
  @Override
  boolean isGoodDatanode(DatanodeDescriptor node, int maxTargetPerRack, boolean considerLoad,
      List<DatanodeStorageInfo> results, boolean avoidStaleNodes) {
    boolean good = super.isGoodDatanode(node, maxTargetPerRack, considerLoad, results,
        avoidStaleNodes);
    if (!good && PLACING.get() != null) {
      REFUSED.get().putIfAbsent(node.getHostName(), "not in service / stale / slow / rack rule");
    }
    return good;
  }

  /**
   * The least heated DataNode in {@code scope} (a "~scope" means outside it, as in
   * NetworkTopology) not in {@code excludedNodes}, with a storage of {@code type} if given;
   * equal heat: one of them at random, as the default draws. Null if there is none.
   * <p>
   * Walks the DataNodes coolest first by the published heat (sorted once per document, see
   * {@link HeatOrder}), so a draw usually looks at a few nodes, not the whole cluster; the
   * nodes that took copies this round are judged by their heat with those copies.
   */
  DatanodeDescriptor leastHeated(HeatDocument doc, String scope, Collection<Node> excludedNodes,
      StorageType type) {
    HeatOrder order = heatOrder(doc);
    boolean outside = scope.startsWith("~");
    String base = outside ? scope.substring(1) : scope;
    String prefix = base.endsWith(NodeBase.PATH_SEPARATOR_STR) ? base
        : base + NodeBase.PATH_SEPARATOR_STR;
    Collection<Node> excluded = excludedNodes == null ? new HashSet<>()
        : excludedNodes instanceof Set ? excludedNodes : new HashSet<>(excludedNodes);
    List<DatanodeDescriptor> coolest = new ArrayList<>();
    double least = Double.POSITIVE_INFINITY;
    boolean roundPlaced = doc.round() == placedRound;
    if (roundPlaced) {
      for (String uuid : placed.keySet()) {
        DatanodeDescriptor dn = order.byUuid.get(uuid);
        if (dn != null && eligible(dn, prefix, outside, excluded, type)) {
          double h = heatWithPlaced(doc, dn);
          if (h < least) {
            least = h;
            coolest.clear();
          }
          if (h == least) {
            coolest.add(dn);
          }
        }
      }
    }
    for (int i = 0; i < order.nodes.length && order.heat[i] <= least; i++) {
      DatanodeDescriptor dn = order.nodes[i];
      if ((roundPlaced && placed.containsKey(dn.getDatanodeUuid()))
          || !eligible(dn, prefix, outside, excluded, type)) {
        continue;  // a node with copies this round was judged above
      }
      if (order.heat[i] < least) {
        least = order.heat[i];
        coolest.clear();
      }
      coolest.add(dn);
    }
    if (coolest.isEmpty()) {
      return null;
    }
    return coolest.get(ThreadLocalRandom.current().nextInt(coolest.size()));
  }

  private boolean eligible(DatanodeDescriptor dn, String scopePrefix, boolean outside,
      Collection<Node> excluded, StorageType type) {
    String path = NodeBase.getPath(dn) + NodeBase.PATH_SEPARATOR_STR;
    return path.startsWith(scopePrefix) != outside && !excluded.contains(dn)
        && (type == null || dn.hasStorageType(type))
        && clusterMap.contains(dn);  // a node removed since the order was made
  }

  /** The DataNodes of the topology by a document's heat, coolest first. */
  private static final class HeatOrder {
    final HeatDocument doc;
    final int leaves;
    final DatanodeDescriptor[] nodes;
    final double[] heat;
    final Map<String, DatanodeDescriptor> byUuid = new HashMap<>();

    HeatOrder(HeatDocument doc, List<Node> leaves) {
      this.doc = doc;
      this.leaves = leaves.size();
      Map<DatanodeDescriptor, Double> heatByNode = new IdentityHashMap<>();
      for (Node n : leaves) {  // each node's heat looked up once, not per comparison
        if (n instanceof DatanodeDescriptor) {
          heatByNode.put((DatanodeDescriptor) n, heatOf(doc, (DatanodeDescriptor) n));
        }
      }
      List<DatanodeDescriptor> dns = new ArrayList<>(heatByNode.keySet());
      Collections.shuffle(dns, ThreadLocalRandom.current());  // equal heat: no fixed order
      dns.sort(Comparator.comparingDouble(heatByNode::get));
      nodes = dns.toArray(new DatanodeDescriptor[0]);
      heat = new double[nodes.length];
      for (int i = 0; i < nodes.length; i++) {
        heat[i] = heatByNode.get(nodes[i]);
        byUuid.put(nodes[i].getDatanodeUuid(), nodes[i]);
      }
    }
  }

  private volatile HeatOrder heatOrder;

  /** The order for {@code doc}; made again when the document or the number of DataNodes changes. */
  private HeatOrder heatOrder(HeatDocument doc) {
    HeatOrder order = heatOrder;
    if (order == null || order.doc != doc || order.leaves != clusterMap.getNumOfLeaves()) {
      order = new HeatOrder(doc, clusterMap.getLeaves(NodeBase.ROOT));
      heatOrder = order;
    }
    return order;
  }

  /**
   * A DataNode's heat with this round's copies placed on it so far, each adding its file's RF
   * to the node's DNAvg as the next round would count it: (heat * blocks + sum RF) / (blocks +
   * copies). Without the round's block count, the published heat.
   */
  double heatWithPlaced(HeatDocument doc, DatanodeDescriptor dn) {
    double h = heatOf(doc, dn);
    double[] sumAndCount = doc.round() == placedRound ? placed.get(dn.getDatanodeUuid()) : null;
    Double blocks = doc.blocksOf(dn.getHostName(), dn.getIpAddr(), dn.getXferAddr());
    if (sumAndCount == null || blocks == null) {
      return h;
    }
    return (h * blocks + sumAndCount[0]) / (blocks + sumAndCount[1]);
  }

  /** A DataNode's published heat; one the daemon did not list holds none of its blocks: 0. */
  static double heatOf(HeatDocument doc, DatanodeDescriptor dn) {
    Double h = doc.heatOf(dn.getHostName(), dn.getIpAddr(), dn.getXferAddr());
    return h == null ? 0.0 : h;
  }

  /**
   * The default's choice of a block's excess replicas, by heat only when the block is one dsbra
   * lowers. HDFS passes no block here (BlockManager.setReplication, the SETREPLICATION call,
   * runs it with the block's live, non-excess replicas as both collections and the new
   * replication as {@code expectedNumOfReplicas}): the block is told by its holders and that
   * replication matching a block of the document's lowering.
   */
  @Override
  public List<DatanodeStorageInfo> chooseReplicasToDelete(
      Collection<DatanodeStorageInfo> availableReplicas,
      Collection<DatanodeStorageInfo> delCandidates, int expectedNumOfReplicas,
      List<StorageType> excessTypes, DatanodeDescriptor addedNode,
      DatanodeDescriptor delNodeHint) {
    HeatDocument doc = usableHeat();
    String lowered = doc == null
        || !doc.mayBeLowering(expectedNumOfReplicas, availableReplicas.size()) ? null
        : doc.loweringOf(expectedNumOfReplicas, namesOf(availableReplicas));
    List<DatanodeStorageInfo> chosen;
    if (lowered != null) {
      DELETING.set(doc);
    }
    try {
      chosen = super.chooseReplicasToDelete(availableReplicas, delCandidates,
          expectedNumOfReplicas, excessTypes, addedNode, delNodeHint);
    } finally {
      DELETING.remove();
    }
    if (LOG.isDebugEnabled()) {
      String block = "(holders " + hostsOf(availableReplicas) + " down to "
          + expectedNumOfReplicas + ")";
      if (doc == null) {
        LOG.debug("dsbra heat unusable: deletion from {} by HDFS's default {}",
            hostsOf(chosen), block);
      } else if (lowered == null) {
        LOG.debug("dsbra heat round {} deletion from {} by HDFS's default, no lowering of the "
            + "heat document {}", doc.round(), hostsOf(chosen), block);
      } else {
        LOG.debug("dsbra heat round {} deletion from {} by heat, a lowering of {} {}",
            doc.round(), hostsOf(chosen), lowered, block);
      }
    }
    return chosen;
  }

  /** Each replica's DataNode by every name the daemon may know it by. */
  private static List<String[]> namesOf(Collection<DatanodeStorageInfo> replicas) {
    List<String[]> names = new ArrayList<>(replicas.size());
    for (DatanodeStorageInfo s : replicas) {
      DatanodeDescriptor dn = s.getDatanodeDescriptor();
      names.add(new String[] {dn.getHostName(), dn.getIpAddr(), dn.getXferAddr()});
    }
    return names;
  }

  private static List<String> hostsOf(Collection<DatanodeStorageInfo> replicas) {
    List<String> hosts = new ArrayList<>();
    for (DatanodeStorageInfo s : replicas) {
      hosts.add(s.getDatanodeDescriptor().getHostName());
    }
    Collections.sort(hosts);
    return hosts;
  }

  /** Within a lowering's deletion: the hottest holder's replica; else the default's. */
  @Override
  public DatanodeStorageInfo chooseReplicaToDelete(Collection<DatanodeStorageInfo> moreThanOne,
      Collection<DatanodeStorageInfo> exactlyOne, List<StorageType> excessTypes,
      Map<String, List<DatanodeStorageInfo>> rackMap) {
    HeatDocument doc = DELETING.get();
    if (doc == null) {
      return super.chooseReplicaToDelete(moreThanOne, exactlyOne, excessTypes, rackMap);
    }
    long oldestHeartbeat = monotonicNow() - heartbeatInterval * tolerateHeartbeatMultiplier;
    List<DatanodeStorageInfo> candidates = new ArrayList<>();
    for (DatanodeStorageInfo storage : pickupReplicaSet(moreThanOne, exactlyOne, rackMap)) {
      if (!excessTypes.contains(storage.getStorageType())) {
        continue;
      }
      if (storage.getDatanodeDescriptor().getLastUpdateMonotonic() < oldestHeartbeat) {
        // the default deletes from a node that stopped heartbeating first: so do we
        return super.chooseReplicaToDelete(moreThanOne, exactlyOne, excessTypes, rackMap);
      }
      candidates.add(storage);
    }
    if (candidates.isEmpty()) {
      return null;
    }
    if (doc.round() != spreadRound) {
      lastReplicas.clear();
      spreadRound = doc.round();
    }
    DatanodeStorageInfo chosen = null;
    for (DatanodeStorageInfo s : candidates) {
      if (chosen == null || hotter(doc, s, chosen)) {
        chosen = s;
      }
    }
    excessTypes.remove(chosen.getStorageType());
    if (moreThanOne.size() + exactlyOne.size() == 2) {  // this deletion leaves one replica
      for (DatanodeStorageInfo s : moreThanOne) {
        recordLastReplica(s, chosen);
      }
      for (DatanodeStorageInfo s : exactlyOne) {
        recordLastReplica(s, chosen);
      }
    }
    return chosen;
  }

  private void recordLastReplica(DatanodeStorageInfo holder, DatanodeStorageInfo deleted) {
    if (holder != deleted) {
      lastReplicas.merge(holder.getDatanodeDescriptor().getDatanodeUuid(), 1, Integer::sum);
    }
  }

  /**
   * Whether {@code a} should go before {@code b}: hotter; on equal heat, the node already
   * left holding more last replicas this round (so equally hot files end on different
   * nodes); then the default's criterion, less free space.
   */
  private boolean hotter(HeatDocument doc, DatanodeStorageInfo a, DatanodeStorageInfo b) {
    int byHeat = Double.compare(heatOf(doc, a.getDatanodeDescriptor()),
        heatOf(doc, b.getDatanodeDescriptor()));
    if (byHeat != 0) {
      return byHeat > 0;
    }
    int byLast = Integer.compare(lastReplicasOn(a), lastReplicasOn(b));
    if (byLast != 0) {
      return byLast > 0;
    }
    return a.getRemaining() < b.getRemaining();
  }

  private int lastReplicasOn(DatanodeStorageInfo s) {
    return lastReplicas.getOrDefault(s.getDatanodeDescriptor().getDatanodeUuid(), 0);
  }
}
