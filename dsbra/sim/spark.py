"""Spark on YARN (``--binding spark``, issue 69): executors acquired from YARN, tasks bound to
their cores by the driver's delay scheduling (docs/simulator.md, "Binding: Spark").

Each rule names the Spark class and function it follows (Spark 3.5/4.0 source; the core
scheduler in core/src/main/scala/org/apache/spark/scheduler/, the YARN side in
resource-managers/yarn/src/main/scala/org/apache/spark/deploy/yarn/). A schedule's job is a
Spark job of one stage, one task per block of its input (a grep scan), whose preferred
locations are the block's holders when the job was submitted (HadoopRDD.getPreferredLocations).
Spark's locality levels PROCESS_LOCAL and NO_PREF never arise for HDFS input; NODE_LOCAL,
RACK_LOCAL and ANY are recorded as the schema's NODE_LOCAL, RACK_LOCAL and OFF_SWITCH.

The pure part (:class:`TaskSet`, :class:`Driver`, :func:`fair_key`,
:func:`container_localities`) holds the driver's and the allocator's rules;
:class:`SparkSimulation` runs them in the engine's event loop, YARN granting the executors'
containers at node heartbeats as it grants maps' containers under ``yarn-mr``.
"""

from __future__ import annotations

import math

import numpy as np

from dsbra.errors import ConfigError
from dsbra.sim.config import SparkSettings
from dsbra.sim.engine import AM_HEARTBEAT, SLOT, Simulation
from dsbra.sim.scheduler import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, Job
from dsbra.sim.yarn import Asks

ANY = OFF_SWITCH
"""Spark's ANY, recorded as the schema's OFF_SWITCH."""
# the Spark binding's own event kinds, after the engine's; a driver's periodic offer round
# takes the kind of the MapReduce AM's heartbeat, which this binding has no use for
REVIVE = AM_HEARTBEAT
EXECUTOR_UP, ALLOCATE = 7, 8
ALLOCATION_TICK_S = 0.1
"""ExecutorAllocationManager's schedule() period (intervalMillis, 100 ms)."""


class Executor:
    """One executor: its node, its cores and how many are free, its running tasks, since when
    it has been idle (ExecutorMonitor's idle clock), and whether it ran a task yet (warm)."""

    __slots__ = ("id", "node", "rack", "cores", "free", "running", "idle_since", "alive", "warm")

    def __init__(self, eid: int, node: int, rack: int, cores: int):
        self.id, self.node, self.rack, self.cores = eid, node, rack, cores
        self.free, self.running = cores, 0
        self.idle_since = -1.0
        self.alive = False  # registered with the driver (LaunchedExecutor), not yet removed
        self.warm = False


