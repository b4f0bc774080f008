"""What a cluster looks like: hosts, racks, ports, sizes. Pure: no I/O.

Every derived value (a worker's address, its rack, a daemon's port) is computed here, so the
config templates, the network set-up and the readiness checks cannot disagree.
"""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass, field

from dsbra.errors import InputError
from dsbra.hadoop import locality
from dsbra.validate import at_least, in_range, one_of

HADOOP_VERSION = "3.4.2"
#: versions the bundled cluster runs: 3.4.x answers REST in Jersey 1's JSON shapes, 3.5.x in Jersey 2's
HADOOP_VERSIONS = ("3.4.2", "3.5.0")
#: releases with no hadoop-yarn-server-sharedcachemanager on Maven Central (no --shared-cache)
NO_SHARED_CACHE = frozenset({"3.5.0"})
MAX_WORKERS = 32
SCHEDULERS = ("fair", "capacity", "fifo")
#: the NameNode's block placement: HDFS's default, or dsbra's heat-aware plugin (placement/)
BLOCK_PLACEMENTS = ("default", "heat")

# master ports (before --port-offset); all bound to the master's address
MASTER_PORTS = {
    "namenode_rpc": 8020,
    "namenode_http": 9870,
    "rm_scheduler": 8030,
    "rm_tracker": 8031,
    "rm": 8032,
    "rm_admin": 8033,
    "rm_http": 8088,
    "jhs": 10020,
    "jhs_admin": 10033,
    "jhs_http": 19888,
}

#: the second NameNode and ResourceManager of `--ha`, on the master's address beside the first
HA_MASTER_PORTS = {
    "namenode2_rpc": 8120,
    "namenode2_http": 9970,
    "rm2_scheduler": 8130,
    "rm2_tracker": 8131,
    "rm2": 8132,
    "rm2_admin": 8133,
    "rm2_http": 8188,
}
#: `--ha` with automatic failover: the ZooKeeper server and each NameNode's failover
#: controller (ZKFC) RPC, on the master's address too
ZK_MASTER_PORTS = {
    "zookeeper": 2181,
    "zkfc_rpc": 8019,
    "zkfc2_rpc": 8119,
}
#: `--shared-cache`: YARN's SharedCacheManager on the master's address (its client, uploader,
#: admin and web ports; Hadoop's defaults)
SCM_MASTER_PORTS = {
    "scm_client": 8045,
    "scm_uploader": 8046,
    "scm_admin": 8047,
    "scm_http": 8788,
}
#: `--spark`: the Spark History Server's web UI and REST API (Spark's default port)
SPARK_MASTER_PORTS = {"spark_history": 18080}
#: the shared cache's directory in HDFS (yarn.sharedcache.root-dir)
SHARED_CACHE_ROOT = "/sharedcache"
#: `--ha-failover`: ZooKeeper elects the active NameNode and RM, or an operator runs haadmin
HA_FAILOVERS = ("auto", "manual")
#: `--ha`: the HDFS nameservice, the YARN cluster id, and the ids of the two NameNodes / RMs
HA_NAMESERVICE = "dsbra"
HA_NAMENODES = ("nn1", "nn2")
HA_RMS = ("rm1", "rm2")

# worker ports: each worker has its own address in its own namespace, so they never collide
WORKER_PORTS = {
    "datanode_xfer": 9866,
    "datanode_http": 9864,
    "datanode_ipc": 9867,
    "nodemanager": 8041,
    "nodemanager_localizer": 8040,
    "nodemanager_http": 8042,
    "shuffle": 13562,
    "journalnode_rpc": 8485,
    "journalnode_http": 8480,
}


@dataclass(frozen=True)
class Worker:
    index: int  # 1-based
    host: str  # the worker's address; HDFS, YARN and MapReduce all know it by this name
    rack: str
    netns: str
    veth: str

    @property
    def name(self) -> str:
        return f"w{self.index}"


