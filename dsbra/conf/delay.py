"""The delay scheduling paper's sizing rule (Zaharia et al., EuroSys 2010, section 3.5). Pure.

A job of N tasks on M nodes whose blocks have R replicas reaches node locality lambda if each task
may skip D >= -(M/R) ln((1-lambda)N / (1 + (1-lambda)N)) scheduling opportunities. With L slots per
node and tasks of T seconds a slot frees every T/(L*M) seconds, so the wait is D*T/(L*M).

YARN's Fair Scheduler counts differently (FSAppAttempt.getAllowedLocalityLevel, Hadoop 3.4.2):
its threshold is a fraction of the node count, and every node heartbeat reaching the app counts
as an opportunity, full nodes included. Each node heartbeats every h seconds, so the count of D
is used up after about D*h/M seconds, whether or not a slot freed meanwhile. The time-based form
(continuous scheduling + locality-delay-node-ms) waits the paper's D*T/(L*M) directly.

The Capacity Scheduler counts too, in whole opportunities, with no time-based form
(RegularContainerAllocator.canAssign, Hadoop 3.4.2, read from the release's bytecode): a
node-local container whenever the node holds the app's data; a rack-local one once the app
has missed more than min(M, yarn.scheduler.capacity.node-locality-delay) opportunities (-1: at
once); an off-switch one at once when the app asks only for ANY, else after more than
min(M, node-locality-delay + rack-locality-additional-delay) when the latter is > -1, else
after min(M, outstanding asks x the locality wait factor min((unique locations - 1) / M, 1)).
An opportunity is a node heartbeat considering the app; a node-local allocation resets the
count (a rack-local one too while yarn.scheduler.capacity.rack-locality-full-reset is true).
So the node delay lasts min(M, delay) x h / M seconds for an app offered every heartbeat (the
first in its queue's order) and up to min(M, delay) x h for one offered one heartbeat per
interval; on a cluster smaller than the delay (Hadoop's default is 40) the cap by cluster size
makes it about one heartbeat round.

Spark waits at its driver, per task set and in time (TaskSetManager.getAllowedLocalityLevel,
Spark 4.0.1): spark.locality.wait.node, then .rack, each counted from the moment the level was
entered. Its scheduling opportunities are the application's own executor slots: S of them,
each freeing every T seconds, so D opportunities take D*T/S; within T every slot has been
offered once, so a D above S is capped at S (as YARN caps its threshold at one opportunity a
node). The rack level is the paper's rule over racks (its D2, section 3.6): HDFS's default
placement puts a block on two racks. Only nodes that run an executor can give a node-local
task, so a block none of whose replicas is on such a node can never be node-local, however
long the wait.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from dsbra.errors import InputError

#: below this share of the paper's wait, the count-based threshold is called out as too short
SHORT_HOLD = 0.5
#: racks a block's replicas span under HDFS's default placement (the second replica on another
#: rack, the third beside it)
BLOCK_RACKS = 2


@dataclass(frozen=True)
class DelaySizing:
    skip_count: float  #: D, scheduling opportunities to skip
    threshold_node: float  #: yarn.scheduler.fair.locality.threshold.node = D/M, at most 1
    wait_s: float | None  #: the paper's expected wait D*T/(L*M); None without L and T
    delay_node_ms: int | None  #: yarn.scheduler.fair.locality-delay-node-ms equal to wait_s
    yarn_count_hold_s: float  #: how long YARN's count-based threshold holds a task: D*h/M
    heartbeat_s: float
    warnings: tuple[str, ...]

    def to_dict(self) -> dict:
        out = asdict(self)
        out["warnings"] = list(self.warnings)
        return out


def skip_count(locality: float, tasks: int, nodes: int, replication: int) -> float:
    """The paper's D: -(M/R) ln((1-lambda)N / (1 + (1-lambda)N)), inputs already checked."""
    x = (1.0 - locality) * tasks
    return -(nodes / replication) * math.log(x / (1.0 + x))