class TaskSet:
    """One stage's TaskSetManager: its pending tasks (``job``'s per-host, per-rack and
    all-task lists, as PendingTasksByLocality, launched tasks dropped lazily), its valid
    locality levels and the delay-scheduling timer."""

    __slots__ = ("job", "pool", "hosts", "racks", "host_tasks", "levels", "waits", "index",
                 "reset_time", "no_rejects_since_reset")

    def __init__(self, job: Job, pool: Pool, hosts: set, racks: set, host_tasks: dict,
                 now: float):
        self.job, self.pool = job, pool
        self.hosts, self.racks = hosts, racks  # the tasks' preferred hosts and their racks
        self.host_tasks = host_tasks  # host -> tasks preferring it (the allocator's hint)
        self.levels: list[int] = [ANY]
        self.waits: list[float] = [0.0]
        self.index = 0  # currentLocalityIndex
        self.reset_time = now  # lastLocalityWaitResetTime
        self.no_rejects_since_reset = True  # TaskSchedulerImpl.noRejectsSinceLastReset

    def compute_levels(self, exec_hosts: dict, exec_racks: dict, wait_node: float,
                       wait_rack: float) -> None:
        """TaskSetManager.computeValidLocalityLevels: NODE_LOCAL if an executor is alive on a
        host some task prefers, RACK_LOCAL if one is alive on such a host's rack, then ANY;
        each level's wait (getLocalityWait: spark.locality.wait.node / .rack, ANY 0). The hosts
        are those of all the stage's tasks: Spark drops a host whose tasks all launched only
        lazily."""
        levels, waits = [], []
        if any(h in exec_hosts for h in self.hosts):
            levels.append(NODE_LOCAL)
            waits.append(wait_node)
        if any(r in exec_racks for r in self.racks):
            levels.append(RACK_LOCAL)
            waits.append(wait_rack)
        self.levels, self.waits = levels + [ANY], waits + [0.0]

    def recompute_levels(self, exec_hosts: dict, exec_racks: dict, wait_node: float,
                         wait_rack: float) -> None:
        """TaskSetManager.recomputeLocality (an executor added or lost): keep the current
        level; if the levels gained a more local one below it, move to that (SPARK-31837)."""
        before, prev_index = self.levels, self.index
        prev_level = before[prev_index]
        self.compute_levels(exec_hosts, exec_racks, wait_node, wait_rack)
        self.index = self.locality_index(prev_level)
        if self.index > prev_index:
            self.index = self.locality_index(next(x for x in self.levels if x not in before))

    def locality_index(self, level: int) -> int:
        """TaskSetManager.getLocalityIndex: the first valid level at least as far as ``level``."""
        i = 0
        while level > self.levels[i]:
            i += 1
        return i

    def allowed_level(self, now: float) -> int:
        """TaskSetManager.getAllowedLocalityLevel: move past a level without pending tasks
        (restarting the timer), or whose wait has run out since the timer's last reset (the
        timer advancing by that wait, not to now). Every task of HDFS input prefers some host,
        so a level has pending tasks exactly when the stage has."""
        levels, waits = self.levels, self.waits
        last = len(levels) - 1
        while self.index < last:
            if self.job.pending == 0:
                self.reset_time = now
                self.index += 1
            elif now - self.reset_time >= waits[self.index]:
                self.reset_time += waits[self.index]
                self.index += 1
            else:
                return levels[self.index]
        return levels[self.index]

    def reset(self, now: float, level: int | None) -> None:
        """TaskSetManager.resetDelayScheduleTimer: the timer restarts now, at ``level``'s index
        if one is given."""
        self.reset_time = now
        if level is not None:
            self.index = self.locality_index(level)

    def dequeue(self, node: int, rack: int, allowed: int, launched: bytearray) -> tuple[int, int]:
        """TaskSetManager.dequeueTaskHelper: (task, level) of a pending task preferring the
        executor's host, else (RACK_LOCAL allowed) its rack, else (ANY allowed) the earliest
        pending task; (-1, ANY) if none is allowed here."""
        job = self.job
        task = _pop_pending(job.by_host.get(node), launched)
        if task >= 0:
            return task, NODE_LOCAL
        if allowed >= RACK_LOCAL:
            task = _pop_pending(job.by_rack.get(rack), launched)
            if task >= 0:
                return task, RACK_LOCAL
            if allowed == ANY:
                tasks, pos = job.tasks, job.any_pos
                while launched[tasks[pos]]:
                    pos += 1
                job.any_pos = pos + 1
                return tasks[pos], ANY
        return -1, ANY


def _pop_pending(lst: list[int] | None, launched: bytearray) -> int:
    """Pop the list's first-added pending task (launched ones dropped on the way); -1 if none
    (TaskSetManager.dequeueTaskFromList)."""
    while lst:
        task = lst.pop()
        if not launched[task]:
            return task
    return -1


class Pool:
    """A fair-scheduler pool (Pool.scala): its task sets in FIFO order (FIFOSchedulingAlgorithm:
    job id, one stage each) and their running tasks."""

    __slots__ = ("name", "min_share", "weight", "running", "tasksets", "index")

    def __init__(self, name: str, min_share: int, weight: int = 1, index: int = 0):
        self.name, self.min_share, self.weight = name, min_share, weight
        self.index = index  # its creation order among the driver's pools
        self.running = 0
        self.tasksets: list[TaskSet] = []


def fair_key(pool: Pool) -> tuple:
    """FairSchedulingAlgorithm.comparator as a sort key: pools below their minShare first, by
    running / minShare; then by running / weight; ties by name (as strings)."""
    running = pool.running
    if running < pool.min_share:
        return (0, running / max(pool.min_share, 1), pool.name)
    return (1, running / pool.weight, pool.name)


