"""Map-slot scheduling: the Fair Scheduler with delay scheduling (waits in seconds, or YARN-style
counts of scheduling opportunities), the Capacity Scheduler's count-based delay in one queue, FIFO.

Two bindings (SimConfig.binding). ``yarn-mr``: :meth:`Scheduler.grant` models the
ResourceManager offering one free slot to the jobs in scheduling order against the asks it last
heard from each job's ApplicationMaster (FSAppAttempt.assignContainer): node-local wherever the
job asks for the node, rack-local and off-switch only once its locality level relaxed; the AM
binds the container to a map later (dsbra.sim.yarn). ``task``: :meth:`Scheduler.offer` hands the
slot straight to a map, as Hadoop 1's JobTracker or Spark's driver does: a slot on host H goes to
a pending map with H among its split hosts, else one with a split host on H's rack, else any map,
each allowed only at the job's current locality level. Split hosts are fixed at job submission
(the job client computes them), so replicas added later help later jobs only.
"""

from __future__ import annotations

from dsbra.hadoop import locality

NODE_LOCAL, RACK_LOCAL, OFF_SWITCH = 0, 1, 2


class Job:
    """A running job's scheduling state. ``by_host``/``by_rack``: pending task ids per node /
    rack, as the MR AM's mapsHostMapping/mapsRackMapping; launched tasks are dropped lazily
    (the ``launched`` flags are shared with the engine), and each list pops its earliest task
    from the end."""

    __slots__ = ("index", "submit", "tasks", "any_pos", "by_host", "by_rack", "pending",
                 "running", "done", "level", "wait_start", "opportunities", "skip_start",
                 "first_launch", "in_sched", "asks", "split", "granted", "released", "am_next")

    def __init__(self, index: int, submit: float, tasks: list[int], by_host: dict,
                 by_rack: dict):
        self.index, self.submit, self.tasks = index, submit, tasks
        self.any_pos = 0
        self.by_host, self.by_rack = by_host, by_rack
        self.pending, self.running, self.done = len(tasks), 0, 0
        self.level = NODE_LOCAL
        self.wait_start = -1.0  # hfs: time of the first skip since the last launch
        self.opportunities = 0  # yarn: scheduling opportunities since the last relaxation
        self.skip_start = -1.0  # DT accounting: first skip since the job's last launch
        self.first_launch = -1.0
        self.in_sched = False  # among the jobs the scheduler offers slots to
        # yarn-mr: the asks (dsbra.sim.yarn.Asks), each map's split hosts, containers granted
        # and not yet received by the AM, nodes of containers it will release at its next
        # heartbeat, and the time of that heartbeat if one is queued (-1: none)
        self.asks = self.split = None
        self.granted: list = []
        self.released: list[int] = []
        self.am_next = -1.0


