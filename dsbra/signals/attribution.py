"""Which part of a map task's wait (scheduled -> launched) was delay scheduling.

The rule (documented with its validation in docs/metrics.md). Free memory per node comes from
the ResourceManager's own view, sampled at every poll (``Samples``): a node has room over
[t_k, t_k+1) when both samples show room. Where no samples cover a task's wait (a window read
from history alone), occupancy is reconstructed from the containers of all observed jobs (AM,
map and reduce attempts, launch to finish, at the job's normalised container size) against each
NodeManager's capacity; that view misses containers allocated but not yet launched or finished
but not yet released, so it sees more room than the scheduler did. For a task, the
*elsewhere* nodes are the running NodeManagers holding none of its split's replicas.

*The lead* (``lead``, per window): how long before its launch (what the history records) a
container may have been allocated. A container's allocation is seen in the RM's samples before
its launch when the RM's used memory on its node exceeds what the observed containers held there
(launch to finish + ``release_s``; an AM to ``am_linger_s`` after its job's finish) by at least
its size at the last poll before its launch; it was allocated after the last poll before that
showing less, which bounds its lead. The window's lead is the ``lead_quantile`` (95 %) of
these bounds over its containers (those no poll caught count ``grace_s``), never below
``grace_s``; without samples it is ``grace_s``. It grows with load (2.5-4.4 s in the
validation runs on the bundled cluster, 4.6 s beside another cluster's load), where a fixed
allowance let allocated-but-not-launched containers pass for room.

The Fair Scheduler delays an *application*, not a task: all maps of a job share one locality
level, and when it declines a node it declines it for every pending map (it would have taken
the node for any map whose split is there). So the rule gathers *declines*, (application A,
node n, span), from four kinds of evidence, and then marks every map of A that was waiting
during a decline's span on a node holding none of its split. Only a task that waited longer
than the lead gives evidence (a shorter wait is its own allocation round trip); it was pending
at the RM until ``lead`` before its launch (its allocation came after that):

* A node has *room* for the task when its free memory fits the task's container.
* *Idle* (light load): a node that has had room for the last ``settle_s`` seconds with no
  container started on it in that time. Without delay scheduling a node with room is handed a
  container within an allocation round trip (NodeManager heartbeat -> RM -> AM heartbeat ->
  launch), so a node that stays idle longer is one every waiting application declined. A task
  waiting past its own round trip ([scheduled + grace_s, launched)) while an elsewhere node is
  idle gives a decline by its application of that node, from the start of the room (never
  before the task was scheduled) to the end of the spell or the launch.
* *Passed over* (busy load): during the task's wait past its round trip, a container of another
  application B launched on an elsewhere node while B held more than A throughout the
  allocation round trip around that launch (B's least over [t - lead, t) above A's most
  over [t - lead, t + lead]). The Fair Scheduler offers a node to the application
  furthest below its fair share first (equal weights: the one holding least), so without delay
  scheduling A, which had a map waiting, would have taken that slot; B got it because A
  declined it for locality. The span allows for launches (what the history files record)
  trailing the scheduler's allocations. Decline: that node at that launch.
  Not on the Capacity Scheduler (``passed_over=False``): there a later application takes a
  slot the earlier one did not decline for locality too (the per-heartbeat off-switch limit,
  user and AM limits), and read as "B was submitted after A" it flagged a map with delay
  scheduling off in a validation run; the scheduler's own reported skips
  (``reported``, dsbra.observe.activities) take its place.
* *Sampled room* (any load): a poll at which the RM itself showed room on an elsewhere node
  while the task was past its own round trip and still pending ([scheduled + grace_s,
  launched - lead)). With continuous scheduling the RM offers a node with room to every
  waiting application many times a second, so a slot the RM still shows free while A has had a
  map pending for longer than a round trip is one A declined (the runs with delay scheduling
  off show none). Decline: that node at that poll.
* *Certain room* (short spells, any load): a span in which an elsewhere node certainly had room
  by the scheduler's books while the task was certainly pending there. Each observed container
  is counted as held from ``lead`` before its launch (its allocation came at most that much
  earlier) to ``release_s`` after its finish (the RM frees it at the node's next
  heartbeat), an AM's (its application's first container) to ``am_linger_s`` after its job's
  finish (the AM outlives the job it reports as finished); the task is pending at the RM from
  its scheduling until ``lead`` before its launch. With continuous scheduling the RM offers
  every node with room to every application many times a second, so an application that had a
  map pending and let such a span pass declined the node; without delay scheduling it would
  have taken it (the runs with it off show no such span). This finds the slots that stood free
  for 0.5-1.5 s and then went to a newly arrived job, too short for the idle test. Where the RM
  samples cover the span, a sample showing the node without room vetoes ``release_s`` around it.
  Decline: the span.

A map task is *delayed* (counts in M) iff a decline by its application of a node holding none
of its split overlaps its wait [scheduled, launched) for some time (a map launched as soon as
it was scheduled waited through none, however long its siblings waited). That covers a task
that launched node-local after such a wait, one that gave up and launched non-local after
about D, and the other maps of the job that waited alongside it. Its delay (summed into DT)
runs from the start of the first such decline (never before it was scheduled) to its launch,
capped at D, as delay scheduling caps it.

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
    release_s: float = 1.0  #: finish -> the RM frees the container (a NodeManager heartbeat)
    am_linger_s: float = 8.0  #: job finish -> the RM frees its AM's container
    #: quantile (percent) of the containers' sampled allocation -> launch leads taken as the
    #: window's lead (never below grace_s); used only where RM samples exist
    lead_quantile: float = 95.0
    #: whether a slot going to an application holding more is evidence of a decline (the Fair
    #: Scheduler's fair-share order; not the Capacity Scheduler's, see the module docstring)
    passed_over: bool = True


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


def _room_runs(containers: Containers, capacity_mb: np.ndarray, mem_mb: int,
               end_ms: int) -> Intervals:
    """Per node, the spans where the containers leave room for one of ``mem_mb``."""
    breaks, free = free_memory_steps(containers, capacity_mb)
    breaks = np.r_[np.iinfo(np.int64).min // 4, breaks]
    free = np.vstack([capacity_mb[None, :].astype(np.int64), free])
    return [_runs(free[:, n] >= mem_mb, breaks, end_ms) for n in range(len(capacity_mb))]


def idle_intervals(containers: Containers, capacity_mb: np.ndarray, mem_mb: int, end_ms: int,
                   settle_ms: int, node_up: np.ndarray) -> Intervals:
    """Idle spells per node for a container of ``mem_mb``, on the reconstructed occupancy."""
    idle = []
    for n, (a, b) in enumerate(_room_runs(containers, capacity_mb, mem_mb, end_ms)):
        if not node_up[n]:
            idle.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
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


def _first_of_app(containers: Containers) -> np.ndarray:
    """Each application's first container (its AM); none when containers carry no application."""
    first = np.zeros(len(containers.start_ms), bool)
    if containers.app is None or len(first) == 0:
        return first
    order = np.lexsort((containers.start_ms, containers.app))
    app = containers.app[order]
    first[order[np.r_[True, app[1:] != app[:-1]]]] = True
    return first


