"""MapReduce on YARN: how a job's pending maps become asks, asks become containers, and
containers become maps (Hadoop 3.x; docs/simulator.md, "Binding", names the classes).

Two tables of one job's map asks (one priority, one container size):

- the ApplicationMaster's (RMContainerRequestor.addContainerReq / decContainerReq): every pending
  map counts one on each host of its split, on each of those hosts' racks and on ANY, and a map
  bound to a container takes its own counts back. Only the names whose count changed since the
  last heartbeat are sent, with their absolute counts (makeRemoteRequest), and they are sent
  before the containers that heartbeat returns are bound (RMContainerAllocator.heartbeat: send,
  receive, then assign);
- the ResourceManager's (AppSchedulingInfo, LocalityAppPlacementAllocator): the counts as last
  sent, less one on the granted node, its rack and ANY for a node-local grant, on the rack and
  ANY for a rack-local one, on ANY for an off-switch one. A map's other hosts keep their count
  until the AM sends them again.

The AM binds the containers of one heartbeat as RMContainerAllocator.assignMapsWithLocality does:
each container to the first-added pending map whose split holds its host, those left to one with
a split host on its rack, those left to the earliest pending map; a container left over (no map
pending) is released, never one for being off its map's data.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsbra.sim.scheduler import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL


@dataclass(frozen=True, slots=True)
class Container:
    """A container the ResourceManager granted a job: its node, the level it was granted at
    (what FSAppAttempt logs as its type) and the delay-scheduling wait behind it (-1: none)."""

    node: int
    level: int
    delay_s: float


class Asks:
    """One job's map asks, as the AM keeps them and as the ResourceManager last heard them.

    Maps local on every node (the oracle's) are counted once in ``*_every`` instead of on each
    host and rack; a name's count is then ``*_every`` plus its own entry."""

    __slots__ = ("rack_of", "nodes", "racks", "am_host", "am_rack", "am_any", "am_every",
                 "rm_host", "rm_rack", "rm_any", "rm_every", "dirty_hosts", "dirty_racks",
                 "dirty_any", "dirty_every")

    def __init__(self, rack_of: list[int]):
        self.rack_of = rack_of
        self.nodes, self.racks = len(rack_of), max(rack_of) + 1
        self.am_host: dict[int, int] = {}
        self.am_rack: dict[int, int] = {}
        self.am_any = self.am_every = 0
        self.rm_host: dict[int, int] = {}
        self.rm_rack: dict[int, int] = {}
        self.rm_any = self.rm_every = 0
        self.dirty_hosts: set[int] = set()
        self.dirty_racks: set[int] = set()
        self.dirty_any = self.dirty_every = False

    # --- the ApplicationMaster's table ---------------------------------------------------
    def add_map(self, hosts) -> None:
        """A pending map whose split is on ``hosts`` (addContainerReq)."""
        self._count(hosts, 1)

    def remove_map(self, hosts) -> None:
        """A map bound to a container takes its asks back (decContainerReq)."""
        self._count(hosts, -1)

    def add_everywhere(self, maps: int) -> None:
        """``maps`` pending maps local on every node."""
        self.am_every += maps
        self.am_any += maps
        self.dirty_every = self.dirty_any = True

    def remove_everywhere(self) -> None:
        self.am_every -= 1
        self.am_any -= 1
        self.dirty_every = self.dirty_any = True

    def _count(self, hosts, step: int) -> None:
        am_host, am_rack, rack_of = self.am_host, self.am_rack, self.rack_of
        racks = set()
        for h in hosts:
            am_host[h] = am_host.get(h, 0) + step
            racks.add(rack_of[h])
        for r in racks:
            am_rack[r] = am_rack.get(r, 0) + step
        self.am_any += step
        self.dirty_hosts.update(hosts)
        self.dirty_racks.update(racks)
        self.dirty_any = True

    @property
    def dirty(self) -> bool:
        """Something to send at the next AM heartbeat."""
        return self.dirty_any

    def send(self) -> None:
        """The AM heartbeat's ask: the ResourceManager takes the AM's count of every name that
        changed since the last one (all of them when maps local everywhere changed); a name
        that did not change keeps whatever the grants since left of its count."""
        if not self.dirty_any:
            return
        if self.dirty_every:
            self.rm_every = self.am_every
            self.rm_host = dict(self.am_host)
            self.rm_rack = dict(self.am_rack)
        else:
            for h in self.dirty_hosts:
                self.rm_host[h] = self.am_host[h]
            for r in self.dirty_racks:
                self.rm_rack[r] = self.am_rack[r]
        self.rm_any = self.am_any
        self.dirty_hosts.clear()
        self.dirty_racks.clear()
        self.dirty_any = self.dirty_every = False

    # --- the ResourceManager's table -----------------------------------------------------
    def node(self, node: int) -> int:
        return self.rm_every + self.rm_host.get(node, 0)

    def rack(self, rack: int) -> int:
        return self.rm_every + self.rm_rack.get(rack, 0)

    def granted(self, node: int, level: int) -> None:
        """A container granted on ``node`` at ``level``: the ResourceManager's counts of that
        node (node-local only), its rack (not off-switch) and ANY drop by one."""
        if level == NODE_LOCAL:
            self.rm_host[node] = self.rm_host.get(node, 0) - 1
        if level != OFF_SWITCH:
            r = self.rack_of[node]
            self.rm_rack[r] = self.rm_rack.get(r, 0) - 1
        self.rm_any -= 1

    def asks_a_location(self) -> bool:
        """Whether the ResourceManager holds a nonzero ask for some host or rack; without one
        only ANY is asked, and neither scheduler delays the job (getUniqueLocationAsks <= 1)."""
        every = self.rm_every
        if every > 0 and (len(self.rm_rack) < self.racks or len(self.rm_host) < self.nodes):
            return True
        return (any(every + v > 0 for v in self.rm_rack.values())
                or any(every + v > 0 for v in self.rm_host.values()))

    def location_asks(self) -> int:
        """Hosts and racks the ResourceManager holds a nonzero ask for (getUniqueLocationAsks
        less ANY): the Capacity Scheduler's locality wait factor."""
        every = self.rm_every
        hosts = sum(every + v > 0 for v in self.rm_host.values())
        racks = sum(every + v > 0 for v in self.rm_rack.values())
        if every > 0:  # names without an entry hold the maps local everywhere
            hosts += self.nodes - len(self.rm_host)
            racks += self.racks - len(self.rm_rack)
        return hosts + racks


def am_heartbeat(job, launched: bytearray, rack_of: list[int]
                 ) -> tuple[list[tuple[Container, int, int]], list[Container]]:
    """One AM heartbeat (RMContainerAllocator.heartbeat): the asks as they stand go to the
    ResourceManager, then the containers granted since the last heartbeat come back and are
    bound, each bound map taking its asks back for the next heartbeat to send. Returns
    ([(container, map, locality)], containers to release at the next heartbeat)."""
    asks = job.asks
    asks.send()
    received, job.granted = job.granted, []
    bound, left = assign_maps(job, received, launched, rack_of)
    first = job.tasks[0]
    for _, task, _ in bound:
        hosts = job.split[task - first]
        if hosts is None:
            asks.remove_everywhere()
        else:
            asks.remove_map(hosts)
    return bound, left


def assign_maps(job, containers: list[Container], launched: bytearray, rack_of: list[int]
                ) -> tuple[list[tuple[Container, int, int]], list[Container]]:
    """One heartbeat's containers bound to the job's pending maps (assignMapsWithLocality):
    ([(container, map, locality)], containers left to release). ``job`` holds the AM's lists
    (:class:`dsbra.sim.scheduler.Job`: per host and per rack, each popping its first-added map
    from the end, and all maps in order) and its count of pending maps; bound maps are flagged
    in ``launched``."""
    pending = job.pending
    bound: list[tuple[Container, int, int]] = []
    for level in (NODE_LOCAL, RACK_LOCAL):
        left = []
        for c in containers:
            task = -1
            if pending:
                lst = (job.by_host.get(c.node) if level == NODE_LOCAL
                       else job.by_rack.get(rack_of[c.node]))
                task = _first_pending(lst, launched)
            if task < 0:
                left.append(c)
                continue
            launched[task] = 1
            bound.append((c, task, level))
            pending -= 1
        containers = left
    tasks, pos = job.tasks, job.any_pos
    left = []
    for c in containers:
        if not pending:
            left.append(c)
            continue
        while launched[tasks[pos]]:
            pos += 1
        launched[tasks[pos]] = 1
        bound.append((c, tasks[pos], OFF_SWITCH))
        pending -= 1
    job.any_pos, job.pending = pos, pending
    return bound, left


def _first_pending(lst: list[int] | None, launched: bytearray) -> int:
    """Pop the first-added map of a host's or rack's list that is still pending (bound maps are
    dropped lazily); -1 if none."""
    while lst:
        task = lst.pop()
        if not launched[task]:
            return task
    return -1
