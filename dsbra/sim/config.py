"""Every knob of one simulation, validated in one place."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from dsbra.errors import ConfigError
from dsbra.experiment.config import ExperimentConfig
from dsbra.hadoop import locality
from dsbra.validate import above, at_least, in_range, is_number, one_of

SCHEDULERS = ("fair", "fifo", "capacity")
DELAY_MODES = ("hfs", "yarn")
SIGNALS = ("scheduler", "observed")
BINDINGS = ("yarn-mr", "task", "spark")
"""How a free slot becomes a map: ``yarn-mr``, as YARN and the MapReduce ApplicationMaster do it
(asks per host, rack and ANY sent at AM heartbeats, containers granted against them, bound to
maps by the AM: dsbra.sim.yarn); ``task``, a slot handed straight to a waiting map, as Hadoop 1's
JobTracker does; ``spark``, executors acquired from YARN and tasks bound to their cores by the
Spark driver's TaskSetManager (dsbra.sim.spark, SparkSettings)."""
SPARK_APPS = ("shared", "per-job")
"""``shared``: one long-running application (a Thrift server) whose jobs share its executors in
pools; ``per-job``: each job its own application with its own executors."""
SPARK_SCHEDULING_MODES = ("fair", "fifo")
HADOOP_AM_HEARTBEAT_S = 1.0
"""yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms's default (1000 ms)."""
BUNDLED_AM_HEARTBEAT_S = 0.5
"""The same interval on the bundled cluster (conf-templates/mapred-site.xml.j2: 500 ms)."""
PLACEMENTS = ("heat", "default")
"""Who picks the nodes of a policy's new and removed replicas: ``heat``, the policy (a NameNode
running the placement plugin); ``default``, the stock NameNode's BlockPlacementPolicyDefault."""
NO_AM_SHARE_LIMIT = -1.0
"""``max_am_share`` as the Fair Scheduler's maxAMShare -1: AMs limited by free slots only."""
ORACLE = "oracle"
"""Not a replication policy but its limit: every block readable node-locally on every node from
the start, at a storage cost of nodes / replication - 1 (the simulator's ``--policy oracle``)."""
REACTIVE_ORACLE = "oracle-reactive"
"""The limit of a policy that reacts to what it sees: a block is copied to every node, at no
cost in time, the moment the first job asking for it is submitted. That job's split hosts are
already fixed (its maps only read faster); every later job finds the block local everywhere.
Its storage is that of the blocks copied so far. ``policy_params`` {"min_jobs": k}: copied at
the k-th job asking for it instead of the first (k >= 1)."""