def allocation_leads(containers: Containers, capacity_mb: np.ndarray, samples: Samples | None,
                     grace_ms: int, release_ms: int, am_linger_ms: int) -> np.ndarray:
    """Per container, the longest its allocation can have preceded its launch by the RM's
    samples (ms, never below ``grace_ms``). The RM's used memory on a node at a poll, less what
    the observed containers held then (launch to finish + ``release_ms``, an AM to
    ``am_linger_ms`` after its job's finish), is what the scheduler had allocated but the
    history does not yet show. When the last poll before a container's launch shows such an
    excess of at least its memory, the RM had already allocated it; it was allocated after the
    last poll before that showing less, so its lead is at most the launch less that poll's time.
    Containers no poll caught before their launch count ``grace_ms``."""
    lead = np.full(len(containers.start_ms), grace_ms, np.int64)
    if samples is None or len(samples.times_ms) == 0 or len(lead) == 0:
        return lead
    t = samples.times_ms
    n_nodes = min(len(capacity_mb), samples.free_mb.shape[1])
    end = containers.end_ms + np.where(_first_of_app(containers), am_linger_ms, release_ms)
    ok = (containers.node >= 0) & (containers.node < n_nodes)
    if not ok.any():
        return lead
    breaks, held = _held_steps(containers.start_ms[ok], end[ok], containers.mem_mb[ok],
                               containers.node[ok], n_nodes)
    row = np.searchsorted(breaks, t, side="right") - 1  # step in force at each poll (-1: none)
    held_at = np.where(row[:, None] >= 0, held[np.maximum(row, 0)], 0)  # [K, node]
    free = samples.free_mb[:, :n_nodes]
    excess = np.where(free >= 0, capacity_mb[None, :n_nodes] - free - held_at, -1)
    k_before = np.searchsorted(t, containers.start_ms, side="left") - 1  # last poll before launch
    for n in range(n_nodes):
        mine = np.flatnonzero((containers.node == n) & (k_before >= 0))
        for m in np.unique(containers.mem_mb[mine]):
            cs = mine[containers.mem_mb[mine] == m]
            # the last poll at or before each poll whose excess is short of m (-1: none)
            last_short = np.maximum.accumulate(np.where(excess[:, n] < m, np.arange(len(t)), -1))
            k = k_before[cs]
            j = last_short[k]
            caught = (j < k) & (j >= 0)
            lead[cs[caught]] = np.maximum(grace_ms, containers.start_ms[cs[caught]] - t[j[caught]])
    return lead


