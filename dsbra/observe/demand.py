"""The live demand poll (issue 68): which blocks the running MapReduce jobs' pending maps want
now, and whether their holders can serve them within D (dsbra.signals.demand).

Light and incremental, so it can run every few seconds beside the collector's heavier poll:
one ResourceManager request for the running applications with their outstanding asks, one for
the nodes' free memory, and the ApplicationMaster's task list only of a job whose asks changed
since the last poll (a job that asks for nothing has no pending map). A pending map is a task
in state SCHEDULED (no container yet); its block is its split (job.split, read once per job by
the collector). What a poll cannot read is a logged skip of that job, never an error.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field

import numpy as np

from dsbra.errors import HadoopError
from dsbra.hadoop import shapes
from dsbra.observe.collector import Collector, job_id_of
from dsbra.observe.splits import strip_scheme
from dsbra.signals.demand import BlockDemand, PendingMaps, block_demand, host_capacity

log = logging.getLogger(__name__)

MAP_INDEX = re.compile(r"_m_(\d+)$")
#: a map container's memory when no running job's configuration says (Hadoop's default)
DEFAULT_MAP_MB = 1024


@dataclass
class JobDemand:
    """What the poller keeps of one running job between polls."""

    asks: tuple = ()  # the asks it had at the last read of its tasks
    pending: list[int] = field(default_factory=list)  # its pending maps' indexes then
    map_mb: int = DEFAULT_MAP_MB


@dataclass(frozen=True)
class DemandPoll:
    """One poll: per block, its pending maps and what its holders can serve in time; and per
    pending map (job id, index), its block's row."""

    at_ms: int
    blocks: BlockDemand
    map_rows: dict[tuple[str, int], int]
    delay_s: float
    task_s: float | None
    requests: int

    def document(self) -> dict:
        """As JSON (`dsbra observe --demand`): the blocks, most maps predicted off their data first."""
        rows = sorted(self.blocks.rows(), key=lambda r: (-r["excess"], -r["pending"], r["path"], r["start"]))
        return {"at_ms": self.at_ms, "delay_threshold_s": self.delay_s, "task_s": self.task_s,
                "requests": self.requests, "pending_maps": len(self.map_rows),
                "short_blocks": int(self.blocks.short.sum()), "blocks": rows}


def ask_signature(app: dict) -> tuple:
    """An application's outstanding asks as a comparable value (what changed since the last poll)."""
    return tuple(sorted((shapes.as_int(r.get("priority"), 0), shapes.as_str(r.get("resourceName"), ""),
                         shapes.as_int(r.get("numContainers"), 0))
                        for r in shapes.as_list(app.get("resourceRequests")) if isinstance(r, dict)))


def wants_containers(app: dict) -> bool:
    return any(name == "*" and n > 0 for _, name, n in ask_signature(app))


def pending_indexes(tasks: list[dict]) -> list[int]:
    """The maps still waiting for a container (state SCHEDULED), by index."""
    out = []
    for t in tasks:
        if not isinstance(t, dict):
            continue
        m = MAP_INDEX.search(shapes.as_str(t.get("id"), "") or "")
        if m and t.get("state") == "SCHEDULED":
            out.append(int(m.group(1)))
    return sorted(out)


class DemandPoller:
    """Polls the live demand of the jobs ``collector`` watches (it reads their splits)."""

    def __init__(self, collector: Collector, clock=time.time):
        self.collector = collector
        self.clock = clock
        self.jobs: dict[str, JobDemand] = {}
        self.task_ms: list[int] = []  # finished maps' lengths seen in task lists (the last 200)

    def poll(self) -> DemandPoll:
        ep = self.collector.ep
        requests = 2
        apps = ep.rm.apps(states="RUNNING", with_asks=True)
        nodes = ep.rm.nodes()
        live: set[str] = set()
        pending: list[tuple[str, int]] = []
        for app in apps:
            app_id = shapes.as_str(app.get("id"))
            if not app_id:
                continue
            live.add(app_id)
            job = self.jobs.setdefault(app_id, JobDemand())
            signature = ask_signature(app)
            if not wants_containers(app):
                job.asks, job.pending = signature, []
                continue
            if signature != job.asks:
                try:
                    requests += self._read_tasks(app_id, job)
                except HadoopError as exc:
                    log.info("demand: tasks of %s not read (%s); its pending maps are left out", app_id, exc)
                    continue
                job.asks = signature
            pending.extend((app_id, i) for i in job.pending)
        self.jobs = {a: j for a, j in self.jobs.items() if a in live}
        return self._judge(pending, nodes, requests)

    def _read_tasks(self, app_id: str, job: JobDemand) -> int:
        ep = self.collector.ep
        tasks = ep.am.tasks(app_id, job_id_of(app_id))
        job.pending = pending_indexes(tasks)
        self.task_ms.extend(shapes.as_int(t.get("elapsedTime"), 0) for t in tasks if t.get("state") == "SUCCEEDED")
        self.task_ms = self.task_ms[-200:]
        watch = self.collector.jobs.get(job_id_of(app_id))
        if watch is not None and watch.conf:
            job.map_mb = shapes.as_int(watch.conf.get("mapreduce.map.memory.mb"), DEFAULT_MAP_MB) or DEFAULT_MAP_MB
        return 1

    def _judge(self, pending: list[tuple[str, int]], nodes: list[dict], requests: int) -> DemandPoll:
        settings = self.collector.settings()
        delay_s = settings.delay_threshold_s
        task_s = float(np.mean(self.task_ms)) / 1000 if self.task_ms else None
        map_mb = min((j.map_mb for j in self.jobs.values() if j.pending), default=DEFAULT_MAP_MB)
        hosts: dict[str, int] = {}
        free, running = [], []
        for n in nodes:
            host = shapes.as_str(n.get("nodeHostName"))
            if not host or n.get("state") != "RUNNING":
                continue
            hosts[host] = len(hosts)
            free.append((shapes.as_int(n.get("availMemoryMB"), 0) or 0) // max(map_mb, 1))
            running.append(shapes.as_int(n.get("numContainers"), 0) or 0)
        blocks: dict[tuple[str, int], int] = {}
        map_rows: dict[tuple[str, int], int] = {}
        block_col, ptr, holder = [], [0], []
        for app_id, index in pending:
            split = self._split(app_id, index)
            if split is None:
                continue
            key = (strip_scheme(split.path), split.start)
            row = blocks.setdefault(key, len(blocks))
            map_rows[(job_id_of(app_id), index)] = row
            block_col.append(row)
            for h in split.hosts:
                holder.append(hosts.setdefault(h, len(hosts)))
            ptr.append(len(holder))
        extra = len(hosts) - len(free)  # split hosts the RM does not run: nothing free there
        capacity = host_capacity(np.array(free + [0] * extra), np.array(running + [0] * extra), delay_s, task_s)
        maps = PendingMaps(np.array(block_col, np.int64), np.array(ptr, np.int64), np.array(holder, np.int64),
                           list(blocks), list(hosts))
        return DemandPoll(int(self.clock() * 1000), block_demand(maps, capacity), map_rows, delay_s, task_s,
                          requests)

    def _split(self, app_id: str, index: int):
        """The map's split (job.split, which the collector read), or None before it has."""
        watch = self.collector.jobs.get(job_id_of(app_id))
        splits = watch.splits if watch is not None else None
        return splits[index] if splits and 0 <= index < len(splits) else None  # split i is map i's