@dataclass(frozen=True)
class ClusterSpec:
    """Parameters of `dsbra cluster up`; validated on construction."""

    workers: int = 4
    racks: int = 2
    #: the ResourceManager's scheduler: fair (FairScheduler), capacity (CapacityScheduler) or
    #: fifo (FifoScheduler: no delay scheduling, for showing that dsbra refuses it)
    scheduler: str = "fair"
    subnet: str = "10.77.0.0/24"
    prefix: str = "dsbra"  # names the bridge (<prefix>0) and namespaces (<prefix>-w<i>)
    port_offset: int = 0
    replication: int = 3
    block_size: int = 8 * 1024 * 1024
    locality_delay_node: float = 1.0
    locality_delay_rack: float = 1.0
    #: scheduling on a timer besides heartbeats; delay is then time-based (the *_ms below)
    continuous_scheduling: bool = False
    locality_delay_node_ms: int = -1
    locality_delay_rack_ms: int = -1
    heartbeat_ms: int = 1000
    #: Capacity Scheduler delay scheduling (Hadoop's defaults): missed scheduling opportunities
    #: before a rack-local container (-1: off), and after those before an off-switch one (-1:
    #: the locality wait factor instead); RegularContainerAllocator.canAssign caps both by the
    #: cluster's node count
    node_locality_delay: int = locality.NODE_LOCALITY_DELAY
    rack_locality_additional_delay: int = locality.RACK_LOCALITY_ADDITIONAL_DELAY
    #: how the Capacity Scheduler fills a heartbeating node (Hadoop's defaults): several
    #: containers per heartbeat, at most max_container_assignments (-1: no limit) and
    #: max_offswitch_assignments off-switch; no asynchronous or multi-node placement
    multiple_assignments: bool = True
    max_container_assignments: int = 100
    max_offswitch_assignments: int = 1
    schedule_asynchronously: bool = False
    multi_node_placement: bool = False
    preemption: bool = False
    #: Fair Scheduler queues and placement rules (None: config.DEFAULT_QUEUES / DEFAULT_PLACEMENT);
    #: `dsbra conf` validates them (dsbra.cluster.values)
    queues: list | None = None
    placement: list | None = None
    #: Capacity Scheduler queues under root (None: config.DEFAULT_CAPACITY_QUEUES); validated the same way
    capacity_queues: list | None = None
    nm_memory_mb: int = 2560
    nm_vcores: int = 4
    #: map and reduce containers, and ApplicationMasters: one size, so that a NodeManager holds
    #: nm_memory_mb // map_memory_mb containers of any kind with no memory left over
    map_memory_mb: int = 512
    am_memory_mb: int = 512
    #: the scheduler's minimum allocation and increment: asks are granted at their own size
    memory_increment_mb: int = 128
    heaps: dict = field(
        default_factory=lambda: {
            "namenode": "512m",
            "datanode": "256m",
            "resourcemanager": "512m",
            "nodemanager": "256m",
            "historyserver": "256m",
            "sparkhistory": "384m",
            "journalnode": "128m",
            # --ha with automatic failover: a standalone ZooKeeper holding two locks, and a
            # ZKFC (a health check and a ZooKeeper session) beside each NameNode
            "zookeeper": "128m",
            "zkfc": "128m",
            # --shared-cache: the SharedCacheManager's in-memory index of cached resources
            "sharedcachemanager": "256m",
        }
    )
    hadoop_version: str = HADOOP_VERSION
    #: shaped bandwidth between worker hosts in Mbit/s (0: not shaped), so a non-local read is
    #: slower than a node-local one (which never leaves its namespace); netns.shaping_commands
    net_mbit: float = 0.0
    #: between two workers of the same rack (0: net_mbit)
    net_rack_mbit: float = 0.0
    #: "heat": the NameNode runs BlockPlacementPolicyDsbraHeat, reading the heat document a
    #: dsbra daemon writes to the state directory's placement/heat.json
    block_placement: str = "default"
    #: two NameNodes sharing a quorum journal (JournalNodes on the first three workers, or the
    #: first one with fewer than three) and two ResourceManagers sharing a state store; the
    #: second of each runs on the master's address with HA_MASTER_PORTS
    ha: bool = False
    #: with ``ha``: "auto", a ZooKeeper server, a ZKFC beside each NameNode and the RMs'
    #: embedded elector make a standby active by themselves; "manual", no ZooKeeper, an
    #: operator fails over with haadmin (`dsbra cluster haadmin`)
    ha_failover: str = "auto"
    #: Hadoop's security on: an MIT KDC of the cluster's own (dsbra.cluster.security), every
    #: daemon logged in from a keytab, SPNEGO on every web endpoint, SASL on block transfer.
    #: Needs ``tls``: a DataNode on unprivileged ports accepts SASL only with HTTPS_ONLY
    kerberos: bool = False
    #: the web endpoints (WebHDFS, the RM's and JHS's REST APIs, the UIs) speak https only, on
    #: the same ports, with certificates signed by a CA of the cluster's own
    tls: bool = False
    #: YARN's shared cache: a SharedCacheManager on the master, NodeManagers uploading what
    #: a job marks shareable to HDFS's /sharedcache, so a job's jar (Hive's 83 MB hive-exec)
    #: is uploaded and localized once, not per job (a client opts in with
    #: mapreduce.job.sharedcache.mode)
    shared_cache: bool = False
    #: Apache Spark on YARN (dsbra.cluster.spark): its jars in HDFS, a Spark History Server on
    #: the master, spark-defaults.conf with these locality waits (Spark's defaults: 3 s a level)
    spark: bool = False
    spark_locality_wait_process_s: float = 3.0
    spark_locality_wait_node_s: float = 3.0
    spark_locality_wait_rack_s: float = 3.0

    def __post_init__(self):
        if self.kerberos and not self.tls:
            raise InputError("--kerberos needs --tls: Hadoop's DataNode accepts SASL data-transfer "
                             "protection on unprivileged ports only with dfs.http.policy=HTTPS_ONLY")
        if self.shared_cache and (self.kerberos or self.tls):
            raise InputError("--shared-cache with --kerberos/--tls is not supported yet: the "
                             "SharedCacheManager would need a principal and https of its own")
        if self.shared_cache and self.hadoop_version in NO_SHARED_CACHE:
            raise InputError(f"--shared-cache needs Hadoop 3.4.2: Maven Central has no "
                             f"SharedCacheManager {self.hadoop_version}")
        for level in ("process", "node", "rack"):
            at_least(f"spark_locality_wait_{level}_s", getattr(self, f"spark_locality_wait_{level}_s"), 0)
        one_of("--ha-failover", self.ha_failover, HA_FAILOVERS)
        one_of("--placement", self.block_placement, BLOCK_PLACEMENTS)
        one_of("--hadoop-version", self.hadoop_version, HADOOP_VERSIONS)
        in_range("--workers", self.workers, 1, MAX_WORKERS)
        at_least("--racks", self.racks, 1)
        try:
            net = ipaddress.IPv4Network(self.subnet)
        except ValueError as exc:
            raise InputError(f"--subnet {self.subnet!r} is not an IPv4 network: {exc}") from None
        if net.num_addresses < self.workers + 16:
            raise InputError(f"--subnet {self.subnet} is too small for {self.workers} workers")
        if net.is_loopback:
            raise InputError(f"--subnet {self.subnet} is loopback; worker hosts need their own addresses")
        if not (self.prefix.isalnum() and len(self.prefix) <= 8):
            raise InputError(f"--prefix must be alphanumeric and at most 8 characters, got {self.prefix!r}")
        in_range("--port-offset", self.port_offset, 0, 50000)
        if not 1 <= self.replication <= self.workers:
            raise InputError(
                f"--replication must be between 1 and the number of workers ({self.workers}), got {self.replication}"
            )
        if self.block_size < 1024 * 1024 or self.block_size % 512:
            raise InputError(f"--block-size must be at least 1 MiB and a multiple of 512, got {self.block_size}")
        for name, value in (("node", self.locality_delay_node), ("rack", self.locality_delay_rack)):
            if problem := locality.threshold_problem(value):
                raise InputError(f"--locality-delay-{name} {problem}")
        node_ms, rack_ms = self.locality_delay_node_ms, self.locality_delay_rack_ms
        if problem := locality.timed_delays_problem(node_ms, rack_ms):
            raise InputError(f"--locality-delay-node-ms and --locality-delay-rack-ms {problem}")
        one_of("--scheduler", self.scheduler, SCHEDULERS)
        for name in ("node_locality_delay", "rack_locality_additional_delay"):
            if problem := locality.opportunities_problem(getattr(self, name)):
                raise InputError(f"--{name.replace('_', '-')} {problem}")
        if self.scheduler == "capacity" and (self.continuous_scheduling or node_ms >= 0):
            raise InputError("--continuous-scheduling and --locality-delay-node-ms/-rack-ms are the Fair "
                             "Scheduler's; the Capacity Scheduler takes --node-locality-delay and "
                             "--rack-locality-additional-delay")
        if self.scheduler != "capacity" and self.capacity_queues is not None:
            raise InputError(f"capacity_queues are the Capacity Scheduler's queues, and --scheduler is {self.scheduler}")
        if self.scheduler == "capacity" and (self.queues is not None or self.placement is not None):
            raise InputError("queues and placement are the Fair Scheduler's, and --scheduler is capacity: "
                             "declare capacity_queues instead")
        if node_ms >= 0 and not self.continuous_scheduling:
            raise InputError("--locality-delay-node-ms/-rack-ms need --continuous-scheduling: the Fair "
                             "Scheduler reads them only then")
        at_least("heartbeat_ms", self.heartbeat_ms, 1)
        for name, value in (("--net-mbit", self.net_mbit), ("--net-rack-mbit", self.net_rack_mbit)):
            in_range(name, value, 0, 100_000, note="Mbit/s; 0: not shaped")
        if self.net_rack_mbit and not self.net_mbit:
            raise InputError("--net-rack-mbit needs --net-mbit (the rate between racks)")
        at_least("memory_increment_mb", self.memory_increment_mb, 1)
        for name, value in (("map_memory_mb", self.map_memory_mb), ("am_memory_mb", self.am_memory_mb)):
            if value <= 0 or value % self.memory_increment_mb:
                raise InputError(f"{name} must be a positive multiple of the scheduler's memory increment "
                                 f"({self.memory_increment_mb} MB), got {value}: the scheduler would round it up")
        if self.nm_memory_mb < self.am_memory_mb + self.map_memory_mb:
            raise InputError(
                f"--nm-memory-mb {self.nm_memory_mb} cannot hold an AM ({self.am_memory_mb} MB) and a map "
                f"({self.map_memory_mb} MB)"
            )

    # ---- derived layout -------------------------------------------------------------------

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.subnet)

    @property
    def master(self) -> str:
        return str(self.network.network_address + 1)

    @property
    def prefixlen(self) -> int:
        return self.network.prefixlen

    @property
    def bridge(self) -> str:
        """The master's link into the cluster network (a veth; the bridge is in switch_netns)."""
        return f"{self.prefix}0"

    @property
    def switch_netns(self) -> str:
        return f"{self.prefix}-sw"

    @property
    def worker_list(self) -> list[Worker]:
        base = self.network.network_address
        racks = min(self.racks, self.workers)
        per_rack = -(-self.workers // racks)  # ceil: contiguous workers share a rack
        return [
            Worker(
                index=i,
                host=str(base + 10 + i),
                rack=f"/rack{(i - 1) // per_rack + 1}",
                netns=f"{self.prefix}-w{i}",
                veth=f"{self.prefix}v{i}",
            )
            for i in range(1, self.workers + 1)
        ]

    def link_mbit(self, a: Worker, b: Worker) -> float:
        """Shaped rate from worker a to worker b (0: not shaped)."""
        if a.rack == b.rack and self.net_rack_mbit:
            return self.net_rack_mbit
        return self.net_mbit

    def port(self, name: str) -> int:
        if name in MASTER_PORTS:
            return MASTER_PORTS[name] + self.port_offset
        if name in HA_MASTER_PORTS:
            return HA_MASTER_PORTS[name] + self.port_offset
        if name in ZK_MASTER_PORTS:
            return ZK_MASTER_PORTS[name] + self.port_offset
        if name in SCM_MASTER_PORTS:
            return SCM_MASTER_PORTS[name] + self.port_offset
        if name in SPARK_MASTER_PORTS:
            return SPARK_MASTER_PORTS[name] + self.port_offset
        return WORKER_PORTS[name]

    @property
    def master_ports(self) -> list[str]:
        """Names of the ports this cluster binds on the master's address."""
        return (list(MASTER_PORTS) + (list(HA_MASTER_PORTS) if self.ha else [])
                + (list(ZK_MASTER_PORTS) if self.automatic_failover else [])
                + (list(SCM_MASTER_PORTS) if self.shared_cache else [])
                + (list(SPARK_MASTER_PORTS) if self.spark else []))

    @property
    def automatic_failover(self) -> bool:
        """`--ha` with ZooKeeper electing the active NameNode and ResourceManager."""
        return self.ha and self.ha_failover == "auto"

    @property
    def zookeeper(self) -> str:
        """host:port of the ZooKeeper server (automatic failover only)."""
        return f"{self.master}:{self.port('zookeeper')}"

    @property
    def journal_nodes(self) -> list[Worker]:
        """The workers that run a JournalNode (`--ha`): a quorum of three, or one."""
        if not self.ha:
            return []
        return self.worker_list[: 3 if self.workers >= 3 else 1]

    @property
    def namenode_urls(self) -> dict[str, str]:
        """Web URL of each NameNode by its HA id (nn1 alone without --ha)."""
        m, web = self.master, self.web_scheme
        urls = {"nn1": f"{web}://{m}:{self.port('namenode_http')}"}
        if self.ha:
            urls["nn2"] = f"{web}://{m}:{self.port('namenode2_http')}"
        return urls

    @property
    def rm_urls(self) -> dict[str, str]:
        """Web URL of each ResourceManager by its HA id (rm1 alone without --ha)."""
        m, web = self.master, self.web_scheme
        urls = {"rm1": f"{web}://{m}:{self.port('rm_http')}"}
        if self.ha:
            urls["rm2"] = f"{web}://{m}:{self.port('rm2_http')}"
        return urls

    @property
    def web_scheme(self) -> str:
        """With tls every web port speaks https instead of http (same port numbers)."""
        return "https" if self.tls else "http"

    @property
    def urls(self) -> dict[str, str]:
        m, web = self.master, self.web_scheme
        return {
            "namenode": f"{web}://{m}:{self.port('namenode_http')}",
            "webhdfs": f"{web}://{m}:{self.port('namenode_http')}/webhdfs/v1",
            "rm": f"{web}://{m}:{self.port('rm_http')}",
            "jhs": f"{web}://{m}:{self.port('jhs_http')}",
            "fs": f"hdfs://{HA_NAMESERVICE}" if self.ha else f"hdfs://{m}:{self.port('namenode_rpc')}",
            **({"sharedcache": f"http://{m}:{self.port('scm_http')}"} if self.shared_cache else {}),
        }

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ClusterSpec":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def parse_size(text: str) -> int:
    """'8m', '128k', '1g' or bytes -> bytes (like Hadoop's size suffixes)."""
    text = str(text).strip().lower()
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise InputError(f"not a size: {text!r} (use bytes or a k/m/g suffix)") from None