def measured_lead(containers: Containers, capacity_mb: np.ndarray, samples: Samples | None,
                  params: AttributionParams) -> int:
    """The window's allocation -> launch lead (ms): the ``lead_quantile`` of the containers'
    sampled leads, never below ``grace_s``; ``grace_s`` without samples."""
    grace_ms = int(params.grace_s * 1000)
    if samples is None or len(samples.times_ms) < 2 or len(containers.start_ms) == 0:
        return grace_ms
    leads = allocation_leads(containers, capacity_mb, samples, grace_ms,
                             int(params.release_s * 1000), int(params.am_linger_s * 1000))
    return max(grace_ms, int(np.percentile(leads, params.lead_quantile)))


def certain_room(containers: Containers, capacity_mb: np.ndarray, mem_mb: int, end_ms: int,
                 lead_ms: int, release_ms: int, am_linger_ms: int,
                 samples: Samples | None = None) -> Intervals:
    """Spans per node where the scheduler certainly had room for ``mem_mb``: every container
    held from ``lead_ms`` before its launch to ``release_ms`` after its finish (an AM to
    ``am_linger_ms`` after), less ``release_ms`` around every RM sample showing no room."""
    end = containers.end_ms + np.where(_first_of_app(containers), am_linger_ms, release_ms)
    widened = Containers(containers.node, containers.start_ms - lead_ms, end, containers.mem_mb)
    out = []
    for n, (a, b) in enumerate(_room_runs(widened, capacity_mb, mem_mb, end_ms)):
        if samples is not None and len(samples.times_ms) and n < samples.free_mb.shape[1]:
            full = samples.times_ms[(samples.free_mb[:, n] >= 0) & (samples.free_mb[:, n] < mem_mb)]
            a, b = _subtract(a, b, full - release_ms, full + release_ms)
        out.append((a, b))
    return out


def _overlaps(intervals: Intervals, nodes: np.ndarray, t0: int, t1: int):
    """(node, start, end) of every interval of ``nodes`` overlapping [t0, t1)."""
    out = []
    for n in nodes:
        a, b = intervals[n]
        i = int(np.searchsorted(b, t0, side="right"))
        j = int(np.searchsorted(a, t1, side="left"))
        for x, y in zip(a[i:j].tolist(), b[i:j].tolist()):
            out.append((int(n), x, y))
    return out