def size_delay(locality: float, tasks: int, nodes: int, replication: int,
               slots_per_node: int | None = None, task_seconds: float | None = None,
               heartbeat_s: float = 1.0) -> DelaySizing:
    """D for a target node locality, its wait in seconds and the YARN settings that give it."""
    _check(locality, tasks, nodes, replication, slots_per_node, task_seconds, heartbeat_s)
    d = skip_count(locality, tasks, nodes, replication)
    hold_s = d * heartbeat_s / nodes
    warnings = []
    if d > nodes:
        warnings.append(f"D = {d:.1f} exceeds the {nodes} nodes: YARN caps "
                        "yarn.scheduler.fair.locality.threshold.node at 1.0 (one opportunity per node)")
    wait_s = delay_ms = None
    if slots_per_node is not None and task_seconds is not None:
        wait_s = d * task_seconds / (slots_per_node * nodes)
        delay_ms = round(wait_s * 1000)
        if hold_s < SHORT_HOLD * wait_s:
            warnings.append(
                f"YARN's count-based threshold {min(d / nodes, 1.0):.3f} is used up by heartbeats "
                f"(full nodes included) after about {hold_s:.2f} s, {hold_s / wait_s:.0%} of the "
                f"{wait_s:.2f} s the formula assumes; set yarn.scheduler.fair.continuous-scheduling-enabled="
                f"true and yarn.scheduler.fair.locality-delay-node-ms={delay_ms} instead")
    return DelaySizing(skip_count=d, threshold_node=min(d / nodes, 1.0), wait_s=wait_s,
                       delay_node_ms=delay_ms, yarn_count_hold_s=hold_s, heartbeat_s=heartbeat_s,
                       warnings=tuple(warnings))


def _check(locality, tasks, nodes, replication, slots_per_node, task_seconds, heartbeat_s) -> None:
    if not 0.0 < locality < 1.0:
        raise InputError(f"--locality must be strictly between 0 and 1, got {locality}")
    if tasks < 1:
        raise InputError(f"--tasks must be at least 1, got {tasks}")
    if nodes < 1:
        raise InputError(f"--nodes must be at least 1, got {nodes}")
    if not 1 <= replication <= nodes:
        raise InputError(f"--replication must be between 1 and --nodes ({nodes}), got {replication}")
    if (slots_per_node is None) != (task_seconds is None):
        raise InputError("--slots-per-node and --task-seconds go together (both give the wait in seconds)")
    if slots_per_node is not None and slots_per_node < 1:
        raise InputError(f"--slots-per-node must be at least 1, got {slots_per_node}")
    if task_seconds is not None and not (task_seconds > 0 and math.isfinite(task_seconds)):
        raise InputError(f"--task-seconds must be a finite number > 0, got {task_seconds}")
    if not (heartbeat_s > 0 and math.isfinite(heartbeat_s)):
        raise InputError(f"--heartbeat-s must be a finite number > 0, got {heartbeat_s}")


@dataclass(frozen=True)
class CapacityDelay:
    """The Capacity Scheduler's node delay for the paper's skip count D."""

    skip_count: float  #: D, from the paper's rule
    node_locality_delay: int  #: yarn.scheduler.capacity.node-locality-delay = ceil(D)
    effective_count: int  #: min(M, node_locality_delay): what canAssign compares with
    hold_s: float  #: min(M, delay) x h / M: an app offered every heartbeat
    hold_max_s: float  #: min(M, delay) x h: an app offered one heartbeat per interval
    wait_s: float | None  #: the paper's expected wait D*T/(L*M)
    warnings: tuple[str, ...]

    def to_dict(self) -> dict:
        out = asdict(self)
        out["warnings"] = list(self.warnings)
        return out


def size_capacity_delay(locality: float, tasks: int, nodes: int, replication: int,
                        slots_per_node: int | None = None, task_seconds: float | None = None,
                        heartbeat_s: float = 1.0) -> CapacityDelay:
    """The paper's D as the Capacity Scheduler's node-locality-delay, and how long it holds."""
    fair = size_delay(locality, tasks, nodes, replication, slots_per_node, task_seconds,
                      heartbeat_s)
    delay = max(math.ceil(fair.skip_count), 0)
    count = min(nodes, delay)
    hold_s, hold_max_s = count * heartbeat_s / nodes, count * heartbeat_s
    warnings = []
    if delay > nodes:
        warnings.append(f"node-locality-delay {delay} exceeds the {nodes} nodes: canAssign caps it "
                        f"at {nodes}, about one heartbeat round ({heartbeat_s:g} s)")
    if fair.wait_s is not None and hold_s < SHORT_HOLD * fair.wait_s:
        warnings.append(
            f"the Capacity Scheduler's count is used up after about {hold_s:.2f} s for an app "
            f"offered every heartbeat, {hold_s / fair.wait_s:.0%} of the {fair.wait_s:.2f} s the "
            "formula assumes, and it has no time-based delay: expect lower locality than "
            f"{locality:g} for such apps")
    return CapacityDelay(skip_count=fair.skip_count, node_locality_delay=delay,
                         effective_count=count, hold_s=hold_s, hold_max_s=hold_max_s,
                         wait_s=fair.wait_s, warnings=tuple(warnings))


