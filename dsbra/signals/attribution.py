"""Which part of a map task's wait (scheduled -> launched) was delay scheduling.

The rule (documented with its validation in docs/metrics.md). Free memory per node comes from
the ResourceManager's own view, sampled at every poll (``Samples``): a node has room over
[t_k, t_k+1) when both samples show room. Where no samples cover a task's wait (a window read
from history alone), occupancy is reconstructed from the containers of all observed jobs (AM,
map and reduce attempts, launch to finish, at the job's normalised container size) against each
NodeManager's capacity; that view misses containers allocated but not yet launched or finished
but not yet released, so it sees more room than the scheduler did. For a task, the
*elsewhere* nodes are the running NodeManagers holding none of its split's replicas.

* A node has *room* for the task when its free memory fits the task's container.
* A node is *idle* when it has had room for the last ``settle_s`` seconds and no container
  started on it in that time. Without delay scheduling a node with room is handed a container
  within an allocation round trip (NodeManager heartbeat -> RM -> AM heartbeat -> launch), so
  a node that stays idle longer is one every waiting application declined.
* The task is *delayed* (counts in M) iff some elsewhere node was idle at some moment of
  [scheduled + grace_s, launched): it waited past its own allocation round trip while a
  non-local node stood idle. That covers a task that launched node-local after such a wait
  and one that gave up and launched non-local after about D.
* Its delay (summed into DT) is the time within [scheduled, launched) during which some
  elsewhere node had room, capped at D, as delay scheduling caps it.

The wait that comes from the cluster being full (no room elsewhere), and the ramp-up of a
job (containers handed out one per node heartbeat), are not delay scheduling and do not count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AttributionParams:
    delay_threshold_s: float  #: D, the cap
    grace_s: float = 2.5  #: a task's own allocation round trip
    settle_s: float = 2.5  #: how long a node must sit idle to count as declined


@dataclass
class MapTasks:
    """One row per counted map task (its first attempt).

    ``split_indptr``/``split_nodes``: CSR of the node ids (into the node table) holding the
    task's split; ``node``: node id where it launched.
    """

    scheduled_ms: np.ndarray  # int64
    launch_ms: np.ndarray  # int64
    node: np.ndarray  # int32
    mem_mb: np.ndarray  # int64: container size the task asked for
    split_indptr: np.ndarray  # int64, len n+1
    split_nodes: np.ndarray  # int32

    def __len__(self) -> int:
        return len(self.scheduled_ms)

    def local(self) -> np.ndarray:
        """Node-local: launched on a node holding its split."""
        rows = np.repeat(np.arange(len(self)), np.diff(self.split_indptr))
        hit = self.split_nodes == self.node[rows]
        out = np.zeros(len(self), dtype=bool)
        out[rows[hit]] = True
        return out


@dataclass
class Containers:
    """Container occupancy: one row per container (node id, [start, end) ms, memory)."""

    node: np.ndarray  # int32
    start_ms: np.ndarray  # int64
    end_ms: np.ndarray  # int64 (ongoing containers: the observation time)
    mem_mb: np.ndarray  # int64


def free_memory_steps(containers: Containers, capacity_mb: np.ndarray):
    """(breakpoints, free[k, node]): free memory per node on [t_k, t_{k+1}); before t_0 all free."""
    n_nodes = len(capacity_mb)
    ok = (containers.node >= 0) & (containers.node < n_nodes) & \
         (containers.end_ms > containers.start_ms)
    node = containers.node[ok]
    times = np.concatenate([containers.start_ms[ok], containers.end_ms[ok]])
    delta = np.concatenate([containers.mem_mb[ok], -containers.mem_mb[ok]]).astype(np.int64)
    nodes = np.concatenate([node, node])
    breaks, inverse = np.unique(times, return_inverse=True)
    step = np.zeros((len(breaks), n_nodes), dtype=np.int64)
    np.add.at(step, (inverse, nodes), delta)
    free = capacity_mb[None, :].astype(np.int64) - np.cumsum(step, axis=0)
    return breaks, free


def _runs(mask: np.ndarray, breaks: np.ndarray, end: int):
    """Intervals [a, b) where the step function ``mask`` (on [breaks[k], breaks[k+1])) is true."""
    edges = np.diff(np.r_[0, mask.astype(np.int8), 0])
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1)
    times = np.r_[breaks, end]
    return times[starts], times[stops]


def _subtract(a: np.ndarray, b: np.ndarray, cut_a: np.ndarray, cut_b: np.ndarray):
    """Intervals [a, b) minus the union of [cut_a, cut_b) (all sorted by start)."""
    if len(cut_a) == 0 or len(a) == 0:
        return a, b
    events = sorted(zip(cut_a.tolist(), cut_b.tolist()))
    merged: list[list[int]] = []
    for s, e in events:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    out_a, out_b = [], []
    for s, e in zip(a.tolist(), b.tolist()):
        cur = s
        for cs, ce in merged:
            if ce <= cur or cs >= e:
                continue
            if cs > cur:
                out_a.append(cur)
                out_b.append(cs)
            cur = max(cur, ce)
            if cur >= e:
                break
        if cur < e:
            out_a.append(cur)
            out_b.append(e)
    return np.asarray(out_a, np.int64), np.asarray(out_b, np.int64)


@dataclass
class Samples:
    """The RM's free memory per node at poll times: ``free_mb[k, node]`` (-1: node down)."""

    times_ms: np.ndarray  # int64, ascending
    free_mb: np.ndarray  # int64 [K, n_nodes]

    def covers(self, t0: int, t1: int) -> bool:
        return len(self.times_ms) >= 2 and self.times_ms[0] <= t0 and self.times_ms[-1] >= t1