@dataclass(frozen=True)
class SparkSettings:
    """The Spark application's settings under ``binding`` spark (dsbra.sim.spark), named after
    Spark's own (docs/simulator.md, "Binding: Spark").

    ``app``: one ``shared`` application (a Thrift server started with the schedule, executors
    held throughout) or one application ``per-job``. Executors: ``executors``
    (spark.executor.instances; with ``dynamic`` the initial number) of ``executor_cores`` task
    slots each (spark.executor.cores, each core one of the node's slots), usable
    ``executor_startup_s`` after YARN grants the container; an executor's first task costs
    ``executor_warmup_s`` more (its JVM loading classes and compiling: the Spark sitting's first
    tasks). Delay scheduling: ``locality_wait_s``
    (spark.locality.wait), ``locality_wait_node_s`` / ``locality_wait_rack_s`` overriding it for
    one level (None: inherit); ``legacy_reset`` the timer reset before Spark 3.1
    (spark.locality.wait.legacyResetOnTaskLaunch); ``revive_s`` spark.scheduler.revive.interval.
    Jobs of the shared application: ``scheduling_mode`` (spark.scheduler.mode) over ``pools``
    pools (job j in pool j mod pools; 0: a pool per job), each of minShare ``pool_min_share`` and
    weight 1. Dynamic allocation (``dynamic``): between ``min_executors`` and ``max_executors``
    (None: no bound), added after ``backlog_timeout_s`` of pending tasks
    (spark.dynamicAllocation.schedulerBacklogTimeout and its sustained twin), removed after
    ``idle_timeout_s`` idle (executorIdleTimeout)."""

    app: str = "shared"
    executors: int = 4
    executor_cores: int = 1
    executor_startup_s: float = 0.0
    executor_warmup_s: float = 0.0
    locality_wait_s: float = 3.0
    locality_wait_node_s: float | None = None
    locality_wait_rack_s: float | None = None
    legacy_reset: bool = False
    revive_s: float = 1.0
    scheduling_mode: str = "fair"
    pools: int = 0
    pool_min_share: int = 0
    dynamic: bool = False
    min_executors: int = 0
    max_executors: int | None = None
    idle_timeout_s: float = 60.0
    backlog_timeout_s: float = 1.0

    @property
    def wait_node_s(self) -> float:
        return self.locality_wait_s if self.locality_wait_node_s is None \
            else self.locality_wait_node_s

    @property
    def wait_rack_s(self) -> float:
        return self.locality_wait_s if self.locality_wait_rack_s is None \
            else self.locality_wait_rack_s

    def validated(self, slots_per_node: int) -> SparkSettings:
        """Self after checking every value; raises ConfigError naming the first bad one as its
        ``dsbra sim`` option."""
        one_of("spark-app", self.app, SPARK_APPS, error=ConfigError)
        one_of("spark-scheduling-mode", self.scheduling_mode, SPARK_SCHEDULING_MODES,
               error=ConfigError)
        in_range("spark-executor-cores", self.executor_cores, 1, slots_per_node, integer=True,
                 note="an executor's cores are slots of one node", error=ConfigError)
        for name in ("executors", "pools", "pool_min_share", "min_executors"):
            at_least(f"spark-{_option(name)}", getattr(self, name), 0, integer=True,
                     error=ConfigError)
        at_least("spark-max-executors", self.max_executors, 1, integer=True, none_ok=True,
                 error=ConfigError)
        for name in ("executor_startup_s", "executor_warmup_s", "locality_wait_s"):
            at_least(f"spark-{_option(name)}", getattr(self, name), 0, error=ConfigError)
        for name in ("locality_wait_node_s", "locality_wait_rack_s"):
            at_least(f"spark-{_option(name)}", getattr(self, name), 0, none_ok=True,
                     error=ConfigError)
        for name in ("revive_s", "idle_timeout_s", "backlog_timeout_s"):
            above(f"spark-{_option(name)}", getattr(self, name), 0, error=ConfigError)
        if self.dynamic:
            top = self.max_executors
            if top is not None and not self.min_executors <= self.executors <= top:
                raise ConfigError(f"spark-executors ({self.executors}) must lie between "
                                  f"spark-min-executors ({self.min_executors}) and "
                                  f"spark-max-executors ({top})")
            if self.executors < self.min_executors:
                raise ConfigError(f"spark-executors ({self.executors}) is below "
                                  f"spark-min-executors ({self.min_executors})")
        elif self.executors < 1:
            raise ConfigError("spark-executors must be >= 1 without dynamic allocation "
                              "(--spark-dynamic), got 0")
        return self