class Driver:
    """One application's driver: its executors, its pools (spark.scheduler.mode FAIR) or its
    one FIFO queue, and TaskSchedulerImpl.resourceOffers."""

    __slots__ = ("settings", "fair", "pools", "active", "executors", "exec_hosts", "exec_racks",
                 "launched", "rng", "legacy")

    def __init__(self, settings: SparkSettings, launched: bytearray, rng: np.random.Generator):
        self.settings = settings
        self.fair = settings.scheduling_mode == "fair"
        self.pools: dict[str, Pool] = {}
        # the pools holding task sets: a shared application of thousands of jobs, a pool each,
        # scans only these (the others sort last and offer nothing)
        self.active: dict[str, Pool] = {}
        self.executors: list[Executor] = []  # alive, in registration order
        self.exec_hosts: dict[int, int] = {}  # host -> alive executors
        self.exec_racks: dict[int, int] = {}
        self.launched, self.rng = launched, rng
        self.legacy = settings.legacy_reset

    # --- task sets and executors -----------------------------------------------------------
    def submit(self, ts: TaskSet) -> None:
        """TaskSchedulerImpl.submitTasks: the task set joins its pool (created on first use with
        the default minShare and weight, as FairSchedulableBuilder does for an unknown pool)."""
        s = self.settings
        ts.compute_levels(self.exec_hosts, self.exec_racks, s.wait_node_s, s.wait_rack_s)
        ts.pool.tasksets.append(ts)
        self.active[ts.pool.name] = ts.pool

    def pool(self, name: str) -> Pool:
        pool = self.pools.get(name)
        if pool is None:
            pool = self.pools[name] = Pool(name, self.settings.pool_min_share, index=len(self.pools))
        return pool

    def finished(self, ts: TaskSet) -> None:
        """TaskSchedulerImpl.taskSetFinished: the task set leaves its pool."""
        ts.pool.tasksets.remove(ts)
        if not ts.pool.tasksets:
            del self.active[ts.pool.name]

    def tasksets(self) -> list[TaskSet]:
        """Every task set of the application, its pools in creation order."""
        return [ts for pool in sorted(self.active.values(), key=lambda p: p.index) for ts in pool.tasksets]

    def add_executor(self, e: Executor) -> None:
        e.alive = True
        self.executors.append(e)
        self._count(e, 1)

    def remove_executor(self, e: Executor) -> None:
        e.alive = False
        self.executors.remove(e)
        self._count(e, -1)

    def _count(self, e: Executor, step: int) -> None:
        """Executors per host and rack; every task set's levels recomputed (executorAdded,
        executorLost)."""
        for table, key in ((self.exec_hosts, e.node), (self.exec_racks, e.rack)):
            n = table.get(key, 0) + step
            if n:
                table[key] = n
            else:
                del table[key]
        s = self.settings
        for ts in self.tasksets():
            ts.recompute_levels(self.exec_hosts, self.exec_racks, s.wait_node_s, s.wait_rack_s)

    def sorted_tasksets(self) -> list[TaskSet]:
        """rootPool.getSortedTaskSetQueue, the task sets with pending tasks: FAIR, pools by
        :func:`fair_key` and each pool's in FIFO order; FIFO, all in submission order."""
        if self.fair:
            out = [ts for pool in sorted(self.active.values(), key=fair_key) for ts in pool.tasksets
                   if ts.job.pending]
        else:
            out = [ts for ts in self.tasksets() if ts.job.pending]
        if not self.fair and len(self.pools) > 1:
            out.sort(key=lambda ts: ts.job.index)
        return out

    # --- one offer round -----------------------------------------------------------------
    def resource_offers(self, offers: list[Executor], now: float, all_free: bool
                        ) -> list[tuple[TaskSet, int, Executor, int, float]]:
        """TaskSchedulerImpl.resourceOffers: the offers shuffled (shuffleOffers); each task set
        in scheduling order offered every executor with a free core at each of its valid levels
        in turn, again while one launches (resourceOfferSingleTaskSet). The timer's reset
        (SPARK-18886, Spark 3.1): a task set that launched without declining an offer for
        locality resets its timer to its most local launch if this round offered all free
        resources (makeOffers(), the revive) or it has declined none since its last reset; a
        decline blocks that until such a round. ``legacy``: reset on every launch instead
        (TaskSetManager.resourceOffer). Returns [(task set, task, executor, level, waited)],
        ``waited`` the time since the task set was first declined for locality since its last
        launch (-1: not declined), the simulator's delay-scheduling accounting."""
        order = self.sorted_tasksets()
        if not order:
            return []
        shuffled = [offers[i] for i in self.rng.permutation(len(offers))] if len(offers) > 1 \
            else offers
        launches = []
        legacy = self.legacy
        free = sum(e.free for e in offers)
        for ts in order:
            if free < 1:
                break  # no core left to offer: the task sets after launch nothing, decline nothing
            launched_any, no_rejects, min_level = False, True, None
            swept = None  # the level the last pass's final sweep declined every free core at
            for max_level in ts.levels:
                if not ts.job.pending:
                    break  # every offer declined, nothing recorded
                effective = min(ts.allowed_level(now), max_level)
                if effective == swept:  # this pass would decline every free core again
                    if max_level == ANY and free >= 1:
                        no_rejects = False
                        if ts.job.skip_start < 0.0:
                            ts.job.skip_start = now
                    continue
                swept = effective
                while True:
                    launched_here = False
                    for e in shuffled:
                        if e.free < 1:
                            continue  # resourcesMeetTaskRequirements: no free core, no offer
                        task, level, waited = self._offer(ts, e, max_level, now)
                        if task < 0:
                            if max_level == ANY and ts.job.pending:
                                no_rejects = False  # hasScheduleDelayReject
                                if ts.job.skip_start < 0.0:
                                    ts.job.skip_start = now
                            continue
                        launches.append((ts, task, e, level, waited))
                        free -= 1
                        launched_here = True
                        min_level = level if min_level is None else min(min_level, level)
                    if not launched_here:
                        break
                    launched_any = True
            if not legacy:
                if no_rejects:
                    if launched_any and (all_free or ts.no_rejects_since_reset):
                        ts.reset(now, min_level)
                        ts.no_rejects_since_reset = True
                else:
                    ts.no_rejects_since_reset = False
        return launches

    def _offer(self, ts: TaskSet, e: Executor, max_level: int, now: float
               ) -> tuple[int, int, float]:
        """TaskSetManager.resourceOffer: (task, level, waited) launched on ``e``, task -1 if
        none; the allowed level capped at this pass's ``max_level``; under the legacy rule a
        launch resets the timer at its level."""
        job = ts.job
        if not job.pending:
            return -1, ANY, -1.0
        allowed = min(ts.allowed_level(now), max_level)
        task, level = ts.dequeue(e.node, e.rack, allowed, self.launched)
        if task < 0:
            return task, level, -1.0
        if self.legacy:
            ts.reset(now, level)
        self.launched[task] = 1
        job.pending -= 1
        job.running += 1
        ts.pool.running += 1
        e.free -= 1
        e.running += 1
        waited = now - job.skip_start if job.skip_start >= 0.0 else -1.0
        job.skip_start = -1.0
        return task, level, waited