@dataclass
class NodeIntervals:
    """Per node: room intervals and idle intervals for one container size (ms)."""

    room: list[tuple[np.ndarray, np.ndarray]]
    idle: list[tuple[np.ndarray, np.ndarray]]


def node_intervals(containers: Containers, capacity_mb: np.ndarray, mem_mb: int, end_ms: int,
                   settle_ms: int, node_up: np.ndarray) -> NodeIntervals:
    breaks, free = free_memory_steps(containers, capacity_mb)
    lo = np.iinfo(np.int64).min // 4
    breaks = np.r_[lo, breaks]
    free = np.vstack([capacity_mb[None, :].astype(np.int64), free])
    room, idle = [], []
    for n in range(len(capacity_mb)):
        if not node_up[n]:
            empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            room.append(empty)
            idle.append(empty)
            continue
        a, b = _runs(free[:, n] >= mem_mb, breaks, end_ms)
        room.append((a, b))
        ia, ib = a + settle_ms, b
        keep = ib > ia
        starts = containers.start_ms[containers.node == n]
        ia, ib = _subtract(ia[keep], ib[keep], np.sort(starts), np.sort(starts) + settle_ms)
        idle.append((ia, ib))
    return NodeIntervals(room, idle)


def sampled_intervals(samples: Samples, containers: Containers, mem_mb: int,
                      settle_ms: int) -> NodeIntervals:
    """Room where two consecutive samples both show it; idle as in :func:`node_intervals`."""
    t = samples.times_ms
    ok = samples.free_mb >= mem_mb
    both = ok[:-1] & ok[1:]
    room, idle = [], []
    for n in range(samples.free_mb.shape[1]):
        a, b = _runs(both[:, n], t[:-1], int(t[-1]))
        room.append((a, b))
        ia, ib = a + settle_ms, b
        keep = ib > ia
        starts = np.sort(containers.start_ms[containers.node == n])
        idle.append(_subtract(ia[keep], ib[keep], starts, starts + settle_ms))
    return NodeIntervals(room, idle)


def _overlap(intervals: list[tuple[np.ndarray, np.ndarray]], nodes: np.ndarray, t0: int,
             t1: int) -> float:
    """Measure (ms) of the union over ``nodes`` of their intervals clipped to [t0, t1)."""
    pieces = []
    for n in nodes:
        a, b = intervals[n]
        if len(a) == 0:
            continue
        i = max(int(np.searchsorted(b, t0, side="right")), 0)
        j = int(np.searchsorted(a, t1, side="left"))
        if j > i:
            pieces.append(np.stack([np.maximum(a[i:j], t0), np.minimum(b[i:j], t1)], 1))
    if not pieces:
        return 0.0
    p = np.concatenate(pieces)
    p = p[np.argsort(p[:, 0], kind="stable")]
    total, cur_s, cur_e = 0, int(p[0, 0]), int(p[0, 1])
    for s, e in p[1:].tolist():
        if s > cur_e:
            total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return float(total + cur_e - cur_s)


def attribute(tasks: MapTasks, containers: Containers, capacity_mb: np.ndarray,
              params: AttributionParams, node_up: np.ndarray | None = None,
              end_ms: int | None = None, samples: Samples | None = None):
    """(delay_s, delayed, local, wait_s, sampled) per task under the rule of this module;
    ``sampled`` tells which tasks were judged on the RM's sampled view."""
    n = len(tasks)
    n_nodes = len(capacity_mb)
    wait_s = np.maximum(tasks.launch_ms - tasks.scheduled_ms, 0) / 1000.0
    delay_s = np.zeros(n)
    delayed = np.zeros(n, dtype=bool)
    sampled = np.zeros(n, dtype=bool)
    if n == 0 or n_nodes == 0:
        return delay_s, delayed, tasks.local() if n else delayed, wait_s, sampled
    up = np.ones(n_nodes, bool) if node_up is None else np.asarray(node_up, bool)
    horizon = int(max(tasks.launch_ms.max(), containers.end_ms.max(initial=0))
                  if end_ms is None else end_ms)
    grace_ms, settle_ms = int(params.grace_s * 1000), int(params.settle_s * 1000)
    by_mem = {int(m): node_intervals(containers, capacity_mb, int(m), horizon, settle_ms, up)
              for m in np.unique(tasks.mem_mb)}
    by_mem_sampled = {int(m): sampled_intervals(samples, containers, int(m), settle_ms)
                      for m in np.unique(tasks.mem_mb)} if samples is not None else {}
    for j in range(n):
        t0, t1 = int(tasks.scheduled_ms[j]), int(tasks.launch_ms[j])
        use_samples = samples is not None and samples.covers(t0, t1)
        sampled[j] = use_samples
        if t1 - t0 <= grace_ms:
            continue
        eligible = up.copy()
        split = tasks.split_nodes[tasks.split_indptr[j]:tasks.split_indptr[j + 1]]
        eligible[split[(split >= 0) & (split < n_nodes)]] = False
        nodes = np.flatnonzero(eligible)
        if len(nodes) == 0:
            continue
        if use_samples:
            iv = by_mem_sampled[int(tasks.mem_mb[j])]
        else:
            iv = by_mem[int(tasks.mem_mb[j])]
        if _overlap(iv.idle, nodes, t0 + grace_ms, t1) > 0:
            delayed[j] = True
            delay_s[j] = min(_overlap(iv.room, nodes, t0, t1) / 1000.0,
                             params.delay_threshold_s)
    return delay_s, delayed, tasks.local(), wait_s, sampled
