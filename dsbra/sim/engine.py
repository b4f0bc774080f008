"""The discrete-event loop: arrivals, heartbeats, task finishes, policy rounds, replica copies.

Under the ``yarn-mr`` binding (the default) a node heartbeat grants a container against the
asks the ResourceManager last heard, and the job's ApplicationMaster binds it to a map at its own
next heartbeat (dsbra.sim.yarn); an AM heartbeat is simulated only when it has something to send
or receive, on that AM's own grid. Under ``task`` the heartbeat hands the slot to a map.

Speed comes from not simulating idle heartbeats. Each NodeManager keeps a fixed phase within
the heartbeat interval (random per seed), so its heartbeats fall at phase + k x interval as on
a real cluster. A heartbeat can only change something when its node has a free slot and some
job has pending maps, so one *cursor* walks the ring of nodes in phase order, visiting only
free nodes, and only while maps are pending: one heap entry stands for all heartbeats, and an
idle cluster costs nothing.
"""

from __future__ import annotations

import heapq
import time
from array import array
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass

import numpy as np

from dsbra.errors import ConfigError
from dsbra.experiment.design import OFF
from dsbra.sim.config import ORACLE, REACTIVE_ORACLE, SimConfig
from dsbra.sim.replicas import Replicas, Topology, hdfs_default_placement
from dsbra.sim.metrics import Window
from dsbra.sim.observed import Observer
from dsbra.sim.scheduler import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, Job, Scheduler
from dsbra.sim.workload import Workload
from dsbra.sim.yarn import Asks, Container, am_heartbeat

# event kinds, in tie-break order at equal times
ARRIVE, AM_READY, FINISH, COPY, HEARTBEAT, AM_HEARTBEAT, POLICY = 0, 1, 2, 3, 4, 5, 6
# a node's free capacity is counted in thousandths of a map slot, so an ApplicationMaster can
# hold a fraction of a slot more than a map (YARN's 640 MB AM beside 512 MB maps) exactly
SLOT = 1000


@dataclass
class RawResult:
    """Everything a run measured, columnar; :mod:`dsbra.sim.metrics` turns it into tables."""

    observed: tuple | None  # (delayed, delay_s) per task under --signals observed
    task_launch: np.ndarray
    task_finish: np.ndarray
    task_node: np.ndarray
    task_locality: np.ndarray
    task_delay: np.ndarray
    task_delayed: np.ndarray
    #: the level each map's container was granted at (under the task binding: the map's own)
    task_grant: np.ndarray
    containers_granted: int  # containers granted for maps (yarn-mr: bound or released)
    job_start: np.ndarray
    job_finish: np.ndarray
    job_pending: np.ndarray  # when its maps became pending: submission, or its AM's start-up
    rounds: list
    events: int
    heartbeats: int
    stale_reads: int
    wall_s: float
    sim_end_s: float


class _EveryNode(dict):
    """The oracle's split hosts: one list of a job's pending maps, local on every node."""

    def __init__(self, pending: list[int]):
        super().__init__()
        self.pending = pending

    def get(self, node, default=None):
        return self.pending


