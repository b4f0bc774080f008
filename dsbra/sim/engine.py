"""The discrete-event loop: arrivals, heartbeats, task finishes, policy rounds, replica copies.

Under the ``yarn-mr`` binding (the default) a node heartbeat grants a container against the
asks the ResourceManager last heard, and the job's ApplicationMaster binds it to a map at its own
next heartbeat (dsbra.sim.yarn); an AM heartbeat is simulated only when it has something to send
or receive, on that AM's own grid. Under ``task`` the heartbeat hands the slot to a map. Under
``spark`` dsbra.sim.spark's SparkSimulation runs this loop with its own handlers
(:meth:`Simulation._handlers`): heartbeats grant executors, the driver binds tasks.

Speed comes from not simulating idle heartbeats. Each NodeManager keeps a fixed phase within
the heartbeat interval (random per seed), so its heartbeats fall at phase + k x interval as on
a real cluster. A heartbeat can only change something when its node has a free slot and some
job has pending maps, so one *cursor* walks the ring of nodes in phase order, visiting only
free nodes, and only while maps are pending: one heap entry stands for all heartbeats, and an
idle cluster costs nothing.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

import numpy as np

from dsbra.errors import ConfigError
from dsbra.experiment.design import OFF
from dsbra.policy.api import LiveDemand
from dsbra.sim.config import ORACLE, REACTIVE_ORACLE, SimConfig
from dsbra.sim.metrics import Window
from dsbra.sim.observed import Observer
from dsbra.sim.replicas import Replicas, Topology, hdfs_default_placement
from dsbra.sim.scheduler import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, Job, Scheduler
from dsbra.sim.workload import Workload
from dsbra.sim.yarn import Asks, Container, am_heartbeat

# event kinds, in tie-break order at equal times
ARRIVE, AM_READY, FINISH, COPY, HEARTBEAT, AM_HEARTBEAT, POLICY = 0, 1, 2, 3, 4, 5, 6
# a node's free capacity is counted in thousandths of a map slot, so an ApplicationMaster can
# hold a fraction of a slot more than a map (YARN's 640 MB AM beside 512 MB maps) exactly
SLOT = 1000
# what a running map's progress is shared on (``host_cores`` / ``share_links``): nothing, the
# host's CPUs, or (any node id >= 0) the link of the holder it reads from
UNSHARED, CPUS = -2, -1


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
    """One run of a workload on a cluster under a scheduler and a replication policy.

    :meth:`run` pops events off one heap and hands each to the handler of its kind (the
    ``_on_*`` methods); the handlers share the run's state as attributes, set up by
    :meth:`_setup`, so that each reads as what happens at one event."""

    # slots: the handlers read and write these at every event, and slots are CPython's
    # fastest attributes (an instance dict costs a run some 3% more instructions)
    __slots__ = (
        # set up by __init__: what the seed fixes before a run
        "cfg", "workload", "topo", "replicas", "phase", "policy_driver", "D", "everywhere",
        "reactive", "am_phase",
        # the workload and cluster as lists; the heartbeat ring in phase order
        "n_nodes", "hb", "rack_of", "ring", "ring_phase", "ring_pos", "task_block", "task_mb",
        "task_job", "indptr", "submit", "rep_nodes", "rep_count", "mbps", "overhead", "cpu",
        "yarn_mr", "am_phases", "am_units", "am_cap",
        # records of maps and jobs
        "launched", "t_launch", "t_finish", "t_node", "t_level", "t_delay", "t_delayed",
        "t_grant", "job_start", "job_finish", "job_pending", "am_node", "am_start",
        "containers_granted", "stale_reads", "rounds",
        # scheduling
        "sched", "window", "observer", "job_split", "free", "am_queue", "am_held",
        "maps_running", "jobs", "jobs_done",
        # the heartbeat cursor and the event heap
        "cur_token", "cur_time", "cur_live", "heap", "seq",
        # the reactive oracle
        "asked", "min_jobs", "block_bytes", "base_bytes", "all_nodes", "copied_extra_bytes",
        # copies
        "copies_in_flight", "streams", "copy_backlog", "sending", "copying", "copy_source",
        # contention: the maps sharing each CPU pool or link, their work left and its clock
        "contended", "host_cores", "share_links", "sharing", "t_share", "work_left",
        "work_since", "finish_token",
        # copies on the shared links: flows numbered after the maps, each one's block and
        # target, and the flow of each live COPY event by its token
        "link_copies", "first_copy_flow", "copy_target", "copy_flow")

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

    # --- the event loop -----------------------------------------------------------------
    def run(self, progress: bool = False) -> RawResult:
        """Simulate until the last job ends."""
        t_wall = time.perf_counter()
        self._setup()
        handlers = self._handlers()
        heap, pop = self.heap, heappop
        n_jobs = self.workload.n_jobs
        events = heartbeats = 0
        now = 0.0
        bar = self._progress_bar() if progress else None
        bar_at = 0
        # not `while heap and ...`: CPython 3.11 specializes the bytecode of a function called
        # once only after unconditional back jumps, which a `while cond:` loop does not make
        while True:
            if not heap or self.jobs_done >= n_jobs:
                break
            now, kind, token, a, b = pop(heap)
            if kind == HEARTBEAT:
                if token != self.cur_token:
                    continue  # superseded: the cursor was moved back to a node that freed up
                heartbeats += 1
            events += 1
            handlers[kind](now, token, a, b)
            if bar is not None and events - bar_at >= 20000:
                bar_at = events
                bar.n = min(int(now), bar.total)
                bar.refresh()
        if bar is not None:
            bar.close()
        return self._result(now, events, heartbeats, t_wall)

    def _handlers(self) -> tuple:
        """Each event kind's handler, in the order of the kinds' numbers."""
        return (self._on_arrive_with_am if self.am_units else self._on_maps_ready,  # ARRIVE
                self._on_maps_ready,  # AM_READY
                self._on_finish,
                self._on_copy,
                self._on_heartbeat_yarn if self.yarn_mr else self._on_heartbeat_task,
                self._on_am_heartbeat,
                self._on_policy_round)

    def _progress_bar(self):
        from tqdm import tqdm
        horizon = self.submit[-1] if self.submit else 0.0
        return tqdm(total=max(int(horizon), 1), unit="sim-s", desc="simulating",
                    dynamic_ncols=True, leave=False)

    def _push(self, t: float, kind: int, a: int, b: int = 0) -> int:
        """Queue the event (t, kind, token, a, b) and return its token, the count of pushes,
        which orders events of equal time and kind as they were queued. ``a``, ``b``: the
        job; the task and its node; the block and the copy's target; the node and its
        heartbeat cycle."""
        seq = self.seq
        heappush(self.heap, (t, kind, seq, a, b))
        self.seq = seq + 1
        return seq

    # --- one run's state ----------------------------------------------------------------
    def _setup(self) -> None:
        """A run's state: every slot free, nothing running, every submission queued."""
        cfg, wl = self.cfg, self.workload
        n_jobs = wl.n_jobs
        self._setup_lists()
        self._setup_records(wl.n_tasks, n_jobs)
        self.sched = Scheduler(
            policy=cfg.scheduler, delay_mode=cfg.delay_mode, delay_node_s=cfg.delay_node_s,
            delay_rack_s=cfg.delay_rack_s, yarn_threshold_node=cfg.yarn_threshold_node,
            yarn_threshold_rack=cfg.yarn_threshold_rack, nodes=cfg.nodes, rack_of=self.rack_of,
            launched=self.launched, node_locality_delay=cfg.node_locality_delay,
            rack_locality_additional_delay=cfg.rack_locality_additional_delay,
            binding=cfg.binding)
        self.window = Window(len(self.replicas), wl.task_block,
                             np.frombuffer(self.t_level, np.int8),
                             np.frombuffer(self.t_delayed, np.int8),
                             np.frombuffer(self.t_delay, np.float64),
                             np.repeat(np.arange(n_jobs), wl.maps))
        self.observer = None
        if cfg.signals == "observed":
            self.observer = Observer(cfg, wl, self.t_launch, self.t_finish, self.t_node,
                                     self.launched, self.job_pending,
                                     (self.am_start, self.am_node, self.job_finish, SLOT,
                                      self.am_units))
        self.job_split: list = [None] * n_jobs  # the split hosts, for the observer
        self.free = [cfg.slots_per_node * SLOT] * cfg.nodes
        self.am_queue: deque[int] = deque()  # jobs waiting for their AM, in submission order
        self.am_held = self.maps_running = self.jobs_done = 0
        self.jobs: list[Job | None] = [None] * n_jobs
        # heartbeat cursor: its event's token and time (the event carries its node and
        # heartbeat cycle), and whether that event is queued
        self.cur_token = 0
        self.cur_time = 0.0
        self.cur_live = False
        self._setup_copies()
        self._setup_contention(wl.n_tasks)
        self.heap = [(self.submit[j], ARRIVE, j, j, 0) for j in range(n_jobs)]  # tokens 0..
        heapify(self.heap)
        self.seq = n_jobs
        if self.policy_driver is not None:
            self._push(cfg.interval_s, POLICY, 0)

    def _setup_lists(self) -> None:
        """The workload and cluster as the handlers read them: lists, which Python indexes
        fastest; the nodes in heartbeat order (the cursor's ring)."""
        cfg, wl = self.cfg, self.workload
        self.n_nodes, self.hb = cfg.nodes, cfg.heartbeat_s
        self.rack_of = self.topo.rack_of.tolist()
        ring = np.argsort(self.phase, kind="stable")
        self.ring_phase = self.phase[ring].tolist()
        self.ring = ring.tolist()
        self.ring_pos = [0] * cfg.nodes
        for i, node in enumerate(self.ring):
            self.ring_pos[node] = i
        self.task_block = wl.task_block.tolist()
        self.task_mb = wl.task_mb.tolist()
        self.task_job = np.repeat(np.arange(wl.n_jobs), wl.maps).tolist()
        self.indptr = wl.task_indptr.tolist()
        self.submit = wl.submit_s.tolist()
        self.rep_nodes, self.rep_count = self.replicas.nodes, self.replicas.count
        self.mbps = (cfg.read_mbps_local, cfg.read_mbps_rack, cfg.read_mbps_remote)
        self.overhead, self.cpu = cfg.task_overhead_s, cfg.cpu_s_per_mb
        self.yarn_mr = cfg.binding == "yarn-mr"
        self.am_phases = self.am_phase.tolist()
        self.am_units = round(cfg.am_slots * SLOT)
        self.am_cap = int(cfg.am_share * cfg.slots_per_node * cfg.nodes * SLOT + 1e-6)

    def _setup_records(self, n_tasks: int, n_jobs: int) -> None:
        """What the run records of each map and job (RawResult's columns), as arrays the
        handlers write one item at a time."""
        self.launched = bytearray(n_tasks)
        self.t_launch = array("d", bytes(8 * n_tasks))
        self.t_finish = array("d", bytes(8 * n_tasks))
        self.t_node = array("i", bytes(4 * n_tasks))
        self.t_level = array("b", bytes(n_tasks))
        self.t_delay = array("d", bytes(8 * n_tasks))
        self.t_delayed = array("b", bytes(n_tasks))
        self.t_grant = array("b", bytes(n_tasks))
        self.job_start = array("d", [-1.0]) * n_jobs
        self.job_finish = array("d", [-1.0]) * n_jobs
        self.job_pending = array("d", [-1.0]) * n_jobs
        self.am_node = array("i", [-1]) * n_jobs
        self.am_start = array("d", [-1.0]) * n_jobs
        self.containers_granted = 0
        self.stale_reads = 0  # maps counted local by the AM whose replica was gone at launch
        self.rounds: list = []

    def _setup_copies(self) -> None:
        """Nothing copied yet: the policies' copies, and the reactive oracle's."""
        cfg, reps = self.cfg, self.replicas
        self.copies_in_flight: dict[int, list[int]] = {}  # block -> target nodes of its copies
        # copies as DataNode traffic (cfg.copy_streams > 0): the copies waiting for a stream
        # (oldest first), each node's copies sending, and sending or receiving; a running
        # copy's source by its event's token
        self.streams = cfg.copy_streams
        self.copy_backlog: list[tuple[int, int, float]] = []
        self.sending = [0] * cfg.nodes
        self.copying = [0] * cfg.nodes
        self.copy_source: dict[int, int] = {}
        self.copied_extra_bytes = 0.0
        if self.reactive:  # jobs submitted so far that asked for each block; copied at min_jobs
            self.asked = array("i", bytes(4 * len(reps)))
            self.min_jobs = int(cfg.policy_params.get("min_jobs", 1))
            self.block_bytes = self.workload.dataset.block_bytes.tolist()
            self.base_bytes = float((reps.count.astype(np.int64)
                                     * self.workload.dataset.block_bytes).sum())
            self.all_nodes = list(range(cfg.nodes))

    def _setup_contention(self, n_tasks: int) -> None:
        """Nothing running shares anything yet (cfg.host_cores, cfg.share_links)."""
        cfg = self.cfg
        self.contended = cfg.contended
        self.host_cores, self.share_links = cfg.host_cores, cfg.share_links
        # CPUS or a holder -> its running flows: maps (by task id), and copies on its link
        self.sharing: dict[int, list[int]] = {}
        if self.contended:
            self.t_share = array("i", [UNSHARED]) * n_tasks
            self.work_left = array("d", bytes(8 * n_tasks))  # seconds at a full share
            self.work_since = array("d", bytes(8 * n_tasks))
            self.finish_token = array("q", bytes(8 * n_tasks))  # its live FINISH event
        # a copy is DataNode traffic from its source over that holder's link: one more flow
        # there, numbered from n_tasks on as copies start
        self.link_copies = cfg.share_links and cfg.copy_streams > 0
        self.first_copy_flow = n_tasks
        self.copy_target: dict[int, tuple[int, int]] = {}  # copy flow -> (block, target)
        self.copy_flow: dict[int, int] = {}  # live COPY event's token -> its copy flow

    def _result(self, now: float, events: int, heartbeats: int, t_wall: float) -> RawResult:
        """The records as RawResult's columns; raises if some job never finished."""
        observer = self.observer
        if observer is not None:  # maps launched after the last round
            observer.attribute(now, self.window.task_ids(), self.job_split)
        n_jobs = self.workload.n_jobs
        if self.jobs_done < n_jobs:
            raise RuntimeError(f"simulation stalled with {n_jobs - self.jobs_done} unfinished "
                               "jobs")
        observed = observer.result() if observer is not None else None
        return RawResult(
            observed=observed,
            task_launch=np.frombuffer(self.t_launch, np.float64).copy(),
            task_finish=np.frombuffer(self.t_finish, np.float64).copy(),
            task_node=np.frombuffer(self.t_node, np.int32).copy(),
            task_locality=np.frombuffer(self.t_level, np.int8).copy(),
            task_delay=np.frombuffer(self.t_delay, np.float64).copy(),
            task_delayed=np.frombuffer(self.t_delayed, np.int8).astype(bool),
            task_grant=np.frombuffer(self.t_grant, np.int8).copy(),
            containers_granted=self.containers_granted,
            job_start=np.frombuffer(self.job_start, np.float64).copy(),
            job_finish=np.frombuffer(self.job_finish, np.float64).copy(),
            job_pending=np.frombuffer(self.job_pending, np.float64).copy(),
            rounds=self.rounds, events=events, heartbeats=heartbeats,
            stale_reads=self.stale_reads, wall_s=time.perf_counter() - t_wall, sim_end_s=now)

    # --- events: jobs arrive, their maps become pending ---------------------------------
    def _on_arrive_with_am(self, now: float, _token: int, j: int, _b: int) -> None:
        """With AMs, a submitted job first waits for its ApplicationMaster's container."""
        self.am_queue.append(j)
        self._place_ams(now)

    def _on_maps_ready(self, now: float, _token: int, j: int, _b: int) -> None:
        """Job ``j``'s maps wait for slots from now (its submission, or its AM's start-up):
        offered at once under the task binding, asked for at the AM's next heartbeat under
        yarn-mr."""
        self.job_pending[j] = now
        lo, hi = self.indptr[j], self.indptr[j + 1]
        tasks = list(range(lo, hi))
        if self.everywhere:
            job = self._job_everywhere(j, now, tasks)
        else:
            job = self._job_on_holders(j, now, lo, hi, tasks)
        self.jobs[j] = job
        if self.yarn_mr:
            self._wake_am(job, now)
            return
        self.sched.add(job)
        if not self.cur_live:
            self.cur_live = self._start_cursor(now)

    def _job_everywhere(self, j: int, now: float, tasks: list[int]) -> Job:
        """The oracle's job: every map local on every node."""
        job = Job(j, now, tasks, _EveryNode(tasks[::-1]), {})
        if self.yarn_mr:
            job.asks, job.split = Asks(self.rack_of), [None] * len(tasks)
            job.asks.add_everywhere(len(tasks))
        return job

    def _job_on_holders(self, j: int, now: float, lo: int, hi: int, tasks: list[int]) -> Job:
        """A job whose maps' split hosts are their blocks' holders now, as the job client
        computes the splits at submission."""
        rack_of, reactive = self.rack_of, self.reactive
        blocks = self.workload.task_block[lo:hi]
        holders_np, counts_np = self.rep_nodes[blocks], self.rep_count[blocks]
        holders, counts = holders_np.tolist(), counts_np.tolist()
        if reactive:  # blocks copied before: split hosts on every node
            asked, min_jobs = self.asked, self.min_jobs
            for k, b in enumerate(blocks.tolist()):
                if asked[b] >= min_jobs:
                    holders[k], counts[k] = self.all_nodes, self.n_nodes
        by_host, by_rack = _maps_by_host_and_rack(lo, holders, counts, rack_of)
        if self.observer is not None:
            self.job_split[j] = (holders_np, counts_np)  # the split hosts, for attribution
        if reactive:  # copied everywhere now: later jobs and every read find it local
            for b in blocks.tolist():
                asked[b] += 1
                if asked[b] == min_jobs:
                    self.copied_extra_bytes += ((self.n_nodes - int(self.rep_count[b]))
                                                * self.block_bytes[b])
        job = Job(j, now, tasks, by_host, by_rack)
        if self.yarn_mr:
            job.asks, job.split = Asks(rack_of), [hs[:n] for hs, n in zip(holders, counts)]
            for hosts in job.split:
                job.asks.add_map(hosts)
        return job

    # --- events: node heartbeats hand out free slots ------------------------------------
    def _on_heartbeat_yarn(self, now: float, _token: int, node: int, cycle: int) -> None:
        """yarn-mr: the ResourceManager grants the node's free slots as containers against
        the asks it last heard (each job's AM binds them to maps at its next heartbeat); then
        the cursor moves on from the node (``cycle``: this heartbeat's)."""
        sched, free = self.sched, self.free
        if not sched.active:
            self.cur_live = False  # the cursor stops; the next arrival restarts it
            return
        while free[node] >= SLOT:
            got = sched.grant(node, now)
            if got is None:
                break
            job, level = got
            job.asks.granted(node, level)
            free[node] -= SLOT
            self.maps_running += 1
            job.running += 1
            self.containers_granted += 1
            waited = now - job.skip_start if job.skip_start >= 0.0 else -1.0
            job.granted.append(Container(node, level, waited))
            sched.on_grant(job, level)
            if job.asks.rm_any == 0:
                sched.remove(job)
            else:
                sched.changed()
            self._wake_am(job, now)
            if not self.cfg.assign_multiple or not sched.active:
                break
        self.cur_live = (self._cursor_from(self.ring_pos[node] + 1, cycle, now)
                         if sched.active else False)

    def _on_heartbeat_task(self, now: float, _token: int, node: int, cycle: int) -> None:
        """Task binding: the scheduler hands the node's free slots straight to maps; then the
        cursor moves on from the node (``cycle``: this heartbeat's)."""
        sched, free = self.sched, self.free
        if not sched.active:
            self.cur_live = False  # the cursor stops; the next arrival restarts it
            return
        while free[node] >= SLOT:
            got = sched.offer(node, now)
            if got is None:
                break
            job, task, level = got
            self.launched[task] = 1
            free[node] -= SLOT
            self.maps_running += 1
            job.pending -= 1
            job.running += 1
            if job.skip_start >= 0.0:
                waited = now - job.skip_start
                self.t_delay[task] = waited if waited < self.D else self.D
                self.t_delayed[task] = 1
            sched.on_launch(job, level)
            self.t_grant[task] = level  # the slot went to this map: its own level
            self.containers_granted += 1
            self._launch(job, task, node, level, now)
            if job.pending == 0:
                sched.remove(job)
            else:
                sched.changed()
            if not self.cfg.assign_multiple or not sched.active:
                break
        self.cur_live = (self._cursor_from(self.ring_pos[node] + 1, cycle, now)
                         if sched.active else False)

    def _cursor_from(self, pos: int, cycle: int, now: float) -> bool:
        """Queue the heartbeat of the first free node at ring position >= pos (in ring
        order, wrapping into later cycles) that falls after ``now``; False if none is free."""
        free, ring = self.free, self.ring
        n_nodes = self.n_nodes
        for _ in range(n_nodes + 1):
            if pos == n_nodes:
                pos, cycle = 0, cycle + 1
            if free[ring[pos]] >= SLOT:
                t = cycle * self.hb + self.ring_phase[pos]
                if t > now:
                    seq = self.seq  # _push inlined: this runs at every heartbeat
                    heappush(self.heap, (t, HEARTBEAT, seq, ring[pos], cycle))
                    self.seq = seq + 1
                    self.cur_token, self.cur_time = seq, t
                    return True
            pos += 1
        return False

    def _start_cursor(self, now: float) -> bool:
        cycle = int(now // self.hb)
        return self._cursor_from(bisect_right(self.ring_phase, now - cycle * self.hb), cycle,
                                 now)

    def _wake(self, node: int, now: float) -> None:
        """``node`` can take a map again: if the cursor skipped it while it was full and
        its heartbeat comes before the cursor's, move the cursor back to it."""
        hb = self.hb
        pos = self.ring_pos[node]
        cycle = int(now // hb)
        t = cycle * hb + self.ring_phase[pos]
        if t <= now:
            t += hb
            cycle += 1
        if t < self.cur_time:
            self.cur_token, self.cur_time = self._push(t, HEARTBEAT, node, cycle), t

    def _slot_freed(self, node: int, now: float, am: int = -1) -> None:
        """A map slot (and with ``am`` >= 0 that AM's node) can be offered again."""
        if not self.sched.active:
            return
        if not self.cur_live:
            self.cur_live = self._start_cursor(now)
            return
        free = self.free
        if SLOT <= free[node] < 2 * SLOT:
            self._wake(node, now)
        if am >= 0 and free[am] >= SLOT:
            self._wake(am, now)

    def _launch(self, job: Job, task: int, node: int, level: int, now: float,
                extra_s: float = 0.0) -> None:
        """Start ``task`` on ``node`` now; ``level`` as the AM counts it; ``extra_s`` its work
        beyond the cost model (a cold Spark executor's warm-up)."""
        if job.first_launch < 0.0:
            job.first_launch = now
            self.job_start[job.index] = now
        blk = self.task_block[task]
        # read cost from where the data is now (replicas may have moved since
        # submission); locality as the AM counted it
        here = self.everywhere or (self.reactive and self.asked[blk] >= self.min_jobs)
        c = 0 if here else self.rep_count[blk]
        row = self.rep_nodes[blk]
        actual = NODE_LOCAL if here else OFF_SWITCH
        rack_of = self.rack_of
        rk = rack_of[node]
        for i in range(c):
            h = int(row[i])
            if h == node:
                actual = NODE_LOCAL
                break
            if rack_of[h] == rk:
                actual = RACK_LOCAL
        if actual > level:
            self.stale_reads += 1
        mb = self.task_mb[task]
        mbps = self.mbps[actual]
        dur = self.overhead + self.cpu * mb + mb / mbps + extra_s
        if self.streams:  # the node's disk shared with the copies it sends or receives now
            dur += mb / mbps * self.copying[node]
        self.t_launch[task] = now
        self.t_node[task] = node
        self.t_level[task] = level
        if self.contended:
            self._share_start(task, self._shared_on(blk, node, actual), dur, now)
        else:
            self._push(now + dur, FINISH, task, node)
        self.window.tasks.append(task)
        self.window.reading(blk)

    # --- contention: maps sharing the host's CPUs or a holder's link --------------------
    def _shared_on(self, blk: int, node: int, actual: int) -> int:
        """What a map reading ``blk`` on ``node`` at level ``actual`` shares: the host's CPUS
        (a node-local read), the link of its nearest holder (a remote read: the first holder in
        the replica order on its rack, else the first), or nothing (that sharing off)."""
        if actual == NODE_LOCAL:
            return CPUS if self.host_cores else UNSHARED
        if not self.share_links:
            return UNSHARED
        row = self.rep_nodes[blk][:self.rep_count[blk]].tolist()
        if actual == RACK_LOCAL:
            rk = self.rack_of[node]
            return next(h for h in row if self.rack_of[h] == rk)
        return row[0]

    def _share(self, key: int, n: int) -> float:
        """The share of a full rate each of ``n`` maps on ``key`` progresses at: the cores over
        the maps, at most one core a map; a link split equally."""
        return min(1.0, self.host_cores / n) if key == CPUS else 1.0 / n

    def _share_start(self, task: int, key: int, work: float, now: float) -> None:
        """``task`` starts with ``work`` seconds at a full share, sharing ``key``: if that
        changes the share, the maps already on ``key`` are re-timed."""
        self.t_share[task] = key
        if key == UNSHARED:
            self.finish_token[task] = self._push(now + work, FINISH, task, self.t_node[task])
            return
        self.work_left[task], self.work_since[task] = work, now
        members = self.sharing.setdefault(key, [])
        members.append(task)
        n = len(members)
        after = self._share(key, n)
        if n > 1 and after != self._share(key, n - 1):
            self._progress(members, self._share(key, n - 1), now)  # its own clock starts now
            self._retime(members, after, now)
        else:
            self._retime([task], after, now)

    def _share_end(self, task: int, token: int, now: float) -> bool:
        """``task``'s FINISH event fired: False if a re-timing superseded it; else the map leaves
        what it shared, the others re-timed if their share grows, and True."""
        if token != self.finish_token[task]:
            return False
        key = self.t_share[task]
        if key != UNSHARED:
            members = self.sharing[key]
            before = self._share(key, len(members))
            members.remove(task)
            if members and self._share(key, len(members)) != before:
                self._progress(members, before, now)
                self._retime(members, self._share(key, len(members)), now)
        return True

    def _progress(self, members: list[int], share: float, now: float) -> None:
        """The maps' work done since their clocks, at ``share``."""
        left, since = self.work_left, self.work_since
        for t in members:
            left[t] = max(0.0, left[t] - (now - since[t]) * share)
            since[t] = now

    def _retime(self, maps: list[int], share: float, now: float) -> None:
        """Queue each flow's end at ``share``: a map's FINISH, a copy's COPY (its earlier
        event goes stale)."""
        left, token, t_node = self.work_left, self.finish_token, self.t_node
        first_copy = self.first_copy_flow
        for t in maps:
            if t < first_copy:
                token[t] = self._push(now + left[t] / share, FINISH, t, t_node[t])
            else:
                self.copy_flow.pop(token[t], None)
                blk, node = self.copy_target[t]
                token[t] = self._push(now + left[t] / share, COPY, blk, node)
                self.copy_flow[token[t]] = t

    # --- events: maps finish, AMs heartbeat ---------------------------------------------
    def _on_finish(self, now: float, token: int, task: int, node: int) -> None:
        """A map ends: its slot is free, and with the job's last map its AM's container and
        the containers it never used (under contention: unless a re-timing moved its end)."""
        if self.contended and not self._share_end(task, token, now):
            return
        self.t_finish[task] = now
        self.maps_running -= 1
        self.window.done_reading(self.task_block[task])
        job = self.jobs[self.task_job[task]]
        job.running -= 1
        job.done += 1
        if job.in_sched:
            self.sched.changed()
        self.free[node] += SLOT
        freed_am, unused = self._job_done(job, now) if job.done == len(job.tasks) else (-1, ())
        if self.am_queue:  # a waiting AM comes before any map
            self._place_ams(now)
        self._slot_freed(node, now, freed_am)
        for n in unused:
            self._slot_freed(n, now)

    def _job_done(self, job: Job, now: float) -> tuple[int, list[int]]:
        """Record the job's end and free what it held; (its AM's node or -1, the nodes of the
        containers it never used)."""
        j, free = job.index, self.free
        self.job_finish[j] = now
        self.jobs[j] = None
        self.jobs_done += 1
        freed_am, unused = -1, []
        if self.am_units:  # the AM ends with its job
            freed_am = self.am_node[j]
            free[freed_am] += self.am_units
            self.am_held -= self.am_units
        if self.yarn_mr:  # its AM unregisters: containers it never used end with it
            unused = job.released + [c.node for c in job.granted]
            for n in unused:
                free[n] += SLOT
            self.maps_running -= len(unused)
            if job.in_sched:
                self.sched.remove(job)
        return freed_am, unused

    def _on_am_heartbeat(self, now: float, _token: int, j: int, _b: int) -> None:
        """yarn-mr: job ``j``'s AM frees the containers it released at its last heartbeat,
        sends its asks, and binds the containers it received to maps (dsbra.sim.yarn)."""
        job = self.jobs[j]
        if job is None:
            return  # the job ended and its AM with it
        job.am_next = -1.0
        released, job.released = job.released, []
        free, sched = self.free, self.sched
        for n in released:  # released at the last heartbeat, freed by this one's
            free[n] += SLOT
        self.maps_running -= len(released)
        job.running -= len(released)
        bound, left = am_heartbeat(job, self.launched, self.rack_of)
        ask = job.asks
        if ask.rm_any > 0 and not job.in_sched:
            sched.add(job)
        elif ask.rm_any == 0 and job.in_sched:
            sched.remove(job)
        elif released and job.in_sched:
            sched.changed()
        if released and self.am_queue:
            self._place_ams(now)
        for n in released:
            self._slot_freed(n, now)
        if sched.active and not self.cur_live:
            self.cur_live = self._start_cursor(now)
        D = self.D
        for c, task, level in bound:
            self.t_grant[task] = c.level
            if c.delay_s >= 0.0:
                self.t_delay[task] = c.delay_s if c.delay_s < D else D
                self.t_delayed[task] = 1
            self._launch(job, task, c.node, level, now)
        job.released = [c.node for c in left]
        if job.released or ask.dirty:
            self._wake_am(job, now)

    def _wake_am(self, job: Job, now: float) -> None:
        """Queue the job's next AM heartbeat on its grid (every am_heartbeat_s from its AM's
        start, or from its own phase without AMs) unless one is queued."""
        if job.am_next >= 0.0:
            return
        j = job.index
        am_hb = self.cfg.am_heartbeat_s
        anchor = self.am_start[j] if self.am_units else self.submit[j] - self.am_phases[j] * am_hb
        t = anchor + (int((now - anchor) // am_hb) + 1) * am_hb
        job.am_next = t
        self._push(t, AM_HEARTBEAT, j)

    def _place_ams(self, now: float) -> None:
        """Start waiting AMs, oldest first, on the node with the most free slots, while
        the AM share allows; each job's maps become pending am_startup_s later."""
        am_queue, am_units, free = self.am_queue, self.am_units, self.free
        while am_queue and self.am_held + am_units <= self.am_cap:
            node = max(range(self.n_nodes), key=free.__getitem__)
            if free[node] < am_units:
                return
            j = am_queue.popleft()
            free[node] -= am_units
            self.am_held += am_units
            self.am_node[j] = node
            self.am_start[j] = now
            self._push(now + self.cfg.am_startup_s, AM_READY, j)
        if self.maps_running == 0 and max(free) < SLOT:
            raise ConfigError(
                f"max-am-share {self.cfg.max_am_share:g}: ApplicationMasters hold every slot "
                f"at {now:.0f} s and no map can run (YARN deadlocks the same way); lower "
                "max-am-share so that maps keep a slot")

    # --- events: policy rounds and the copies they start --------------------------------
    def _on_policy_round(self, now: float, _token: int, _a: int, _b: int) -> None:
        """The policy reads the window and decides; its copies start (or queue for a stream)."""
        attributed = None
        if self.observer is not None:
            attributed = self.observer.attribute(now, self.window.task_ids(), self.job_split)
        driver = self.policy_driver
        record = driver.round(
            now, self.window, self.copies_in_flight, attributed, job_finish=self.job_finish,
            map_times=(self.t_launch, self.t_finish, self.launched),
            demand=self._live_demand() if driver.reads_demand else None)
        streams = self.streams
        if streams and self.copy_backlog:
            # an off period or the guard's pause takes every raise back: nothing waits
            self._drop_waiting_copies(None if record.get("arm") == OFF or record.get("paused")
                                      else set(record["lowered_blocks"]))
        for blk, node, dur in record.pop("copies"):
            self.copies_in_flight.setdefault(blk, []).append(node)
            if streams:
                self.copy_backlog.append((blk, node, dur))
            else:
                self._push(now + dur, COPY, blk, node)
        if streams:
            self._start_copies(now)
        if self.reactive:
            record["extra_storage"] = self.copied_extra_bytes / self.base_bytes
        self.rounds.append(record)
        self._push(now + self.cfg.interval_s, POLICY, 0)

    def _live_demand(self) -> LiveDemand:
        """What a fast poll of YARN shows now: per running job (in submission order) its maps
        not yet bound to a container, by block (its AM's outstanding asks, by split), and the
        containers it holds; per node its free containers and the maps running there; the
        finished maps' mean run time."""
        launched = np.frombuffer(self.launched, np.uint8)
        indptr, task_block = self.indptr, self.workload.task_block
        blocks, counts, running = [], [], []
        for j, job in enumerate(self.jobs):
            if job is None:
                continue
            tasks = np.arange(indptr[j], indptr[j + 1])
            waiting = task_block[tasks[launched[tasks] == 0]]
            blocks.append(waiting)
            counts.append(len(waiting))
            running.append(job.running)
        finish = np.frombuffer(self.t_finish, np.float64)
        busy = (launched == 1) & (finish == 0.0)
        done = finish > 0.0
        mean_map_s = (float((finish[done] - np.frombuffer(self.t_launch, np.float64)[done])
                            .mean()) if done.any() else None)
        return LiveDemand(
            job_indptr=np.concatenate(([0], np.cumsum(counts, dtype=np.int64))),
            job_blocks=np.concatenate(blocks) if blocks else np.zeros(0, np.int64),
            job_running=np.array(running, np.int64),
            free_containers=np.array(self.free) // SLOT,
            running_maps=np.bincount(np.frombuffer(self.t_node, np.int32)[busy],
                                     minlength=self.n_nodes),
            mean_map_s=mean_map_s if mean_map_s is None or mean_map_s > 0 else None)

    def _on_copy(self, now: float, token: int, blk: int, node: int) -> None:
        """A copy lands: the replica counts from now, and its source's stream is free (on the
        shared links: unless a re-timing moved its end; its source's link has one flow less)."""
        if self.link_copies:
            flow = self.copy_flow.pop(token, None)
            if flow is None:
                return  # superseded: a re-timing queued its end again
            self._share_end(flow, token, now)
            del self.copy_target[flow]
        self._forget_copy(blk, node)
        self.replicas.add(blk, node)
        if self.streams:
            source = self.t_share[flow] if self.link_copies else self.copy_source.pop(token)
            self.sending[source] -= 1
            self.copying[source] -= 1
            self.copying[node] -= 1
            self._start_copies(now)

    def _start_copies(self, now: float) -> None:
        """Start the waiting copies whose block has a holder with a free stream (the one
        sending fewest), oldest first, as the NameNode hands DataNodes their transfers."""
        rep_nodes, rep_count, streams = self.rep_nodes, self.rep_count, self.streams
        sending, copying = self.sending, self.copying
        waiting = []
        for blk, node, dur in self.copy_backlog:
            sources = [h for h in rep_nodes[blk][:rep_count[blk]].tolist()
                       if sending[h] < streams]
            if not sources:
                waiting.append((blk, node, dur))
                continue
            source = min(sources, key=sending.__getitem__)
            sending[source] += 1
            copying[source] += 1
            copying[node] += 1
            if self.link_copies:
                self._start_link_copy(blk, node, dur, source, now)
            else:
                self.copy_source[self._push(now + dur, COPY, blk, node)] = source
        self.copy_backlog[:] = waiting

    def _start_link_copy(self, blk: int, node: int, dur: float, source: int,
                         now: float) -> None:
        """The copy starts as one more flow on ``source``'s link, ``dur`` seconds of work at a
        full share: HDFS sends it from the holder's DataNode over the link the remote reads
        from that holder use."""
        flow = len(self.work_left)
        for column in (self.t_share, self.work_left, self.work_since, self.finish_token):
            column.append(0)
        self.copy_target[flow] = (blk, node)
        self._share_start(flow, source, dur, now)

    def _drop_waiting_copies(self, lowered: set[int] | None) -> None:
        """The copies not started of a lowered block (None: of every block) are dropped:
        the NameNode no longer finds it under-replicated. Running ones land, as in HDFS."""
        keep = []
        for blk, node, dur in self.copy_backlog:
            if lowered is None or blk in lowered:
                self._forget_copy(blk, node)
            else:
                keep.append((blk, node, dur))
        self.copy_backlog[:] = keep

    def _forget_copy(self, blk: int, node: int) -> None:
        """The copy of ``blk`` to ``node`` is no longer in flight (landed or dropped)."""
        targets = self.copies_in_flight[blk]
        targets.remove(node)
        if not targets:
            del self.copies_in_flight[blk]


def _maps_by_host_and_rack(lo: int, holders: list, counts: list[int],
                           rack_of: list[int]) -> tuple[dict, dict]:
    """Each host's and rack's pending maps (the MR AM's mapsHostMapping/mapsRackMapping), map
    ``lo + k`` on ``holders[k][:counts[k]]``; tasks walked backwards so that each list pops its
    earliest map from the end."""
    by_host: dict[int, list[int]] = {}
    by_rack: dict[int, list[int]] = {}
    for k in range(len(counts) - 1, -1, -1):
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
    return by_host, by_rack