class Scheduler:
    """Job ordering plus delay scheduling. ``launched`` is the engine's per-task flag array."""

    def __init__(self, *, policy: str, delay_mode: str, delay_node_s: float,
                 delay_rack_s: float, yarn_threshold_node: float, yarn_threshold_rack: float,
                 nodes: int, rack_of: list[int], launched: bytearray,
                 node_locality_delay: int = locality.NODE_LOCALITY_DELAY,
                 rack_locality_additional_delay: int = locality.RACK_LOCALITY_ADDITIONAL_DELAY,
                 binding: str = "task"):
        self.fair = policy == "fair"
        self.launched = launched
        self.rack_of = rack_of
        self.active: list[Job] = []
        self._order: list[Job] | None = None
        self.mode = "none"
        if self.fair and delay_mode == "hfs" and (delay_node_s > 0 or delay_rack_s > 0):
            # waits in seconds: HFS's rule when slots go to tasks, the Fair Scheduler's
            # continuous-scheduling rule when containers are granted against asks
            self.mode = "hfs" if binding == "task" else "fair-time"
        elif (self.fair and delay_mode == "yarn" and yarn_threshold_node >= 0
              and yarn_threshold_rack >= 0):
            self.mode = "yarn"
        self.w1, self.w2 = delay_node_s, delay_rack_s
        self.w12 = delay_node_s + delay_rack_s
        # YARN relaxes once opportunities > numNodes * threshold (thresholds capped at 1)
        self.thr_node = nodes * min(yarn_threshold_node, 1.0)
        self.thr_rack = nodes * min(yarn_threshold_rack, 1.0)
        # Capacity Scheduler (RegularContainerAllocator.canAssign, Hadoop 3.4.2): jobs in
        # submission order (one queue, FIFO ordering policy); rack-local once missed
        # opportunities > min(nodes, node delay); off-switch once > min(nodes, node + rack
        # delay), or with the rack delay at -1 > min(nodes, pending maps x wait factor)
        if policy == "capacity":
            self.mode = "capacity"
        self.nodes = nodes
        self.cap_node = min(nodes, node_locality_delay)
        self.rack_add = rack_locality_additional_delay
        self.cap_rack = min(nodes, node_locality_delay + rack_locality_additional_delay)

    # --- job set -------------------------------------------------------------------------
    def add(self, job: Job) -> None:
        self.active.append(job)
        job.in_sched = True
        self._order = None

    def changed(self) -> None:
        """A job's running count changed: the fair order must be recomputed."""
        if self.fair:
            self._order = None

    def remove(self, job: Job) -> None:
        self.active.remove(job)
        job.in_sched = False
        self._order = None

    def order(self) -> list[Job]:
        if self._order is None:
            if self.fair:
                self._order = sorted(self.active, key=_fair_key)
            else:
                self._order = list(self.active)
        return self._order

    # --- one heartbeat, one slot -----------------------------------------------------------
    def offer(self, node: int, now: float):
        """(job, task id, locality) launched on ``node``, or None if every job declined."""
        launched = self.launched
        rack = self.rack_of[node]
        mode = self.mode
        counted = mode in ("capacity", "yarn")
        for job in self._order if self._order is not None else self.order():
            if counted:
                self._count_opportunity(job)
            lst = job.by_host.get(node)
            if lst:
                while lst and launched[lst[-1]]:
                    lst.pop()
                if lst:
                    return job, lst.pop(), NODE_LOCAL
            if mode == "none":
                allowed = OFF_SWITCH
            elif mode == "hfs":
                allowed = job.level
                if job.wait_start >= 0.0:
                    waited = now - job.wait_start
                    if waited >= self.w12:
                        allowed = OFF_SWITCH
                    elif waited >= self.w1 and allowed < RACK_LOCAL:
                        allowed = RACK_LOCAL
            elif mode == "capacity":
                rack_ok, off_ok = self._capacity_allows(
                    job, len(job.by_host) + len(job.by_rack), job.pending)
                allowed = OFF_SWITCH if off_ok else RACK_LOCAL if rack_ok else NODE_LOCAL
            else:
                allowed = job.level
            if allowed >= RACK_LOCAL:
                lst = job.by_rack.get(rack)
                if lst:
                    while lst and launched[lst[-1]]:
                        lst.pop()
                    if lst:
                        return job, lst.pop(), RACK_LOCAL
                if allowed == OFF_SWITCH:
                    tasks, pos = job.tasks, job.any_pos
                    while launched[tasks[pos]]:
                        pos += 1
                    job.any_pos = pos + 1
                    return job, tasks[pos], OFF_SWITCH
            # skipped for locality: free slot here, the job has pending maps, none allowed here
            if job.wait_start < 0.0:
                job.wait_start = now
            if job.skip_start < 0.0:
                job.skip_start = now
        return None

    def _capacity_allows(self, job: Job, locations: int, outstanding: int) -> tuple[bool, bool]:
        """Whether canAssign allows the job a rack-local and an off-switch container now (each
        on its own count: off-switch may come first). The wait factor counts the ``locations``
        (hosts and racks, ANY aside) asked for and the ``outstanding`` ANY ask: under the task
        binding the hosts and racks of the job's map lists (launched maps kept until popped: an
        upper bound) and its pending maps."""
        missed = job.opportunities
        if self.rack_add > -1:
            off = missed > self.cap_rack
        else:
            factor = min(locations / self.nodes, 1.0)
            off = missed > min(self.nodes, outstanding * factor)
        return missed > self.cap_node, off

    def grant(self, node: int, now: float):
        """(job, level) of the container the ResourceManager grants on ``node`` against the
        asks it holds (yarn-mr), or None. FSAppAttempt.assignContainer's order: node-local at
        once wherever the job asks for the node and its rack; rack-local once the job's level
        has relaxed to rack; off-switch once it relaxed to off-switch, or when the job asks for
        no host or rack at all. Under ``capacity`` the same order with canAssign's counts."""
        rack = self.rack_of[node]
        mode = self.mode
        counted = mode in ("capacity", "yarn")
        for job in self._order if self._order is not None else self.order():
            asks = job.asks
            if counted:
                self._count_opportunity(job)
            elif mode == "fair-time":
                self._relax_by_time(job, now)
            rack_ask = asks.rack(rack) > 0
            if rack_ask and asks.node(node) > 0:
                return job, NODE_LOCAL
            if mode == "capacity":
                rack_ok, off_ok = self._capacity_allows(job, asks.location_asks(), asks.rm_any)
            else:
                allowed = OFF_SWITCH if mode == "none" else job.level
                rack_ok, off_ok = allowed >= RACK_LOCAL, allowed == OFF_SWITCH
            if rack_ask and rack_ok:
                return job, RACK_LOCAL
            if off_ok or not asks.asks_a_location():
                return job, OFF_SWITCH
            if job.skip_start < 0.0:  # skipped for locality (the DT accounting)
                job.skip_start = now
        return None

    def _count_opportunity(self, job: Job) -> None:
        """An offer of a node to the job: a missed opportunity for the Capacity Scheduler, a
        scheduling opportunity for the Fair Scheduler's count-based delay, which relaxes a level
        once the count exceeds nodes x its threshold and then starts counting again
        (FSAppAttempt.getAllowedLocalityLevel)."""
        job.opportunities += 1
        if self.mode == "yarn":
            if job.level == NODE_LOCAL and job.opportunities > self.thr_node:
                job.level, job.opportunities = RACK_LOCAL, 0
            elif job.level == RACK_LOCAL and job.opportunities > self.thr_rack:
                job.level, job.opportunities = OFF_SWITCH, 0

    def _relax_by_time(self, job: Job, now: float) -> None:
        """FSAppAttempt.getAllowedLocalityLevelByTime: the clock starts at the job's first
        offer and restarts at each relaxation, never at a grant; a level relaxes once the
        clock has run past its wait (W1 for node, W2 for rack)."""
        if job.wait_start < 0.0:
            job.wait_start = now
        elif job.level != OFF_SWITCH and now - job.wait_start > (
                self.w1 if job.level == NODE_LOCAL else self.w2):
            job.level += 1
            job.wait_start = now

    def on_grant(self, job: Job, level: int) -> None:
        """Delay-scheduling bookkeeping after a container was granted at ``level`` (yarn-mr):
        a grant more local than the job's level raises it back (FSAppAttempt.allocate); the
        Capacity Scheduler resets its count unless off-switch."""
        if self.mode == "capacity":
            if level != OFF_SWITCH:
                job.opportunities = 0
        elif level < job.level:
            job.level = level
        job.skip_start = -1.0

    def on_launch(self, job: Job, locality: int) -> None:
        """Delay-scheduling bookkeeping after the job launched a map of this locality."""
        if self.mode == "capacity" and locality != OFF_SWITCH:
            job.opportunities = 0  # an off-switch allocation does not reset the count
        if self.mode == "hfs":
            job.level = locality  # HFS: lastMapLocalityLevel; waiting restarts
            job.wait_start = -1.0
        elif self.mode == "yarn" and locality < job.level:
            job.level = locality  # FSAppAttempt.allocate -> resetAllowedLocalityLevel
        job.skip_start = -1.0


def _fair_key(job: Job):
    return (job.running, job.index)