def container_localities(n: int, host_tasks: dict[int, int], aware_tasks: int,
                         tasks_per_executor: int, held: dict[int, int]) -> list[list[int]]:
    """LocalityPreferredContainerPlacementStrategy.localityOfRequestedContainers for ``n`` new
    executor requests: each hinted host's expected executors (its tasks x the executors the
    locality-aware tasks need / all its hints' tasks, expectedHostToContainerCount) less those
    it ``held``; the requests beyond their sum ask for no host, the rest for the hosts whose
    ratio (scaled to the largest) is still above zero, one less each request. Pending requests
    are not counted: the allocator withdraws them and asks anew (docs/simulator.md)."""
    if n <= 0:
        return []
    total = sum(host_tasks.values())
    needed = math.ceil(aware_tasks / tasks_per_executor)
    required = {}
    for h, count in host_tasks.items():
        expected = count * needed / total
        required[h] = max(0, math.ceil(expected - held.get(h, 0)))
    aware = min(n, sum(required.values()))
    out: list[list[int]] = [[] for _ in range(n - aware)]
    if aware:
        largest = max(required.values())
        ratio = {h: math.ceil(r * aware / largest) for h, r in required.items()}
        for _ in range(aware):
            out.append(sorted(h for h, r in ratio.items() if r > 0))
            ratio = {h: r - 1 for h, r in ratio.items()}
    return out


