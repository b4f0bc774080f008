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
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from dsbra.errors import InputError

#: below this share of the paper's wait, the count-based threshold is called out as too short
SHORT_HOLD = 0.5


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


def size_delay(locality: float, tasks: int, nodes: int, replication: int,
               slots_per_node: int | None = None, task_seconds: float | None = None,
               heartbeat_s: float = 1.0) -> DelaySizing:
    """D for a target node locality, its wait in seconds and the YARN settings that give it."""
    _check(locality, tasks, nodes, replication, slots_per_node, task_seconds, heartbeat_s)
    x = (1.0 - locality) * tasks
    d = -(nodes / replication) * math.log(x / (1.0 + x))
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
