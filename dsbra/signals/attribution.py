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
* A task of application A was *passed over* when, during its wait, a container of another
  application B launched on an elsewhere node while B held more than A throughout the
  allocation round trip around that launch (B's least over [t - grace_s, t) above A's most
  over [t - grace_s, t + grace_s]). The Fair Scheduler offers a node to the application
  furthest below its fair share first (equal weights: the one holding least), so without delay
  scheduling A, which had a map waiting, would have taken that slot; B got it because A
  declined it for locality. Under load this is how a declined slot shows: it goes at once to
  the next application instead of standing idle. The span allows for launches (what the
  history files record) trailing the scheduler's allocations.
* The task is *delayed* (counts in M) iff, past its own allocation round trip
  ([scheduled + grace_s, launched)), some elsewhere node stood idle or the task was passed over.
  That covers a task that launched node-local after such a wait and one that gave up and
  launched non-local after about D.
* Its delay (summed into DT) runs from its first declined opportunity (the start of the room
  on an idle elsewhere node, or the passed-over container's launch, never before it was
  scheduled) to its launch, capped at D, as delay scheduling caps it.

The wait that comes from the cluster being full and shared fairly (no room elsewhere, slots
going to applications that hold less), and the ramp-up of a job (containers handed out one per
node heartbeat), are not delay scheduling and do not count.
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
    app: np.ndarray | None = None  # int32: the task's application (None: not known)

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
    app: np.ndarray | None = None  # int32: the container's application (None: not known)


def _held_steps(start_ms: np.ndarray, end_ms: np.ndarray, mem_mb: np.ndarray, key: np.ndarray,
                n_keys: int):
    """(breakpoints, held[k, key]): memory held per key (node or application) on
    [t_k, t_{k+1}), from containers held over [start, end)."""
    times = np.concatenate([start_ms, end_ms])
    delta = np.concatenate([mem_mb, -mem_mb]).astype(np.int64)
    breaks, inverse = np.unique(times, return_inverse=True)
    step = np.zeros((len(breaks), n_keys), dtype=np.int64)
    np.add.at(step, (inverse, np.concatenate([key, key]).astype(np.int64)), delta)
    return breaks, np.cumsum(step, axis=0)


def free_memory_steps(containers: Containers, capacity_mb: np.ndarray):
    """(breakpoints, free[k, node]): free memory per node on [t_k, t_{k+1}); before t_0 all free."""
    n_nodes = len(capacity_mb)
    ok = (containers.node >= 0) & (containers.node < n_nodes) & \
         (containers.end_ms > containers.start_ms)
    breaks, held = _held_steps(containers.start_ms[ok], containers.end_ms[ok],
                               containers.mem_mb[ok], containers.node[ok], n_nodes)
    return breaks, capacity_mb[None, :].astype(np.int64) - held


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


Intervals = list[tuple[np.ndarray, np.ndarray]]  # per node: idle [start, end) ms, sorted


def _idle(room_a: np.ndarray, room_b: np.ndarray, starts: np.ndarray, settle_ms: int):
    """Idle: within a room interval, ``settle_ms`` after its start and after any launch."""
    ia, ib = room_a + settle_ms, room_b
    keep = ib > ia
    starts = np.sort(starts)
    return _subtract(ia[keep], ib[keep], starts, starts + settle_ms)


def idle_intervals(containers: Containers, capacity_mb: np.ndarray, mem_mb: int, end_ms: int,
                   settle_ms: int, node_up: np.ndarray) -> Intervals:
    """Idle spells per node for a container of ``mem_mb``, on the reconstructed occupancy."""
    breaks, free = free_memory_steps(containers, capacity_mb)
    lo = np.iinfo(np.int64).min // 4
    breaks = np.r_[lo, breaks]
    free = np.vstack([capacity_mb[None, :].astype(np.int64), free])
    idle = []
    for n in range(len(capacity_mb)):
        if not node_up[n]:
            idle.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        a, b = _runs(free[:, n] >= mem_mb, breaks, end_ms)
        idle.append(_idle(a, b, containers.start_ms[containers.node == n], settle_ms))
    return idle