class SparkApp:
    """One Spark application on YARN: its face to the ResourceManager (a scheduler Job whose
    asks are its executor requests and whose running count is the slots it holds), its driver,
    the executors it holds (starting ones too), its pending requests (each a list of hosts, []
    for none) and ExecutorAllocationManager's state."""

    __slots__ = ("index", "face", "driver", "held", "requests", "start", "ended", "revive_next",
                 "target", "to_add", "add_time", "initializing", "asked_for", "hints_version")

    def __init__(self, index: int, face: Job, driver: Driver, start: float, target: int,
                 dynamic: bool):
        self.index, self.face, self.driver, self.start = index, face, driver, start
        self.held: dict[int, Executor] = {}
        self.requests: list[list[int]] = []
        self.ended = False
        self.revive_next = -1.0  # the queued revive's time (-1: none)
        self.target = target  # numExecutorsTarget
        self.to_add = 1  # numExecutorsToAdd
        self.add_time = -1.0  # addTime (-1: NOT_SET)
        self.initializing = dynamic  # no stage submitted yet: the target stays the initial one
        self.asked_for: tuple | None = None  # (requests, hints version) last asked for
        self.hints_version = 0


class SparkSimulation(Simulation):
    """The engine under ``binding`` spark: YARN grants executor containers at node heartbeats
    (Scheduler.grant against each application's asks, delay scheduling as under yarn-mr), and
    each application's driver offers its executors' free cores to its task sets
    (:class:`Driver`): when an executor registers or a task ends on it (one executor), at each
    job's submission and every revive interval (all of them)."""

    __slots__ = ("spark", "need", "shared", "apps", "tasksets", "task_exec", "next_eid")

    def _handlers(self) -> tuple:
        return (self._on_submit, self._on_app_ready, self._on_task_finish, self._on_copy,
                self._on_heartbeat_spark, self._on_revive, self._on_policy_round,
                self._on_executor_up, self._on_allocate)

    def _setup(self) -> None:
        super()._setup()
        self.spark: SparkSettings = self.cfg.spark
        self.need = self.spark.executor_cores * SLOT
        self.shared = self.spark.app == "shared"
        self.apps: dict[int, SparkApp] = {}
        self.tasksets: list[TaskSet | None] = [None] * self.workload.n_jobs
        self.task_exec: dict[int, Executor] = {}
        self.next_eid = 0
        if self.shared:  # the long-running application starts with the schedule
            if self.am_units:
                node = max(range(self.n_nodes), key=self.free.__getitem__)
                self.free[node] -= self.am_units
                self.am_held += self.am_units
            self._start_app(0, 0.0)

    # --- applications --------------------------------------------------------------------
    def _on_submit(self, now: float, token: int, j: int, b: int) -> None:
        """Job ``j`` submitted: into the shared application's pools, or as its own application
        (first its ApplicationMaster, which runs the driver, when AMs are modelled)."""
        if self.shared:
            self._submit_taskset(self.apps[0], j, now)
        elif self.am_units:
            self._on_arrive_with_am(now, token, j, b)
        else:
            self._on_app_ready(now, token, j, b)

    def _on_app_ready(self, now: float, _token: int, j: int, _b: int) -> None:
        """Job ``j``'s own application's driver is up: it asks for executors and submits the
        job."""
        self._submit_taskset(self._start_app(j, now), j, now)

    def _start_app(self, a: int, now: float) -> SparkApp:
        """An application starts: it asks YARN for its initial executors (no locality: no
        stage yet), and with dynamic allocation starts its allocation manager's clock."""
        s = self.spark
        face = Job(a, now, [], {}, {})
        face.asks = Asks(self.rack_of)
        face.running = 0
        driver = Driver(s, self.launched, np.random.default_rng([self.cfg.seed, 17, a]))
        app = self.apps[a] = SparkApp(a, face, driver, now, s.executors, s.dynamic)
        self._update_requests(app, now)
        if s.dynamic:
            self._push(now + ALLOCATION_TICK_S, ALLOCATE, a)
        return app

    def _submit_taskset(self, app: SparkApp, j: int, now: float) -> None:
        """Job ``j``'s one stage becomes a task set, its tasks preferring their blocks' holders
        now (the oracle's: every node); submitTasks revives offers at once."""
        self.job_pending[j] = now
        lo, hi = self.indptr[j], self.indptr[j + 1]
        tasks = list(range(lo, hi))
        host_tasks = self._preferred_hosts(lo, hi)
        job = (self._job_everywhere(j, now, tasks) if self.everywhere
               else self._job_on_holders(j, now, lo, hi, tasks))
        s = self.spark
        name = ("default" if not self.shared
                else f"pool{j if s.pools == 0 else j % s.pools}")
        rack_of = self.rack_of
        ts = TaskSet(job, app.driver.pool(name), set(host_tasks),
                     {rack_of[h] for h in host_tasks}, host_tasks, now)
        self.jobs[j], self.tasksets[j] = job, ts
        app.driver.submit(ts)
        app.initializing = False
        app.hints_version += 1
        self._offer_round(app, app.driver.executors, now, True)

    def _preferred_hosts(self, lo: int, hi: int) -> dict[int, int]:
        """Tasks per preferred host of maps lo..hi-1 (their blocks' holders, every node for a
        block the oracles have everywhere): ExecutorAllocationManager's hostToLocalTaskCount."""
        blocks = self.workload.task_block[lo:hi]
        if self.everywhere:
            return dict.fromkeys(range(self.n_nodes), hi - lo)
        counts: dict[int, int] = {}
        holders, n = self.rep_nodes[blocks].tolist(), self.rep_count[blocks].tolist()
        reactive = self.reactive
        for k, b in enumerate(blocks.tolist()):
            hosts = (self.all_nodes if reactive and self.asked[b] >= self.min_jobs
                     else holders[k][:n[k]])
            for h in hosts:
                counts[h] = counts.get(h, 0) + 1
        return counts

    def _app_of(self, j: int) -> SparkApp:
        return self.apps[0 if self.shared else j]

    def _end_app(self, app: SparkApp, now: float) -> None:
        """A per-job application ends with its job: its executors, requests and AM go."""
        app.ended = True
        face, free = app.face, self.free
        for hosts in app.requests:
            face.asks.remove_map(hosts)
        app.requests.clear()
        face.asks.send()
        if face.in_sched:
            self.sched.remove(face)
        nodes = []
        for e in app.held.values():
            free[e.node] += self.need
            self.maps_running -= 1
            nodes.append(e.node)
        app.held.clear()
        a = app.index
        if self.am_units:
            free[self.am_node[a]] += self.am_units
            self.am_held -= self.am_units
            nodes.append(self.am_node[a])
            if self.am_queue:
                self._place_ams(now)
        del self.apps[a]
        for node in nodes:
            self._container_freed(node, now)

    # --- executors from YARN -------------------------------------------------------------
    def _update_requests(self, app: SparkApp, now: float) -> None:
        """YarnAllocator.updateResourceRequests: ask for the executors the target lacks. Without
        dynamic allocation they ask for no host. With it, whenever the number or the stages'
        hints change, the pending requests are withdrawn and asked anew, placed by
        :func:`container_localities`. The asks reach the ResourceManager at once."""
        missing = app.target - len(app.held)
        face, requests = app.face, app.requests
        if not self.spark.dynamic:
            while len(requests) < missing:
                requests.append([])
                face.asks.add_map([])
        elif app.asked_for != (missing, app.hints_version):
            app.asked_for = (missing, app.hints_version)
            for hosts in requests:
                face.asks.remove_map(hosts)
            requests.clear()
            host_tasks: dict[int, int] = {}
            aware = 0
            for ts in app.driver.tasksets():
                aware += len(ts.job.tasks)
                for h, c in ts.host_tasks.items():
                    host_tasks[h] = host_tasks.get(h, 0) + c
            held: dict[int, int] = {}
            for e in app.held.values():
                held[e.node] = held.get(e.node, 0) + 1
            for hosts in (container_localities(missing, host_tasks, aware,
                                               self.spark.executor_cores, held)
                          if host_tasks else [[]] * max(missing, 0)):
                requests.append(hosts)
                face.asks.add_map(hosts)
        face.asks.send()
        self._sync_sched(face, now)

    def _sync_sched(self, face: Job, now: float) -> None:
        """The application is among those the ResourceManager offers nodes to while it asks."""
        sched = self.sched
        if face.asks.rm_any > 0 and not face.in_sched:
            sched.add(face)
        elif face.asks.rm_any == 0 and face.in_sched:
            sched.remove(face)
        if sched.active and not self.cur_live:
            self.cur_live = self._start_cursor(now)

    def _on_heartbeat_spark(self, now: float, _token: int, node: int, cycle: int) -> None:
        """A node heartbeat: the ResourceManager grants executor containers on the node (one, or
        all that fit with assign_multiple) against the applications' asks; each starts
        executor_startup_s later. Then the cursor moves on (``cycle``: this heartbeat's)."""
        sched, free, need = self.sched, self.free, self.need
        if not sched.active:
            self.cur_live = False
            return
        while free[node] >= need:
            got = sched.grant(node, now)
            if got is None:
                break
            face, level = got
            face.asks.granted(node, level)
            app = self.apps[face.index]
            self._match_request(app, node)
            free[node] -= need
            self.maps_running += 1
            face.running += self.spark.executor_cores
            sched.on_grant(face, level)
            if face.asks.rm_any == 0:
                sched.remove(face)
            else:
                sched.changed()
            e = Executor(self.next_eid, node, self.rack_of[node], self.spark.executor_cores)
            self.next_eid += 1
            app.held[e.id] = e
            self._push(now + self.spark.executor_startup_s, EXECUTOR_UP, app.index, e.id)
            if not self.cfg.assign_multiple or not sched.active:
                break
        self.cur_live = (self._cursor_from(self.ring_pos[node] + 1, cycle, now)
                         if sched.active else False)

    def _match_request(self, app: SparkApp, node: int) -> None:
        """YarnAllocator.matchContainerToRequest: the container fills a request for its host,
        else one for its rack, else any; that request is withdrawn (removeContainerRequest)."""
        requests, rack_of = app.requests, self.rack_of
        rack = rack_of[node]
        pick = next((i for i, hosts in enumerate(requests) if node in hosts), None)
        if pick is None:
            pick = next((i for i, hosts in enumerate(requests)
                         if any(rack_of[h] == rack for h in hosts)), 0)
        app.face.asks.remove_map(requests.pop(pick))
        app.face.asks.send()

    def _container_freed(self, node: int, now: float) -> None:
        """A container ended on ``node``: the heartbeat cursor comes back to it if it must."""
        if not self.sched.active:
            return
        if not self.cur_live:
            self.cur_live = self._start_cursor(now)
        else:
            self._wake(node, now)

    def _release_executor(self, app: SparkApp, e: Executor, now: float) -> None:
        """The executor is removed (idle too long): its container is YARN's again."""
        app.driver.remove_executor(e)
        del app.held[e.id]
        self.free[e.node] += self.need
        self.maps_running -= 1
        app.face.running -= e.cores
        if app.face.in_sched:
            self.sched.changed()
        self._container_freed(e.node, now)

    def _on_executor_up(self, now: float, _token: int, a: int, eid: int) -> None:
        """The executor registers (CoarseGrainedSchedulerBackend's LaunchedExecutor):
        makeOffers for it alone."""
        app = self.apps.get(a)
        if app is None:
            return  # its application ended while it started; its container went with it
        e = app.held[eid]
        app.driver.add_executor(e)
        e.idle_since = now
        self._offer_round(app, [e], now, False)

    # --- the driver's offers -------------------------------------------------------------
    def _offer_round(self, app: SparkApp, offers: list[Executor], now: float,
                     all_free: bool) -> None:
        """One resourceOffers round of the application's driver; each launch recorded, and a
        revive queued while tasks are pending."""
        D = self.D
        for ts, task, e, level, waited in app.driver.resource_offers(offers, now, all_free):
            if waited >= 0.0:
                self.t_delay[task] = waited if waited < D else D
                self.t_delayed[task] = 1
            self.t_grant[task] = level  # the core went to this task: its own level
            self.containers_granted += 1
            self.task_exec[task] = e
            e.idle_since = -1.0
            self._launch(ts.job, task, e.node, level, now,
                         0.0 if e.warm else self.spark.executor_warmup_s)
            e.warm = True
        if app.revive_next < 0.0 and any(ts.job.pending for ts in app.driver.tasksets()):
            revive = self.spark.revive_s
            t = app.start + (int((now - app.start) // revive) + 1) * revive
            app.revive_next = t if t > now else t + revive  # rounding can land on now
            self._push(app.revive_next, REVIVE, app.index)

    def _on_revive(self, now: float, _token: int, a: int, _b: int) -> None:
        """The driver's revive timer (spark.scheduler.revive.interval, at a fixed rate from the
        driver's start): makeOffers for every executor."""
        app = self.apps.get(a)
        if app is None:
            return
        app.revive_next = -1.0
        if self.maps_running == 0 and max(self.free) < self.need:
            raise ConfigError(
                f"no node has {self.spark.executor_cores} free slots for an executor at "
                f"{now:.0f} s and no executor runs (ApplicationMasters hold the rest; YARN waits "
                "forever the same way): lower --spark-executor-cores or --max-am-share")
        self._offer_round(app, app.driver.executors, now, True)

    def _on_task_finish(self, now: float, token: int, task: int, _node: int) -> None:
        """A task ends: its core is free; with the job's last task the job ends (and a per-job
        application with it); otherwise makeOffers for its executor (StatusUpdate). Under
        contention: unless a re-timing moved its end."""
        if self.contended and not self._share_end(task, token, now):
            return
        self.t_finish[task] = now
        self.window.done_reading(self.task_block[task])
        e = self.task_exec.pop(task)
        j = self.task_job[task]
        job, ts = self.jobs[j], self.tasksets[j]
        job.running -= 1
        job.done += 1
        ts.pool.running -= 1
        e.free += 1
        e.running -= 1
        if e.running == 0:
            e.idle_since = now
        app = self._app_of(j)
        if job.done == len(job.tasks):
            self.job_finish[j] = now
            self.jobs[j] = self.tasksets[j] = None
            self.jobs_done += 1
            app.driver.finished(ts)
            app.hints_version += 1
            if not self.shared:
                self._end_app(app, now)
                return
        if e.alive:
            self._offer_round(app, [e], now, False)

    # --- dynamic allocation --------------------------------------------------------------
    def _on_allocate(self, now: float, _token: int, a: int, _b: int) -> None:
        """ExecutorAllocationManager.schedule: the backlog clock, the target
        (updateAndSyncNumExecutorsTarget), idle executors removed (removeExecutors: never below
        minExecutors or the target), then the requests brought in line."""
        app = self.apps.get(a)
        if app is None:
            return
        s = self.spark
        pending = running = 0
        for ts in app.driver.tasksets():
            pending += ts.job.pending
            running += ts.job.running
        if pending and app.add_time < 0.0:  # onSchedulerBacklogged
            app.add_time = now + s.backlog_timeout_s
        elif not pending:  # onSchedulerQueueEmpty
            app.add_time, app.to_add = -1.0, 1
        needed = -(-(pending + running) // s.executor_cores)  # maxNumExecutorsNeeded
        if not app.initializing:
            if needed < app.target:
                app.target, app.to_add = max(needed, s.min_executors), 1
            elif app.add_time >= 0.0 and now >= app.add_time:
                self._add_executors(app, needed, now)
        floor = max(s.min_executors, app.target)
        for e in [e for e in app.driver.executors if e.running == 0 and e.idle_since >= 0.0
                  and now - e.idle_since >= s.idle_timeout_s]:
            if len(app.driver.executors) - 1 < floor:  # registered executors only
                break
            self._release_executor(app, e, now)
        self._update_requests(app, now)
        self._push(now + ALLOCATION_TICK_S, ALLOCATE, a)

    def _add_executors(self, app: SparkApp, needed: int, now: float) -> None:
        """ExecutorAllocationManager.addExecutors: the target grows by numExecutorsToAdd, capped
        by the executors needed and bounded by min/max; numExecutorsToAdd doubles while fully
        used, and the next addition waits the sustained backlog timeout."""
        s = self.spark
        top = s.max_executors if s.max_executors is not None else needed
        if app.target >= top:
            app.to_add = 1
            return
        old = app.target
        target = min(app.target + app.to_add, needed)
        app.target = max(min(target, top), s.min_executors)
        delta = app.target - old
        if delta > 0:
            app.to_add = app.to_add * 2 if delta == app.to_add else 1
            app.add_time = now + s.backlog_timeout_s