class Simulation:
    """One run of a workload on a cluster under a scheduler and a replication policy."""

    def __init__(self, config: SimConfig, workload: Workload, policy_driver=None):
        cfg = config.validated()
        self.cfg, self.workload = cfg, workload
        self.topo = Topology(cfg.nodes, cfg.racks)
        rng = np.random.default_rng([cfg.seed, 7])
        initial = hdfs_default_placement(self.topo, workload.dataset.n_blocks, cfg.replication,
                                         rng)
        self.replicas = Replicas(initial, min(cfg.max_replication, cfg.nodes))
        # each NodeManager heartbeats at its own phase within the interval
        self.phase = (rng.permutation(cfg.nodes) + rng.random(cfg.nodes)) * (
            cfg.heartbeat_s / cfg.nodes)
        self.policy_driver = policy_driver
        self.D = cfg.effective_delay_threshold_s
        # the oracle: every block readable node-locally on every node (the limit of what
        # replication can do for locality), without materialising nodes x blocks replicas
        self.everywhere = cfg.policy == ORACLE
        # its reactive bound: a block is on every node from the first submission asking for it
        self.reactive = cfg.policy == REACTIVE_ORACLE
        # yarn-mr without AMs: each job's AM heartbeats at its own phase from its submission
        self.am_phase = np.random.default_rng([cfg.seed, 13]).random(workload.n_jobs)

    # ------------------------------------------------------------------------------------
    def run(self, progress: bool = False) -> RawResult:
        cfg, wl, topo, reps = self.cfg, self.workload, self.topo, self.replicas
        t_wall = time.perf_counter()
        n_tasks, n_jobs = wl.n_tasks, wl.n_jobs
        hb = cfg.heartbeat_s
        D = self.D
        rack_of = topo.rack_of.tolist()
        ring = np.argsort(self.phase, kind="stable")
        ring_phase = self.phase[ring].tolist()
        ring = ring.tolist()
        ring_pos = [0] * cfg.nodes
        for i, node in enumerate(ring):
            ring_pos[node] = i
        n_nodes = cfg.nodes
        task_block = wl.task_block.tolist()
        task_mb = wl.task_mb.tolist()
        task_job = np.repeat(np.arange(n_jobs), wl.maps).tolist()
        indptr = wl.task_indptr.tolist()
        submit = wl.submit_s.tolist()
        rep_nodes, rep_count = reps.nodes, reps.count

        launched = bytearray(n_tasks)
        t_launch = array("d", bytes(8 * n_tasks))
        t_finish = array("d", bytes(8 * n_tasks))
        t_node = array("i", bytes(4 * n_tasks))
        t_level = array("b", bytes(n_tasks))
        t_delay = array("d", bytes(8 * n_tasks))
        t_delayed = array("b", bytes(n_tasks))
        t_grant = array("b", bytes(n_tasks))
        job_start = array("d", [-1.0]) * n_jobs
        job_finish = array("d", [-1.0]) * n_jobs
        job_pending = array("d", [-1.0]) * n_jobs
        am_units = round(cfg.am_slots * SLOT)
        am_cap = int(cfg.am_share * cfg.slots_per_node * cfg.nodes * SLOT + 1e-6)
        am_queue: deque[int] = deque()  # jobs waiting for their AM, in submission order
        am_node = array("i", [-1]) * n_jobs
        am_start = array("d", [-1.0]) * n_jobs
        am_held = 0
        maps_running = 0
        jobs: list[Job | None] = [None] * n_jobs

        sched = Scheduler(policy=cfg.scheduler, delay_mode=cfg.delay_mode,
                          delay_node_s=cfg.delay_node_s, delay_rack_s=cfg.delay_rack_s,
                          yarn_threshold_node=cfg.yarn_threshold_node,
                          yarn_threshold_rack=cfg.yarn_threshold_rack, nodes=cfg.nodes,
                          rack_of=rack_of, launched=launched,
                          node_locality_delay=cfg.node_locality_delay,
                          rack_locality_additional_delay=cfg.rack_locality_additional_delay,
                          binding=cfg.binding)
        window = Window(len(reps), wl.task_block, np.frombuffer(t_level, np.int8),
                        np.frombuffer(t_delayed, np.int8), np.frombuffer(t_delay, np.float64),
                        np.repeat(np.arange(n_jobs), wl.maps))
        observer = None
        if cfg.signals == "observed":
            observer = Observer(cfg, wl, t_launch, t_finish, t_node, launched, job_pending,
                                (am_start, am_node, job_finish, SLOT, am_units))
        job_split: list = [None] * n_jobs
        free = [cfg.slots_per_node * SLOT] * cfg.nodes
        # heartbeat cursor: ring position, heartbeat cycle, whether its event is queued
        cur_pos = cur_cycle = cur_token = 0
        cur_time = 0.0
        cur_live = False
        mbps = (cfg.read_mbps_local, cfg.read_mbps_rack, cfg.read_mbps_remote)
        overhead, cpu = cfg.task_overhead_s, cfg.cpu_s_per_mb
        assign_multiple = cfg.assign_multiple
        yarn_mr = cfg.binding == "yarn-mr"
        am_hb = cfg.am_heartbeat_s
        am_phase = self.am_phase.tolist()
        containers_granted = 0
        everywhere, reactive = self.everywhere, self.reactive
        copied_extra_bytes = 0.0
        if reactive:  # jobs submitted so far that asked for each block; at min_jobs it is copied
            asks = array("i", bytes(4 * len(reps)))
            min_jobs = int(cfg.policy_params.get("min_jobs", 1))
            block_bytes = wl.dataset.block_bytes.tolist()
            base_bytes = float((rep_count.astype(np.int64) * wl.dataset.block_bytes).sum())
            all_nodes = list(range(cfg.nodes))

        heap: list = []
        seq = 0
        for j in range(n_jobs):
            heap.append((submit[j], ARRIVE, seq, j, 0))
            seq += 1
        heapq.heapify(heap)
        driver = self.policy_driver
        if driver is not None:
            heapq.heappush(heap, (cfg.interval_s, POLICY, seq, 0, 0))
            seq += 1
        copies_in_flight: dict[int, list[int]] = {}  # block -> target nodes of its copies
        # copies as DataNode traffic (cfg.copy_streams > 0): the copies waiting for a stream
        # (oldest first), each node's copies sending, and sending or receiving; a running
        # copy's source by its event's token
        streams = cfg.copy_streams
        copy_backlog: list[tuple[int, int, float]] = []
        sending = [0] * n_nodes
        copying = [0] * n_nodes
        copy_source: dict[int, int] = {}
        rounds: list = []

        push, pop = heapq.heappush, heapq.heappop
        events = heartbeats = 0
        stale_reads = 0  # maps counted local by the AM whose replica was gone at launch
        jobs_done = 0
        now = 0.0
        bar = None
        if progress:
            from tqdm import tqdm
            horizon = float(submit[-1]) if n_jobs else 0.0
            bar = tqdm(total=max(int(horizon), 1), unit="sim-s", desc="simulating",
                       dynamic_ncols=True, leave=False)
            bar_at = 0
        win_task = window.tasks

        def cursor_from(pos: int, cycle: int, now: float) -> bool:
            """Queue the heartbeat of the first free node at ring position >= pos (in ring
            order, wrapping into later cycles) that falls after ``now``; False if none is free."""
            nonlocal seq, cur_pos, cur_cycle, cur_token, cur_time
            for _ in range(n_nodes + 1):
                if pos == n_nodes:
                    pos, cycle = 0, cycle + 1
                if free[ring[pos]] >= SLOT:
                    t = cycle * hb + ring_phase[pos]
                    if t > now:
                        push(heap, (t, HEARTBEAT, seq, ring[pos], 0))
                        cur_pos, cur_cycle, cur_token, cur_time = pos, cycle, seq, t
                        seq += 1
                        return True
                pos += 1
            return False

        def start_cursor(now: float) -> bool:
            cycle = int(now // hb)
            return cursor_from(bisect_right(ring_phase, now - cycle * hb), cycle, now)

        def wake(node: int, now: float) -> None:
            """``node`` can take a map again: if the cursor skipped it while it was full and
            its heartbeat comes before the cursor's, move the cursor back to it."""
            nonlocal seq, cur_pos, cur_cycle, cur_token, cur_time
            pos = ring_pos[node]
            cycle = int(now // hb)
            t = cycle * hb + ring_phase[pos]
            if t <= now:
                t += hb
                cycle += 1
            if t < cur_time:
                push(heap, (t, HEARTBEAT, seq, node, 0))
                cur_pos, cur_cycle, cur_token, cur_time = pos, cycle, seq, t
                seq += 1

        def slot_freed(node: int, now: float, am: int = -1) -> None:
            """A map slot (and with ``am`` >= 0 that AM's node) can be offered again."""
            nonlocal cur_live
            if not sched.active:
                return
            if not cur_live:
                cur_live = start_cursor(now)
                return
            if SLOT <= free[node] < 2 * SLOT:
                wake(node, now)
            if am >= 0 and free[am] >= SLOT:
                wake(am, now)

        def wake_am(job: Job, now: float) -> None:
            """Queue the job's next AM heartbeat on its grid (every am_heartbeat_s from its AM's
            start, or from its own phase without AMs) unless one is queued."""
            nonlocal seq
            if job.am_next >= 0.0:
                return
            j = job.index
            anchor = am_start[j] if am_units else submit[j] - am_phase[j] * am_hb
            t = anchor + (int((now - anchor) // am_hb) + 1) * am_hb
            job.am_next = t
            push(heap, (t, AM_HEARTBEAT, seq, j, 0))
            seq += 1

        def maps_pending(job: Job, now: float) -> None:
            """The job's maps wait for slots: offered at once under the task binding, asked for
            at the AM's next heartbeat under yarn-mr."""
            nonlocal cur_live
            if yarn_mr:
                wake_am(job, now)
                return
            sched.add(job)
            if not cur_live:
                cur_live = start_cursor(now)

        def launch(job: Job, task: int, node: int, level: int, now: float) -> None:
            """Start ``task`` on ``node`` now; ``level`` as the AM counts it."""
            nonlocal seq, stale_reads
            if job.first_launch < 0.0:
                job.first_launch = now
                job_start[job.index] = now
            blk = task_block[task]
            # read cost from where the data is now (replicas may have moved since
            # submission); locality as the AM counted it
            here = everywhere or (reactive and asks[blk] >= min_jobs)
            c = 0 if here else rep_count[blk]
            row = rep_nodes[blk]
            actual = NODE_LOCAL if here else OFF_SWITCH
            rk = rack_of[node]
            for i in range(c):
                h = int(row[i])
                if h == node:
                    actual = NODE_LOCAL
                    break
                if rack_of[h] == rk:
                    actual = RACK_LOCAL
            if actual > level:
                stale_reads += 1
            mb = task_mb[task]
            dur = overhead + cpu * mb + mb / mbps[actual]
            if streams:  # the node's disk shared with the copies it sends or receives now
                dur += mb / mbps[actual] * copying[node]
            t_launch[task] = now
            t_node[task] = node
            t_level[task] = level
            push(heap, (now + dur, FINISH, seq, task, node))
            seq += 1
            win_task.append(task)
            window.reading(blk)

        def start_copies(now: float) -> None:
            """Start the waiting copies whose block has a holder with a free stream (the one
            sending fewest), oldest first, as the NameNode hands DataNodes their transfers."""
            nonlocal seq
            waiting = []
            for blk, node, dur in copy_backlog:
                free = [h for h in rep_nodes[blk][:rep_count[blk]].tolist() if sending[h] < streams]
                if not free:
                    waiting.append((blk, node, dur))
                    continue
                source = min(free, key=sending.__getitem__)
                sending[source] += 1
                copying[source] += 1
                copying[node] += 1
                copy_source[seq] = source
                push(heap, (now + dur, COPY, seq, blk, node))
                seq += 1
            copy_backlog[:] = waiting

        def drop_waiting_copies(lowered: set[int] | None) -> None:
            """The copies not started of a lowered block (None: of every block) are dropped:
            the NameNode no longer finds it under-replicated. Running ones land, as in HDFS."""
            keep = []
            for blk, node, dur in copy_backlog:
                if lowered is None or blk in lowered:
                    forget_copy(blk, node)
                else:
                    keep.append((blk, node, dur))
            copy_backlog[:] = keep

        def forget_copy(blk: int, node: int) -> None:
            """The copy of ``blk`` to ``node`` is no longer in flight (landed or dropped)."""
            targets = copies_in_flight[blk]
            targets.remove(node)
            if not targets:
                del copies_in_flight[blk]

        def place_ams(now: float) -> None:
            """Start waiting AMs, oldest first, on the node with the most free slots, while
            the AM share allows; each job's maps become pending am_startup_s later."""
            nonlocal seq, am_held
            while am_queue and am_held + am_units <= am_cap:
                node = max(range(n_nodes), key=free.__getitem__)
                if free[node] < am_units:
                    return
                j = am_queue.popleft()
                free[node] -= am_units
                am_held += am_units
                am_node[j] = node
                am_start[j] = now
                push(heap, (now + cfg.am_startup_s, AM_READY, seq, j, 0))
                seq += 1
            if maps_running == 0 and max(free) < SLOT:
                raise ConfigError(
                    f"max-am-share {cfg.max_am_share:g}: ApplicationMasters hold every slot "
                    f"at {now:.0f} s and no map can run (YARN deadlocks the same way); lower "
                    "max-am-share so that maps keep a slot")

        while heap and jobs_done < n_jobs:
            now, kind, token, a, b = pop(heap)
            if kind == HEARTBEAT and token != cur_token:
                continue  # superseded: the cursor was moved back to a node that freed up
            events += 1
            if kind == HEARTBEAT:
                heartbeats += 1
                node = a
                cur_live = False
                if not sched.active:
                    continue  # the cursor stops; the next arrival restarts it
                while yarn_mr and free[node] >= SLOT:
                    got = sched.grant(node, now)
                    if got is None:
                        break
                    job, level = got
                    # --- a container for the job's maps, bound at its AM's next heartbeat ---
                    job.asks.granted(node, level)
                    free[node] -= SLOT
                    maps_running += 1
                    job.running += 1
                    containers_granted += 1
                    waited = now - job.skip_start if job.skip_start >= 0.0 else -1.0
                    job.granted.append(Container(node, level, waited))
                    sched.on_grant(job, level)
                    if job.asks.rm_any == 0:
                        sched.remove(job)
                    else:
                        sched.changed()
                    wake_am(job, now)
                    if not assign_multiple or not sched.active:
                        break
                while not yarn_mr and free[node] >= SLOT:
                    got = sched.offer(node, now)
                    if got is None:
                        break
                    job, task, level = got
                    launched[task] = 1
                    free[node] -= SLOT
                    maps_running += 1
                    job.pending -= 1
                    job.running += 1
                    if job.skip_start >= 0.0:
                        waited = now - job.skip_start
                        t_delay[task] = waited if waited < D else D
                        t_delayed[task] = 1
                    sched.on_launch(job, level)
                    t_grant[task] = level  # the slot went to this map: its own level
                    containers_granted += 1
                    launch(job, task, node, level, now)
                    if job.pending == 0:
                        sched.remove(job)
                    else:
                        sched.changed()
                    if not assign_multiple or not sched.active:
                        break
                if sched.active:
                    cur_live = cursor_from(cur_pos + 1, cur_cycle, now)
            elif kind == FINISH:
                task, node = a, b
                t_finish[task] = now
                maps_running -= 1
                window.done_reading(task_block[task])
                job = jobs[task_job[task]]
                job.running -= 1
                job.done += 1
                if job.in_sched:
                    sched.changed()
                free[node] += SLOT
                freed_am = -1
                unused: list[int] = []
                if job.done == len(job.tasks):
                    job_finish[job.index] = now
                    jobs[job.index] = None
                    jobs_done += 1
                    if am_units:  # the AM ends with its job
                        freed_am = am_node[job.index]
                        free[freed_am] += am_units
                        am_held -= am_units
                    if yarn_mr:  # its AM unregisters: containers it never used end with it
                        unused = job.released + [c.node for c in job.granted]
                        for n in unused:
                            free[n] += SLOT
                        maps_running -= len(unused)
                        if job.in_sched:
                            sched.remove(job)
                if am_queue:  # a waiting AM comes before any map
                    place_ams(now)
                slot_freed(node, now, freed_am)
                for n in unused:
                    slot_freed(n, now)
            elif kind == AM_HEARTBEAT:
                job = jobs[a]
                if job is None:
                    continue  # the job ended and its AM with it
                job.am_next = -1.0
                released, job.released = job.released, []
                for n in released:  # released at the last heartbeat, freed by this one's
                    free[n] += SLOT
                maps_running -= len(released)
                job.running -= len(released)
                bound, left = am_heartbeat(job, launched, rack_of)
                ask = job.asks
                if ask.rm_any > 0 and not job.in_sched:
                    sched.add(job)
                elif ask.rm_any == 0 and job.in_sched:
                    sched.remove(job)
                elif released and job.in_sched:
                    sched.changed()
                if released and am_queue:
                    place_ams(now)
                for n in released:
                    slot_freed(n, now)
                if sched.active and not cur_live:
                    cur_live = start_cursor(now)
                for c, task, level in bound:
                    t_grant[task] = c.level
                    if c.delay_s >= 0.0:
                        t_delay[task] = c.delay_s if c.delay_s < D else D
                        t_delayed[task] = 1
                    launch(job, task, c.node, level, now)
                job.released = [c.node for c in left]
                if job.released or ask.dirty:
                    wake_am(job, now)
            elif kind == ARRIVE and am_units:
                am_queue.append(a)
                place_ams(now)
            elif kind == ARRIVE or kind == AM_READY:
                j = a
                job_pending[j] = now
                lo, hi = indptr[j], indptr[j + 1]
                tasks = list(range(lo, hi))
                if everywhere:
                    job = Job(j, now, tasks, _EveryNode(tasks[::-1]), {})
                    jobs[j] = job
                    if yarn_mr:
                        job.asks, job.split = Asks(rack_of), [None] * len(tasks)
                        job.asks.add_everywhere(len(tasks))
                    maps_pending(job, now)
                    continue
                blocks = wl.task_block[lo:hi]
                holders_np, counts_np = rep_nodes[blocks], rep_count[blocks]
                holders, counts = holders_np.tolist(), counts_np.tolist()
                if reactive:  # blocks copied before: split hosts on every node
                    for k, b in enumerate(blocks.tolist()):
                        if asks[b] >= min_jobs:
                            holders[k], counts[k] = all_nodes, n_nodes
                by_host: dict[int, list[int]] = {}
                by_rack: dict[int, list[int]] = {}
                # walk tasks backwards so each list pops its earliest task from the end
                for k in range(hi - lo - 1, -1, -1):
                    t = lo + k
                    last_rack = -1
                    for h in holders[k][:counts[k]]:
                        lst = by_host.get(h)
                        if lst is None:
                            by_host[h] = [t]
                        else:
                            lst.append(t)
                        r = rack_of[h]
                        if r != last_rack:
                            lst = by_rack.get(r)
                            if lst is None:
                                by_rack[r] = [t]
                            elif lst[-1] != t:
                                lst.append(t)
                            last_rack = r
                if observer is not None:
                    job_split[j] = (holders_np, counts_np)  # the split hosts, for attribution
                if reactive:  # copied everywhere now: later jobs and every read find it local
                    for b in blocks.tolist():
                        asks[b] += 1
                        if asks[b] == min_jobs:
                            copied_extra_bytes += (n_nodes - int(rep_count[b])) * block_bytes[b]
                job = Job(j, now, tasks, by_host, by_rack)
                jobs[j] = job
                if yarn_mr:
                    job.asks, job.split = Asks(rack_of), [hs[:n] for hs, n in zip(holders, counts)]
                    for hosts in job.split:
                        job.asks.add_map(hosts)
                maps_pending(job, now)
            elif kind == COPY:
                blk, node = a, b
                forget_copy(blk, node)
                reps.add(blk, node)
                if streams:
                    source = copy_source.pop(token)
                    sending[source] -= 1
                    copying[source] -= 1
                    copying[node] -= 1
                    start_copies(now)
            else:  # POLICY
                attributed = None
                if observer is not None:
                    attributed = observer.attribute(now, window.task_ids(), job_split)
                record = driver.round(now, window, copies_in_flight, attributed,
                                      job_finish=job_finish, map_times=(t_launch, t_finish, launched))
                if streams and copy_backlog:
                    # an off period or the guard's pause takes every raise back: nothing waits
                    drop_waiting_copies(None if record.get("arm") == OFF or record.get("paused")
                                        else set(record["lowered_blocks"]))
                for blk, node, dur in record.pop("copies"):
                    copies_in_flight.setdefault(blk, []).append(node)
                    if streams:
                        copy_backlog.append((blk, node, dur))
                    else:
                        push(heap, (now + dur, COPY, seq, blk, node))
                        seq += 1
                if streams:
                    start_copies(now)
                if reactive:
                    record["extra_storage"] = copied_extra_bytes / base_bytes
                rounds.append(record)
                push(heap, (now + cfg.interval_s, POLICY, seq, 0, 0))
                seq += 1
            if bar is not None and events - bar_at >= 20000:
                bar_at = events
                bar.n = min(int(now), bar.total)
                bar.refresh()
        if bar is not None:
            bar.close()
        if observer is not None:  # maps launched after the last round
            observer.attribute(now, window.task_ids(), job_split)
        if jobs_done < n_jobs:
            raise RuntimeError(f"simulation stalled with {n_jobs - jobs_done} unfinished jobs")
        observed = observer.result() if observer is not None else None
        return RawResult(
            observed=observed,
            task_launch=np.frombuffer(t_launch, np.float64).copy(),
            task_finish=np.frombuffer(t_finish, np.float64).copy(),
            task_node=np.frombuffer(t_node, np.int32).copy(),
            task_locality=np.frombuffer(t_level, np.int8).copy(),
            task_delay=np.frombuffer(t_delay, np.float64).copy(),
            task_delayed=np.frombuffer(t_delayed, np.int8).astype(bool),
            task_grant=np.frombuffer(t_grant, np.int8).copy(),
            containers_granted=containers_granted,
            job_start=np.frombuffer(job_start, np.float64).copy(),
            job_finish=np.frombuffer(job_finish, np.float64).copy(),
            job_pending=np.frombuffer(job_pending, np.float64).copy(),
            rounds=rounds, events=events, heartbeats=heartbeats, stale_reads=stale_reads,
            wall_s=time.perf_counter() - t_wall, sim_end_s=now)
