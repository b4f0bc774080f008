"""The live demand poll (issue 68): which blocks the running MapReduce jobs' pending maps want
now, as the live-demand rule takes it (dsbra.policy.api.LiveDemand), and what the rule judges
of it (dsbra.policy.demand.judge: can the block's holders serve its due maps within D?).

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
from dsbra.policy.api import LiveDemand
from dsbra.policy.demand import DemandPolicy, judge

log = logging.getLogger(__name__)

MAP_INDEX = re.compile(r"_m_(\d+)$")
#: a map container's memory when no running job's configuration says (Hadoop's default)
DEFAULT_MAP_MB = 1024
MIN_SHORTFALL = DemandPolicy.min_shortfall


@dataclass
class JobDemand:
    """What the poller keeps of one running job between polls."""

    asks: tuple = ()  # the asks it had at the last read of its tasks
    pending: list[int] = field(default_factory=list)  # its pending maps' indexes then
    map_mb: int = DEFAULT_MAP_MB


@dataclass(frozen=True)
class DemandPoll:
    """One poll, as the policy's signal (:class:`dsbra.policy.api.LiveDemand`) over the blocks
    the pending maps want: ``blocks`` (path, start of the split) with their holders as a CSR
    over ``hosts`` (the split's hosts), and per pending map (job id, index) its block's row."""

    at_ms: int
    blocks: list[tuple[str, int]]
    hosts: list[str]
    replica_indptr: np.ndarray
    replica_nodes: np.ndarray
    demand: LiveDemand
    map_rows: dict[tuple[str, int], int]
    delay_s: float
    requests: int

    def judged(self, min_shortfall: float = MIN_SHORTFALL) -> dict[str, np.ndarray]:
        """Per block, its pending maps, its shortfall within D and whether the live-demand rule
        would raise it (dsbra.policy.demand.judge)."""
        _, _, short = judge(self.demand, self.replica_indptr, self.replica_nodes, len(self.hosts), self.delay_s)
        return {"pending": self.demand.pending_maps(len(self.blocks)), "shortfall": short,
                "raise": short >= min_shortfall}

    def document(self, min_shortfall: float = MIN_SHORTFALL) -> dict:
        """As JSON (`dsbra observe --demand`): the blocks, largest shortfall first."""
        j = self.judged(min_shortfall)
        rows = [{"path": path, "start": start, "pending": int(j["pending"][i]),
                 "shortfall": round(float(j["shortfall"][i]), 2), "short": bool(j["raise"][i]),
                 "holders": [self.hosts[h] for h in self.replica_nodes[self.replica_indptr[i]:self.replica_indptr[i + 1]]]}
                for i, (path, start) in enumerate(self.blocks)]
        rows.sort(key=lambda r: (-r["shortfall"], -r["pending"], r["path"], r["start"]))
        return {"at_ms": self.at_ms, "delay_threshold_s": self.delay_s, "mean_map_s": self.demand.mean_map_s,
                "requests": self.requests, "pending_maps": len(self.map_rows),
                "short_blocks": int(j["raise"].sum()), "blocks": rows}


def ask_signature(app: dict) -> tuple:
    """An application's outstanding asks as a comparable value (what changed since the last poll)."""
    return tuple(sorted((shapes.as_int(r.get("priority"), 0), shapes.as_str(r.get("resourceName"), ""),
                         shapes.as_int(r.get("numContainers"), 0))
                        for r in shapes.as_list(app.get("resourceRequests")) if isinstance(r, dict)))


def wants_containers(signature: tuple) -> bool:
    """Whether an application with these asks (:func:`ask_signature`) still wants containers."""
    return any(name == "*" and n > 0 for _, name, n in signature)


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
        before = ep.stats.requests
        apps = ep.rm.apps(states="RUNNING", with_asks=True)
        nodes = ep.rm.nodes()
        live: set[str] = set()
        running_in: dict[str, int] = {}
        pending: list[tuple[str, int]] = []
        for app in apps:
            app_id = shapes.as_str(app.get("id"))
            if not app_id:
                continue
            live.add(app_id)
            running_in[app_id] = shapes.as_int(app.get("runningContainers"), 0) or 0
            job = self.jobs.setdefault(app_id, JobDemand())
            signature = ask_signature(app)
            if not wants_containers(signature):
                job.asks, job.pending = signature, []
                continue
            if signature != job.asks:
                try:
                    self._read_tasks(app_id, job)
                except HadoopError as exc:
                    log.info("demand: tasks of %s not read (%s); its pending maps are left out", app_id, exc)
                    continue
                job.asks = signature
            pending.extend((app_id, i) for i in job.pending)
        self.jobs = {a: j for a, j in self.jobs.items() if a in live}
        return self._judge(pending, running_in, nodes, ep.stats.requests - before)

    def _read_tasks(self, app_id: str, job: JobDemand) -> None:
        ep = self.collector.ep
        tasks = ep.am.tasks(app_id, job_id_of(app_id))
        job.pending = pending_indexes(tasks)
        self.task_ms.extend(shapes.as_int(t.get("elapsedTime"), 0) for t in tasks if t.get("state") == "SUCCEEDED")
        self.task_ms = self.task_ms[-200:]
        watch = self.collector.jobs.get(job_id_of(app_id))
        if watch is not None and watch.conf:
            job.map_mb = shapes.as_int(watch.conf.get("mapreduce.map.memory.mb"), DEFAULT_MAP_MB) or DEFAULT_MAP_MB

    def _judge(self, pending: list[tuple[str, int]], running_in: dict[str, int], nodes: list[dict],
               requests: int) -> DemandPoll:
        """The poll as the policy's LiveDemand: the running jobs in submission order (application
        ids count up), their pending maps by block, and per host its free containers for a map
        and its running containers (which free as they end)."""
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
        holders: list[list[int]] = []
        map_rows: dict[tuple[str, int], int] = {}
        per_job: dict[str, list[int]] = {}
        for app_id, index in pending:
            split = self._split(app_id, index)
            if split is None:
                continue
            key = (strip_scheme(split.path), split.start)
            if key not in blocks:
                blocks[key] = len(blocks)
                holders.append([hosts.setdefault(h, len(hosts)) for h in split.hosts])
            map_rows[(job_id_of(app_id), index)] = blocks[key]
            per_job.setdefault(app_id, []).append(blocks[key])
        unlisted = len(hosts) - len(free)  # split hosts the RM does not run: nothing free there
        order = sorted(per_job)
        demand = LiveDemand(
            job_indptr=np.concatenate(([0], np.cumsum([len(per_job[a]) for a in order]))).astype(np.int64),
            job_blocks=np.array([b for a in order for b in per_job[a]], np.int64),
            job_running=np.array([running_in.get(a, 0) for a in order], np.int64),
            free_containers=np.array(free + [0] * unlisted), running_maps=np.array(running + [0] * unlisted),
            mean_map_s=float(np.mean(self.task_ms)) / 1000 if self.task_ms else None)
        return DemandPoll(int(self.clock() * 1000), list(blocks), list(hosts),
                          np.concatenate(([0], np.cumsum([len(h) for h in holders]))).astype(np.int64),
                          np.array([h for hs in holders for h in hs], np.int64), demand, map_rows,
                          self.collector.settings().delay_threshold_s, requests)

    def _split(self, app_id: str, index: int):
        """The map's split (job.split, which the collector read), or None before it has."""
        watch = self.collector.jobs.get(job_id_of(app_id))
        splits = watch.splits if watch is not None else None
        return splits[index] if splits and 0 <= index < len(splits) else None  # split i is map i's