def sampled_idle_intervals(samples: Samples, containers: Containers, mem_mb: int,
                           settle_ms: int) -> Intervals:
    """Idle spells per node on the RM's samples: room where two consecutive samples show it."""
    t = samples.times_ms
    ok = samples.free_mb >= mem_mb
    both = ok[:-1] & ok[1:]
    idle = []
    for n in range(samples.free_mb.shape[1]):
        a, b = _runs(both[:, n], t[:-1], int(t[-1]))
        idle.append(_idle(a, b, containers.start_ms[containers.node == n], settle_ms))
    return idle


@dataclass
class Holdings:
    """Around each container's launch t: ``most[c, app]``, the most every application held
    during [t - lag, t + lag], and ``owner_least[c]``, the least its own application held during
    [t - lag, t) (MB). Launch times trail the scheduler's allocations by up to ``lag``, so an
    application ranked behind another only if it was behind over that whole span."""

    most: np.ndarray  # int64 [C, apps]
    owner_least: np.ndarray  # int64 [C]


def holdings_around_launch(containers: Containers, lag_ms: int) -> Holdings | None:
    """None when the containers carry no application."""
    if containers.app is None or len(containers.app) == 0:
        return None
    apps = containers.app.astype(np.int64)
    breaks, held = _held_steps(containers.start_ms, containers.end_ms, containers.mem_mb, apps,
                               int(apps.max()) + 1)
    usage = np.vstack([np.zeros((1, held.shape[1]), np.int64), held])  # row 0: before any break
    start = containers.start_ms
    lo = np.searchsorted(breaks, start - lag_ms, side="right")  # row in force at t - lag
    own = np.searchsorted(breaks, start, side="left")  # last row before t
    hi = np.searchsorted(breaks, start + lag_ms, side="right")  # row in force at t + lag
    most = np.stack([usage[lo[c]:hi[c] + 1].max(axis=0) for c in range(len(start))])
    owner_least = np.array([usage[lo[c]:max(own[c], lo[c]) + 1, apps[c]].min()
                            for c in range(len(start))], np.int64)
    return Holdings(most, owner_least)


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
    cap_ms = params.delay_threshold_s * 1000
    by_mem = {int(m): idle_intervals(containers, capacity_mb, int(m), horizon, settle_ms, up)
              for m in np.unique(tasks.mem_mb)}
    by_mem_sampled = {int(m): sampled_idle_intervals(samples, containers, int(m), settle_ms)
                      for m in np.unique(tasks.mem_mb)} if samples is not None else {}
    holdings = holdings_around_launch(containers, grace_ms) if tasks.app is not None else None
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
        idle = (by_mem_sampled if use_samples else by_mem)[int(tasks.mem_mb[j])]
        first = _first_idle(idle, nodes, t0 + grace_ms, t1)
        if first is not None:
            first = max(first - settle_ms, t0)  # the idle spell's room began settle_s earlier
        if holdings is not None:
            passed = _first_passed_over(containers, holdings, int(tasks.app[j]), eligible,
                                        t0 + grace_ms, t1)
            if passed is not None:
                first = passed if first is None else min(first, passed)
        if first is not None:
            delayed[j] = True
            delay_s[j] = min(t1 - first, cap_ms) / 1000.0
    return delay_s, delayed, tasks.local(), wait_s, sampled


def _first_idle(intervals: Intervals, nodes: np.ndarray, t0: int, t1: int) -> int | None:
    """Earliest start of an idle interval of ``nodes`` that overlaps [t0, t1), or None."""
    first = None
    for n in nodes:
        a, b = intervals[n]
        i = int(np.searchsorted(b, t0, side="right"))
        if i < len(a) and a[i] < t1:
            first = int(a[i]) if first is None else min(first, int(a[i]))
    return first


def _first_passed_over(containers: Containers, holdings: Holdings, app: int,
                       elsewhere: np.ndarray, t0: int, t1: int) -> int | None:
    """Earliest launch in [t0, t1), on an elsewhere node, of a container of another application
    that held more than ``app`` throughout the allocation round trip before it."""
    start, node, owner = containers.start_ms, containers.node, containers.app
    ok = (start >= t0) & (start < t1) & (owner != app) & (node >= 0) & (node < len(elsewhere))
    idx = np.flatnonzero(ok)
    if len(idx) == 0:
        return None
    idx = idx[elsewhere[node[idx]]]
    if len(idx) == 0 or app >= holdings.most.shape[1]:
        return None
    ahead = holdings.most[idx, app] < holdings.owner_least[idx]
    return int(start[idx[ahead]].min()) if ahead.any() else None
