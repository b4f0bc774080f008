"""The scheduler's delay threshold D in seconds, and the allocation round trip, from configs.

Counted (default): ``FSAppAttempt.getAllowedLocalityLevel`` counts *scheduling opportunities*
(node heartbeats reaching the app, full nodes included) and relaxes node locality once they
exceed ``nodes x yarn.scheduler.fair.locality.threshold.node``. Each node heartbeats every
``yarn.resourcemanager.nodemanagers.heartbeat-interval-ms``, so the app first in fair-share
order relaxes after about ``threshold x heartbeat`` (the lower bound) and one offered a single
heartbeat per interval after ``nodes x threshold x heartbeat``, which is reported as D. A
threshold < 0 means delay scheduling is off.

Timed: with continuous scheduling on, ``getAllowedLocalityLevelByTime`` relaxes after
``locality-delay-node-ms`` of waiting, which is D exactly (-1: off); thresholds are not read.

Capacity Scheduler: ``RegularContainerAllocator.canAssign`` (Hadoop 3.4.2) takes a rack-local
container once the application has missed more than ``min(nodes,
yarn.scheduler.capacity.node-locality-delay)`` scheduling opportunities (-1: no delay). The
count is the Fair Scheduler's kind, so D is reported the same way: that count times the
heartbeat (an application offered one heartbeat per interval), the lower bound the count over
the nodes times the heartbeat. It normalises asks to multiples of the minimum allocation.

The ResourceManager's ``/conf`` shows capacity-scheduler.xml's settings only when they are set
in yarn-site.xml (the Capacity Scheduler reads both); with the default file-based store neither
``/conf`` nor ``/ws/v1/cluster/scheduler-conf`` has them (checked on the bundled cluster). So
the node delay comes from ``/conf`` when there, else from the operator (``node_locality_delay``:
`dsbra observe --node-locality-delay`, the daemon's ``cluster.node_locality_delay``), else
Hadoop's default 40, and ``delay_source`` says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsbra.errors import HadoopError
from dsbra.hadoop import locality, shapes

FAIR = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler"
CAPACITY = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"


@dataclass(frozen=True)
class SchedulerSettings:
    scheduler: str
    delay_scheduling: bool
    node_threshold: float
    heartbeat_s: float
    nodes: int
    delay_threshold_s: float  #: D (0 when delay scheduling is off)
    min_delay_s: float  #: the lower bound threshold x heartbeat
    min_allocation_mb: int
    increment_mb: int
    #: where the delay came from: rm-conf, dsbra-config or hadoop-default
    delay_source: str = "rm-conf"

    @property
    def short_name(self) -> str:
        """The scheduler class without its package (``FairScheduler``), or ``unknown``."""
        return self.scheduler.rsplit(".", 1)[-1] or "unknown"

    def no_signal(self) -> str | None:
        """Why dsbra cannot see delay scheduling on this scheduler (None: it can).

        Only the Fair and Capacity Schedulers delay containers for locality in a way dsbra
        reads; on any other (the FIFO scheduler, a custom one) M and DT would be zeros that
        mean nothing, so the daemon refuses to act rather than run quietly for nothing."""
        if self.scheduler.endswith(("FairScheduler", "CapacityScheduler")):
            return None
        return f"scheduler {self.short_name}: no delay-scheduling signal; dsbra would never act"

    @property
    def reports_skips(self) -> bool:
        """The Capacity Scheduler reports the nodes an application skipped for locality
        (app activities, dsbra.observe.activities); the attribution then reads them instead of
        inferring declines from slots passed to other applications."""
        return self.scheduler.endswith("CapacityScheduler")

    def describe(self) -> str:
        """One line for a log: the scheduler, whether it delays for locality, and D."""
        if not self.delay_scheduling:
            return f"scheduler={self.short_name} delay_scheduling=off nodes={self.nodes}"
        return (f"scheduler={self.short_name} delay_scheduling=on D={self.delay_threshold_s:.1f}s "
                f"(lower bound {self.min_delay_s:.1f}s) delay_source={self.delay_source} "
                f"nodes={self.nodes} heartbeat_s={self.heartbeat_s:g}")

    def container_mb(self, asked_mb: int) -> int:
        """The container size the RM grants for an ask (normalised up to the increment)."""
        asked = max(int(asked_mb), self.min_allocation_mb, 1)
        step = max(self.increment_mb, 1)
        return -(-asked // step) * step


def _f(conf: dict[str, str], key: str, default: float) -> float:
    value = shapes.as_float(conf.get(key), None)
    return default if value is None else value


def settings_from_conf(conf: dict[str, str], nodes: int,
                       node_locality_delay: int | None = None) -> SchedulerSettings:
    """``node_locality_delay``: the Capacity Scheduler's, as the operator gives it, for when
    the RM's configuration does not show it."""
    scheduler = conf.get("yarn.resourcemanager.scheduler.class", "")
    heartbeat_s = _f(conf, "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", 1000) / 1000
    if heartbeat_s <= 0:
        raise HadoopError(f"ResourceManager reports a node heartbeat interval of {heartbeat_s} s")
    threshold = _f(conf, "yarn.scheduler.fair.locality.threshold.node", locality.THRESHOLD_OFF)
    continuous = conf.get("yarn.scheduler.fair.continuous-scheduling-enabled", "false") \
        .strip().lower() == "true"
    delay_ms = _f(conf, "yarn.scheduler.fair.locality-delay-node-ms", -1)
    is_fair = scheduler.endswith("FairScheduler")
    min_mb = int(_f(conf, "yarn.scheduler.minimum-allocation-mb", 1024))
    # Fair Scheduler rounds asks up to the increment (YARN-5735 key, then the old one)
    inc = conf.get("yarn.resource-types.memory-mb.increment-allocation") \
        or conf.get("yarn.scheduler.increment-allocation-mb")
    increment = int(shapes.as_float(inc, 1024) or 1024) if is_fair else min_mb
    is_capacity = scheduler.endswith("CapacityScheduler")
    source = "rm-conf"
    if is_capacity:
        delay, source = _capacity_node_delay(conf, node_locality_delay)
        count = min(max(nodes, 1), delay)
        threshold = count / max(nodes, 1) if delay >= 0 else -1.0
        on = count > 0
        d, d_min = (count * heartbeat_s, threshold * heartbeat_s) if on else (0.0, 0.0)
    elif is_fair and continuous:  # time-based (getAllowedLocalityLevelByTime); < 0 is off
        on = delay_ms >= 0
        d = d_min = max(delay_ms, 0) / 1000
    elif is_fair and threshold >= 0:
        on, d, d_min = True, max(nodes, 1) * threshold * heartbeat_s, threshold * heartbeat_s
    else:
        on, d, d_min = False, 0.0, 0.0
    return SchedulerSettings(scheduler=scheduler, delay_scheduling=on, node_threshold=threshold,
                             heartbeat_s=heartbeat_s, nodes=nodes, delay_threshold_s=d,
                             min_delay_s=d_min, min_allocation_mb=min_mb, increment_mb=increment,
                             delay_source=source)


def _capacity_node_delay(conf: dict[str, str], given: int | None) -> tuple[int, str]:
    """The RM's value when its configuration shows one (it is what the scheduler uses), else
    the operator's, else Hadoop's default."""
    live = shapes.as_float(conf.get("yarn.scheduler.capacity.node-locality-delay"), None)
    if live is not None:
        return int(live), "rm-conf"
    if given is not None:
        return given, "dsbra-config"
    return locality.NODE_LOCALITY_DELAY, "hadoop-default"