def attribute(tasks: MapTasks, containers: Containers, capacity_mb: np.ndarray,
              params: AttributionParams, node_up: np.ndarray | None = None,
              end_ms: int | None = None, samples: Samples | None = None,
              reported: np.ndarray | None = None):
    """(delay_s, delayed, local, wait_s, sampled) per task under the rule of this module;
    ``sampled`` tells which tasks were judged on the RM's sampled view. ``reported``: declines
    the scheduler itself reported, rows (application, node, ms) (the Capacity Scheduler's
    app activities, dsbra.observe.activities), taken as they are besides the inferred ones."""
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
    release_ms, linger_ms = int(params.release_s * 1000), int(params.am_linger_s * 1000)
    cap_ms = params.delay_threshold_s * 1000
    lead_ms = measured_lead(containers, capacity_mb, samples, params)
    mems = [int(m) for m in np.unique(tasks.mem_mb)]
    by_mem = {m: idle_intervals(containers, capacity_mb, m, horizon, settle_ms, up) for m in mems}
    by_mem_sampled = {m: sampled_idle_intervals(samples, containers, m, settle_ms)
                      for m in mems} if samples is not None else {}
    room = {m: certain_room(containers, capacity_mb, m, horizon, lead_ms, release_ms, linger_ms,
                            samples) for m in mems}
    holdings = holdings_around_launch(containers, lead_ms) \
        if tasks.app is not None and params.passed_over else None
    app = tasks.app.astype(np.int64) if tasks.app is not None else np.arange(n, dtype=np.int64)
    # elsewhere[j, node]: a running node holding none of task j's replicas
    rows = np.repeat(np.arange(n), np.diff(tasks.split_indptr))
    ok = (tasks.split_nodes >= 0) & (tasks.split_nodes < n_nodes)
    elsewhere = np.broadcast_to(up, (n, n_nodes)).copy()
    elsewhere[rows[ok], tasks.split_nodes[ok]] = False
    s_times = samples.times_ms if samples is not None else np.zeros(0, np.int64)
    s_nodes = min(n_nodes, samples.free_mb.shape[1]) if samples is not None else 0
    declines: list[tuple[int, int, int, int]] = []  # (application, node, start, end) ms
    for j in range(n):
        t0, t1 = int(tasks.scheduled_ms[j]), int(tasks.launch_ms[j])
        use_samples = samples is not None and samples.covers(t0, t1)
        sampled[j] = use_samples
        nodes = np.flatnonzero(elsewhere[j])
        # a wait within the allocation round trip (lead_ms >= grace_s) is no evidence
        if t1 - t0 <= lead_ms or len(nodes) == 0:
            continue
        m = int(tasks.mem_mb[j])
        idle = (by_mem_sampled if use_samples else by_mem)[m]
        for node, a, b in _overlaps(idle, nodes, t0 + grace_ms, t1):
            # the idle spell's room began settle_s before it
            declines.append((app[j], node, max(a - settle_ms, t0), min(b, t1)))
        if holdings is not None:
            for node, t in _passed_over(containers, holdings, int(app[j]), elsewhere[j],
                                        t0 + grace_ms, t1):
                declines.append((app[j], node, t, t + 1))
        # pending at the RM over [scheduled, launched - lead): its allocation came after
        pending_end = t1 - lead_ms
        for node, a, b in _overlaps(room[m], nodes, t0, pending_end):
            declines.append((app[j], node, max(a, t0), min(b, pending_end)))
        # sampled room: a poll at which the RM itself had room on an elsewhere node while the
        # task, past its own round trip, was still pending
        ks = np.flatnonzero((s_times >= t0 + grace_ms) & (s_times < pending_end))
        if len(ks) and s_nodes:
            near = nodes[nodes < s_nodes]
            k_hit, n_hit = np.nonzero(samples.free_mb[np.ix_(ks, near)] >= m)
            for k, node in zip(s_times[ks[k_hit]].tolist(), near[n_hit].tolist()):
                declines.append((app[j], node, k, k + 1))
    if reported is not None and len(reported):
        r = np.asarray(reported, np.int64)
        declines.extend(zip(r[:, 0].tolist(), r[:, 1].tolist(), r[:, 2].tolist(),
                            (r[:, 2] + 1).tolist()))
    first = np.full(n, np.iinfo(np.int64).max)
    if declines:
        d = np.array(declines, np.int64)
        for a_id in np.unique(d[:, 0]):
            ev = d[d[:, 0] == a_id]
            mine = np.flatnonzero(app == a_id)
            # [k, e]: map k of the application waited during decline e of a node without its
            # split, for some time (a map launched as it was scheduled waited through nothing)
            start = np.maximum(ev[None, :, 2], tasks.scheduled_ms[mine][:, None])
            end = np.minimum(ev[None, :, 3], tasks.launch_ms[mine][:, None])
            hit = (start < end) & elsewhere[mine][:, ev[:, 1]]
            first[mine] = np.where(hit, start, first[mine][:, None]).min(axis=1)
    delayed = first < np.iinfo(np.int64).max
    delay_s[delayed] = np.minimum(tasks.launch_ms[delayed] - first[delayed], cap_ms) / 1000.0
    return delay_s, delayed, tasks.local(), wait_s, sampled


def _passed_over(containers: Containers, holdings: Holdings, app: int,
                 elsewhere: np.ndarray, t0: int, t1: int) -> list[tuple[int, int]]:
    """(node, launch) of every container launched in [t0, t1), on an elsewhere node, of another
    application that held more than ``app`` throughout the allocation round trip before it."""
    start, node, owner = containers.start_ms, containers.node, containers.app
    ok = (start >= t0) & (start < t1) & (owner != app) & (node >= 0) & (node < len(elsewhere))
    idx = np.flatnonzero(ok)
    if len(idx) == 0 or app >= holdings.most.shape[1]:
        return []
    idx = idx[elsewhere[node[idx]]]
    idx = idx[holdings.most[idx, app] < holdings.owner_least[idx]]
    return [(int(node[c]), int(start[c])) for c in idx]