@dataclass(frozen=True)
class SparkDelay:
    """Spark's locality waits for the paper's skip counts."""

    skip_count: float  #: D at the node level, over the M nodes
    rack_skip_count: float | None  #: D at the rack level, over the racks; None on one rack
    executors: int
    slots: int  #: S = executors x cores per executor: task slots, one freeing every T/S seconds
    executor_nodes: int  #: nodes the executors run on
    reach: float  #: share of blocks with a replica on an executor's node: node locality's ceiling
    task_seconds: float
    node_ms: int  #: min(D, S)*T/S, at least 1 ms (0 would turn the level off)
    rack_ms: int  #: min(D_rack, S)*T/S; 0 on one rack, where every executor is rack-local at once
    warnings: tuple[str, ...]

    def settings(self) -> dict[str, str]:
        """spark-defaults.conf's lines: whole milliseconds with their unit, as Spark reads a time
        (it refuses "3.0s"); the base key and the process level (cached partitions, never an
        HDFS read) as the node level, as Spark defaults them."""
        node = f"{self.node_ms}ms"
        return {"spark.locality.wait": node, "spark.locality.wait.process": node,
                "spark.locality.wait.node": node, "spark.locality.wait.rack": f"{self.rack_ms}ms"}

    def to_dict(self) -> dict:
        return {**asdict(self), "warnings": list(self.warnings), "settings": self.settings()}


def size_spark_delay(locality: float, tasks: int, nodes: int, replication: int, *, executors: int,
                     executor_cores: int, task_seconds: float, executor_nodes: int | None = None,
                     racks: int = 1) -> SparkDelay:
    """spark.locality.wait per level for a target node locality; ``executor_nodes`` defaults to
    the executors spread one a node."""
    _check(locality, tasks, nodes, replication, None, None, 1.0)
    hosts = min(executors, nodes) if executor_nodes is None else executor_nodes
    _check_spark(nodes, executors, executor_cores, hosts, racks, task_seconds)
    slots = executors * executor_cores
    d = skip_count(locality, tasks, nodes, replication)
    rack_d = skip_count(locality, tasks, racks, min(replication, racks, BLOCK_RACKS)) if racks > 1 else None
    reach = replica_reach(nodes, hosts, replication)
    warnings = []
    if d > slots:
        warnings.append(f"D = {d:.1f} exceeds the {slots} executor slots: each is offered once within a "
                        f"task length, so the node wait is capped at T = {task_seconds:g} s; more executors "
                        "(or replicas) would reach the locality sooner")
    if reach < locality:
        warnings.append(
            f"executors on {hosts} of {nodes} nodes: {reach:.0%} of the blocks have a replica on one "
            f"of them ({replication} replicas on distinct nodes), so node locality {locality:g} is out "
            "of reach whatever the wait; spread the executors over more nodes (more executors of "
            "fewer cores) or raise the replication of what the jobs read")
    wait_ms = lambda skips: _spark_ms(min(skips, slots) * task_seconds / slots)  # noqa: E731
    return SparkDelay(skip_count=d, rack_skip_count=rack_d, executors=executors, slots=slots,
                      executor_nodes=hosts, reach=reach, task_seconds=task_seconds, node_ms=wait_ms(d),
                      rack_ms=0 if rack_d is None else wait_ms(rack_d), warnings=tuple(warnings))


def replica_reach(nodes: int, hosts: int, replication: int) -> float:
    """The share of blocks with a replica on one of ``hosts`` of the ``nodes``: a block's R
    replicas on R distinct nodes miss them all with probability C(M-H, R)/C(M, R)."""
    return 1.0 - math.comb(nodes - hosts, replication) / math.comb(nodes, replication)


def _spark_ms(seconds: float) -> int:
    """At least 1 ms: Spark takes 0 for no delay scheduling at all."""
    return max(1, round(seconds * 1000))


def _check_spark(nodes, executors, executor_cores, hosts, racks, task_seconds) -> None:
    if executors < 1:
        raise InputError(f"--executors must be at least 1, got {executors}")
    if executor_cores < 1:
        raise InputError(f"--executor-cores must be at least 1, got {executor_cores}")
    if not 1 <= hosts <= min(executors, nodes):
        raise InputError(f"--executor-nodes must be between 1 and the executors and the nodes "
                         f"({min(executors, nodes)}), got {hosts}")
    if not 1 <= racks <= nodes:
        raise InputError(f"--racks must be between 1 and --nodes ({nodes}), got {racks}")
    if not (task_seconds > 0 and math.isfinite(task_seconds)):
        raise InputError(f"--task-seconds must be a finite number > 0, got {task_seconds}")