@dataclass(frozen=True)
class SimConfig:
    """One simulated cluster, scheduler, cost model and policy.

    Cluster: ``nodes`` M workers x ``slots_per_node`` L map slots on ``racks`` K racks (node i
    on rack i * K // M). HDFS: ``replication`` R, ``block_size_mb``; blocks placed by HDFS's
    default policy. ``max_replication`` caps replicas per block (policy and storage).

    Scheduler: ``scheduler`` fair (jobs sorted by running maps, then submission), fifo
    (submission order, greedy locality, never delays) or capacity (one queue, submission order,
    the Capacity Scheduler's delay: ``node_locality_delay`` and
    ``rack_locality_additional_delay`` missed opportunities, capped by ``nodes``; the wait factor
    when the latter is -1; dsbra.sim.scheduler). Delay scheduling (fair only):
    ``delay_mode`` "hfs" = the paper's HFS, waits W1 = ``delay_node_s`` then W2 =
    ``delay_rack_s`` seconds since the job was first skipped; "yarn" = YARN's FairScheduler,
    counting scheduling opportunities against ``yarn_threshold_node/rack`` x cluster size
    (a negative threshold disables that level). W1 = W2 = 0 in hfs mode disables delay
    scheduling. ``heartbeat_s``: NodeManager heartbeat interval. ``assign_multiple``: fill all
    free slots of a node on one heartbeat (YARN's ``assignmultiple``; default one container).

    Binding (``binding``): ``yarn-mr`` (the default) runs MapReduce on YARN's protocol
    (:mod:`dsbra.sim.yarn`): each job's ApplicationMaster sends its asks every
    ``am_heartbeat_s`` (Hadoop's default 1 s), the ResourceManager grants containers against
    the asks it last heard (delay scheduling decides only rack-local and off-switch grants; the
    time-based W1/W2 then follow the Fair Scheduler's continuous-scheduling rule,
    FSAppAttempt.getAllowedLocalityLevelByTime, not HFS's), and the AM binds each container it
    receives to a map, local to its host if one is pending. ``task``: the slot goes straight to
    a waiting map (Hadoop 1's JobTracker), the simulator's model before issue 42. ``spark``:
    executors granted by YARN as above, tasks bound to their cores by the Spark driver's delay
    scheduling (``spark``, :class:`SparkSettings`; :mod:`dsbra.sim.spark`).

    ApplicationMasters (off by default: a job's maps are pending from its submission). With
    ``am_slots`` > 0 every job first needs an AM container holding that many map slots of one
    node until the job ends, placed as YARN's continuous scheduling does (the node with the
    most free slots) and ahead of maps (an application without its AM has the smallest fair
    share); at most ``max_am_share`` of the cluster's slots hold AMs at once (the Fair
    Scheduler's maxAMShare; -1, as there, is no limit), later jobs wait for one to end. Its
    maps become pending ``am_startup_s`` after the AM starts.

    Cost model, per map: ``task_overhead_s`` + ``cpu_s_per_mb`` x MB + MB / read bandwidth of
    the level the data actually came from (local / rack / remote MB/s). Re-replication copies
    a block at ``copy_mbps``; the replica counts from the moment the copy lands. With
    ``copy_streams`` 0 every copy runs at once and costs the maps nothing (the model before
    issue 45). With ``copy_streams`` n > 0 copies are DataNode traffic, as HDFS schedules them
    (dfs.namenode.replication.max-streams, Hadoop's default 2): a copy reads from one holder of
    its block, the one whose outgoing streams free up first, which sends at most n at once (the
    others wait for a stream); while it runs, a map launched on its source or on its target
    shares that node's disk with it: the map reads at its level's bandwidth / (1 + the copies
    running there).

    Contention (off by default: a map's cost is its own whatever else runs). ``host_cores`` > 0:
    every node's maps share one host of that many CPUs (the bundled cluster's workers are
    network namespaces of one machine); a map reading node-locally is CPU work and progresses at
    min(1, host_cores / the node-local maps running), re-timed whenever that number changes
    (processor sharing). ``share_links``: a remote read goes over its holder's link (the nearest
    holder, the first in the block's replica order at that distance), shared equally by the
    remote reads it serves at once; the remote map's whole cost progresses at that share (its
    link is its bottleneck: it adds no load to the CPUs). With ``copy_streams`` > 0 too, a copy
    is one more flow on its source's link (HDFS sends it from that holder's DataNode over the
    link its remote reads use): its block at ``copy_mbps`` is its work at a full share.

    Policy: ``policy`` name for :func:`dsbra.policy.make_policy`, called every ``interval_s``;
    ``policy_params`` passed through; ``delay_threshold_s`` D (default: W1 in hfs mode, else
    the expected wait of the yarn threshold: threshold x nodes opportunities at nodes per
    heartbeat). DT of a task is capped at D. ``placement``: "heat" applies the policy's
    nodes; "default" keeps its number of replicas added and removed per block and picks the
    nodes as the stock NameNode does (random non-holders with its rack rule; the deleted
    replica from a rack with two, on the fullest node).

    Window signals (M, DT): ``signals`` "scheduler" = the scheduler's own accounting (a map is
    delayed from its job's first skip for locality until its launch); "observed" = the rule the
    daemon applies on a real cluster (:mod:`dsbra.signals.attribution`, with
    ``observed_grace_s`` / ``observed_settle_s``), run on the simulated containers.
    """

    nodes: int = 20
    slots_per_node: int = 2
    racks: int = 2
    replication: int = 2
    block_size_mb: float = 64.0
    max_replication: int = 10

    scheduler: str = "fair"
    delay_mode: str = "hfs"
    delay_node_s: float = 5.0
    delay_rack_s: float = 5.0
    yarn_threshold_node: float = locality.THRESHOLD_OFF
    yarn_threshold_rack: float = locality.THRESHOLD_OFF
    heartbeat_s: float = 1.0
    #: the Capacity Scheduler's delays (scheduler capacity): missed opportunities, capped by nodes
    node_locality_delay: int = locality.NODE_LOCALITY_DELAY
    rack_locality_additional_delay: int = locality.RACK_LOCALITY_ADDITIONAL_DELAY
    assign_multiple: bool = False
    binding: str = "yarn-mr"
    am_heartbeat_s: float = HADOOP_AM_HEARTBEAT_S
    am_slots: float = 0.0
    am_startup_s: float = 0.0
    max_am_share: float = 1.0

    task_overhead_s: float = 2.0
    cpu_s_per_mb: float = 0.02
    read_mbps_local: float = 40.0
    read_mbps_rack: float = 20.0
    read_mbps_remote: float = 10.0
    copy_mbps: float = 40.0
    copy_streams: int = 0
    host_cores: int = 0
    share_links: bool = False

    policy: str = "static"
    policy_params: dict = field(default_factory=dict)
    interval_s: float = 60.0
    delay_threshold_s: float | None = None
    placement: str = "heat"

    signals: str = "scheduler"
    observed_grace_s: float = 2.5
    observed_settle_s: float = 2.5

    seed: int = 0
    #: the daemon's experiment (dsbra.experiment.config): a holdout of this share of the files
    #: the policy raises, or a switchback of periods with the policy on and off, in blocks of
    #: two drawn from its seed, with the do-no-harm guard or without; none by default
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    #: the Spark application under binding spark
    spark: SparkSettings = field(default_factory=SparkSettings)

    def validated(self) -> SimConfig:
        """Self after checking every value; raises ConfigError naming the first bad one."""
        for name in ("nodes", "slots_per_node", "racks", "replication", "max_replication"):
            at_least(_option(name), getattr(self, name), 1, integer=True, error=ConfigError)
        at_least("copy-streams", self.copy_streams, 0, integer=True,
                 note="0: copies cost the maps nothing", error=ConfigError)
        at_least("host-cores", self.host_cores, 0, integer=True,
                 note="0: the nodes' maps do not share CPUs", error=ConfigError)
        if not isinstance(self.share_links, bool):
            raise ConfigError(f"share-links must be true or false, got {self.share_links!r}")
        if self.racks > self.nodes:
            raise ConfigError(f"racks ({self.racks}) cannot exceed nodes ({self.nodes})")
        if self.replication > self.nodes:
            raise ConfigError(f"replication ({self.replication}) cannot exceed nodes "
                              f"({self.nodes})")
        if self.max_replication < self.replication:
            raise ConfigError(f"max-replication ({self.max_replication}) is below replication "
                              f"({self.replication})")
        one_of("scheduler", self.scheduler, SCHEDULERS, error=ConfigError)
        one_of("delay mode", self.delay_mode, DELAY_MODES, error=ConfigError)
        one_of("binding", self.binding, BINDINGS, error=ConfigError)
        for name in ("block_size_mb", "heartbeat_s", "am_heartbeat_s", "read_mbps_local",
                     "read_mbps_rack", "read_mbps_remote", "copy_mbps", "interval_s"):
            above(_option(name), getattr(self, name), 0, error=ConfigError)
        for name in ("delay_node_s", "delay_rack_s", "task_overhead_s", "cpu_s_per_mb"):
            at_least(_option(name), getattr(self, name), 0, error=ConfigError)
        for name in ("yarn_threshold_node", "yarn_threshold_rack"):
            if problem := locality.threshold_problem(getattr(self, name)):
                raise ConfigError(f"{_option(name)} {problem}")
        if not is_number(self.am_slots) or not 0 <= self.am_slots <= self.slots_per_node:
            raise ConfigError(f"am-slots must be in [0, slots-per-node {self.slots_per_node}], "
                              f"got {self.am_slots!r}")
        at_least("am-startup-s", self.am_startup_s, 0, error=ConfigError)
        if not is_number(self.max_am_share) or not (0 < self.max_am_share <= 1
                                                    or self.max_am_share == NO_AM_SHARE_LIMIT):
            raise ConfigError(f"max-am-share must be in (0, 1], or -1 for no limit, got "
                              f"{self.max_am_share!r}")
        if self.am_slots > self.am_share * self.slots_per_node * self.nodes:
            raise ConfigError(f"max-am-share {self.max_am_share} of {self.nodes} x "
                              f"{self.slots_per_node} slots holds no AM of {self.am_slots} slots")
        one_of("placement", self.placement, PLACEMENTS, error=ConfigError)
        one_of("signals", self.signals, SIGNALS, error=ConfigError)
        for name in ("observed_grace_s", "observed_settle_s"):
            at_least(_option(name), getattr(self, name), 0, error=ConfigError)
        if self.policy == REACTIVE_ORACLE:
            k = self.policy_params.get("min_jobs", 1)
            if set(self.policy_params) - {"min_jobs"} or isinstance(k, bool) or \
                    not isinstance(k, int) or k < 1:
                raise ConfigError(f"policy {REACTIVE_ORACLE} takes one parameter, min_jobs, an "
                                  f"integer >= 1; got {self.policy_params!r}")
        if self.policy in (ORACLE, REACTIVE_ORACLE) and self.signals != "scheduler":
            raise ConfigError(f"policy {self.policy} runs no policy rounds on signals: use "
                              "--signals scheduler")
        for name in ("node_locality_delay", "rack_locality_additional_delay"):
            if problem := locality.opportunities_problem(getattr(self, name)):
                raise ConfigError(f"{_option(name)} {problem}")
        if self.delay_mode == "hfs" and (self.yarn_threshold_node >= 0
                                         or self.yarn_threshold_rack >= 0):
            raise ConfigError("yarn-threshold-node/rack need delay mode yarn (--delay-mode yarn)")
        e = self.experiment.validated()
        if e.holdout and self.policy in ("static", ORACLE, REACTIVE_ORACLE):
            raise ConfigError(f"experiment.holdout holds out a policy's raises; policy "
                              f"{self.policy} runs none")
        if e.switchback and self.policy in ("static", ORACLE, REACTIVE_ORACLE):
            raise ConfigError(f"a switchback turns a policy on and off; policy {self.policy} "
                              "runs none")
        if self.delay_threshold_s is not None:
            above("delay-threshold-s", self.delay_threshold_s, 0, error=ConfigError)
        if self.binding == "spark":
            self.spark.validated(self.slots_per_node)
            if self.signals != "scheduler":
                raise ConfigError("--signals observed reads MapReduce containers; under "
                                  "--binding spark use --signals scheduler")
        elif self.spark != SparkSettings():
            raise ConfigError(f"spark-* options set the Spark application: use --binding spark "
                              f"(got --binding {self.binding})")
        return self

    @property
    def effective_delay_threshold_s(self) -> float:
        """D: the cap on a task's delay-scheduling wait and DSBRA's normaliser (always > 0)."""
        if self.delay_threshold_s is not None:
            return self.delay_threshold_s
        if self.binding == "spark":  # tasks wait at the driver, not at YARN
            return self.spark.wait_node_s if self.spark.wait_node_s > 0 else self.heartbeat_s
        if self.scheduler == "capacity":
            # min(nodes, delay) opportunities at nodes per heartbeat: under one heartbeat
            return self.heartbeat_s
        if self.delay_mode == "hfs" and self.delay_node_s > 0:
            return self.delay_node_s
        if self.delay_mode == "yarn" and self.yarn_threshold_node > 0:
            # threshold x nodes opportunities arrive at about nodes per heartbeat interval
            return max(self.yarn_threshold_node * self.heartbeat_s, self.heartbeat_s)
        return self.heartbeat_s

    @property
    def am_share(self) -> float:
        """The share of the cluster's slots AMs may hold (1 when maxAMShare is -1)."""
        return 1.0 if self.max_am_share == NO_AM_SHARE_LIMIT else self.max_am_share

    @property
    def oracle_extra_storage(self) -> float:
        """The oracle's storage above base replication, as a fraction of the base bytes."""
        return self.nodes / self.replication - 1.0

    @property
    def contended(self) -> bool:
        """Whether maps share CPUs or links (a map's cost then depends on what else runs)."""
        return self.host_cores > 0 or self.share_links

    def as_dict(self) -> dict:
        """Every field; the Spark settings only under binding spark, the contention only when on
        (so that summaries read as they did before either)."""
        d = dataclasses.asdict(self)
        if self.binding != "spark":
            del d["spark"]
        if not self.contended:
            del d["host_cores"], d["share_links"]
        return d


def _option(name: str) -> str:
    """A field's name as ``dsbra sim``'s option spells it (without the dashes in front)."""
    return name.replace("_", "-")
