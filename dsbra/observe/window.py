"""Turn one window of map observations into the input of ``dsbra plan``.

I/O here is limited to what the window needs: the current block locations and replication of
the files its tasks read (one ``GET_BLOCK_LOCATIONS`` and one ``GETFILESTATUS`` per distinct
file), the NodeManagers' capacity and the NameNode's live DataNodes. The counting itself is
:mod:`dsbra.signals` (pure, numpy).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from dsbra.errors import HadoopError
from dsbra.hadoop import shapes
from dsbra.observe.collector import Collector, Container, MapObservation
from dsbra.signals import (AttributionParams, Containers, MapTasks, Samples, attribute,
                           block_metrics)

log = logging.getLogger(__name__)

#: container start-up between the AM getting a container and the task's recorded launch
LAUNCH_ALLOWANCE_S = 1.0


@dataclass
class FileBlocks:
    replication: int
    starts: np.ndarray  # int64 block start offsets, ascending
    ends: np.ndarray
    block_ids: list[str]
    hosts: list[list[str]]

    def find(self, offset: int) -> int:
        i = int(np.searchsorted(self.starts, offset, side="right")) - 1
        return i if 0 <= i < len(self.starts) and offset < self.ends[i] else -1


def file_blocks(located: dict, replication: int) -> FileBlocks:
    starts, ends, ids, hosts = [], [], [], []
    for lb in shapes.as_list(located.get("locatedBlocks")):
        if not isinstance(lb, dict) or not isinstance(lb.get("block"), dict):
            continue
        block_id = shapes.as_int(lb["block"].get("blockId"))
        start = shapes.as_int(lb.get("startOffset"))
        size = shapes.as_int(lb["block"].get("numBytes"))
        if block_id is None or start is None or size is None:
            log.warning("a located block without id/offset/size skipped: %r", str(lb)[:120])
            continue
        starts.append(start)
        ends.append(start + max(size, 1))
        ids.append(f"blk_{block_id}")
        hosts.append(sorted({h for loc in shapes.as_list(lb.get("locations"))
                             if isinstance(loc, dict)
                             for h in [shapes.as_str(loc.get("hostName"))] if h}))
    order = np.argsort(starts, kind="stable")
    return FileBlocks(replication, np.asarray(starts, np.int64)[order],
                      np.asarray(ends, np.int64)[order], [ids[i] for i in order],
                      [hosts[i] for i in order])


def _node_capacity(node: dict) -> int:
    total = node.get("totalResource")
    if isinstance(total, dict):
        mem = shapes.as_int(total.get("memory"), None) or shapes.as_int(total.get("memorySize"))
        if mem:
            return mem
    return (shapes.as_int(node.get("availMemoryMB"), 0) or 0) + \
        (shapes.as_int(node.get("usedMemoryMB"), 0) or 0)


def compute_blocks(obs: list[MapObservation], containers: dict[str, list[Container]],
                   rm_nodes: list[dict], block_of: list[int], n_blocks: int,
                   params: AttributionParams, now_ms: int,
                   samples: list[tuple[int, dict[str, int]]] = (),
                   skips: dict[str, list[tuple[int, str]]] | None = None):
    """Pure: per-task attribution and per-block counters. Returns (per-task dict, BlockMetrics).
    ``containers``: each job's containers (AM, maps, reduces), keyed by job id; ``skips``: the
    (ms, host) each job's application declined for locality, as the scheduler reported them."""
    names: dict[str, int] = {}
    jobs = {j: i for i, j in enumerate(sorted(set(containers) | {o.job_id for o in obs}))}
    flat = [(jobs[j], c) for j, cs in containers.items() for c in cs]

    def nid(host: str) -> int:
        return names.setdefault(host, len(names))

    cap: dict[int, int] = {}
    up: dict[int, bool] = {}
    for n in rm_nodes:
        host = shapes.as_str(n.get("nodeHostName"))
        if not host:
            continue
        i = nid(host)
        cap[i] = _node_capacity(n)
        up[i] = n.get("state") == "RUNNING"
    indptr = np.zeros(len(obs) + 1, np.int64)
    split_nodes: list[int] = []
    for j, o in enumerate(obs):
        split_nodes.extend(nid(h) for h in o.split_hosts)
        indptr[j + 1] = len(split_nodes)
    tasks = MapTasks(
        scheduled_ms=np.array([o.scheduled_ms for o in obs], np.int64),
        launch_ms=np.array([o.launch_ms for o in obs], np.int64),
        node=np.array([nid(o.node) for o in obs], np.int32),
        mem_mb=np.array([o.mem_mb for o in obs], np.int64),
        split_indptr=indptr, split_nodes=np.array(split_nodes, np.int32),
        app=np.array([jobs[o.job_id] for o in obs], np.int32))
    cont = Containers(
        node=np.array([nid(c.node) for _, c in flat], np.int32),
        start_ms=np.array([c.start_ms for _, c in flat], np.int64),
        end_ms=np.array([c.end_ms if c.end_ms is not None else now_ms for _, c in flat],
                        np.int64),
        mem_mb=np.array([c.mem_mb for _, c in flat], np.int64),
        app=np.array([a for a, _ in flat], np.int32))
    n_nodes = len(names)
    capacity = np.array([cap.get(i, 0) for i in range(n_nodes)], np.int64)
    node_up = np.array([up.get(i, False) for i in range(n_nodes)], bool)
    sampled_view = None
    if len(samples) >= 2:
        free = np.full((len(samples), n_nodes), -1, np.int64)
        for k, (_, per_host) in enumerate(samples):
            for host, avail in per_host.items():
                if host in names:
                    free[k, names[host]] = avail
        sampled_view = Samples(np.array([t for t, _ in samples], np.int64), free)
    reported = np.array([(jobs[j], names[h], ms) for j, rows in (skips or {}).items()
                         if j in jobs for ms, h in rows if h in names], np.int64).reshape(-1, 3)
    delay_s, delayed, local, wait_s, sampled = attribute(tasks, cont, capacity, params, node_up,
                                                         now_ms, sampled_view, reported)
    end = np.array([o.finish_ms if o.finish_ms is not None else now_ms for o in obs], np.int64)
    metrics = block_metrics(np.asarray(block_of, np.int64), delay_s, delayed, local,
                            tasks.launch_ms, end, n_blocks)
    return {"delay_s": delay_s, "delayed": delayed, "local": local, "wait_s": wait_s,
            "sampled": sampled}, metrics


def read_files(ep, paths) -> dict[str, dict | None]:
    """Per distinct file: its GET_BLOCK_LOCATIONS reply and replication (GETFILESTATUS), or
    None when it cannot be read. A file that is gone is the normal end of a job's temporary
    input (grep's sort job reads ``grep-temp-*``, deleted when the job ends): logged at debug;
    any other failure is a warning."""
    out: dict[str, dict | None] = {}
    for path in sorted(set(paths)):
        try:
            status = ep.hdfs.file_status(path)
            out[path] = {"located": ep.hdfs.block_locations(path),
                         "replication": shapes.as_int(status.get("replication"), 0) or 0}
        except HadoopError as exc:
            if exc.exception == "FileNotFoundException":
                log.debug("file %s is gone; its tasks are not mapped to blocks", path)
            else:
                log.warning("file %s: %s; its tasks are not mapped to blocks", path, exc)
            out[path] = None
    return out


@dataclass
class BlockRows:
    block_of: list[int]  #: per task, its block's row (-1: not mapped)
    rows: list[tuple[str, list[str], int, str]]  #: (block id, hosts, replication, path)
    unmapped: int  #: tasks not mapped, for any reason (``input_gone`` among them)
    input_gone: int = 0  #: tasks whose input file could not be read (deleted, mostly)


def map_to_blocks(obs: list[MapObservation], files: dict[str, dict | None]) -> BlockRows:
    """Each task to the block its split starts in, with :func:`read_files`' replies; rows in
    order of first reader."""
    blocks = {p: file_blocks(v["located"], int(v["replication"] or 0))
              for p, v in files.items() if v is not None}
    rows: dict[str, int] = {}
    out = BlockRows([], [], 0)
    for o in obs:
        fb = blocks.get(o.path) if o.path else None
        i = fb.find(o.start or 0) if fb is not None else -1
        if i < 0:
            out.unmapped += 1
            out.input_gone += o.path in files and files[o.path] is None
            out.block_of.append(-1)
            continue
        bid = fb.block_ids[i]
        if bid not in rows:
            rows[bid] = len(out.rows)
            out.rows.append((bid, fb.hosts[i], fb.replication or len(fb.hosts[i]), o.path))
        out.block_of.append(rows[bid])
    if out.input_gone:
        log.debug("%d of %d map tasks read a file that is gone", out.input_gone, len(obs))
    if out.unmapped > out.input_gone:
        log.warning("%d of %d map tasks could not be mapped to a block (no split offset, or "
                    "none of their file's blocks holds it)", out.unmapped - out.input_gone,
                    len(obs))
    return out


def build_round(collector: Collector, obs: list[MapObservation], *, window_start_ms: int,
                window_end_ms: int, grace_s: float | None = None, settle_s: float | None = None,
                delay_threshold_s: float | None = None, detail: bool = False,
                jobs: bool = False, files: dict[str, dict | None] | None = None,
                health: dict | None = None) -> dict:
    """The ``dsbra plan`` input for this window, plus an ``observe`` section about the window.
    ``jobs``: also which blocks each job's maps read (``jobs``: job id -> block ids), for the
    policy's co-read options. ``files`` (:func:`read_files` of at least the window's paths) and
    ``health`` (the NameNode's, ``Jmx.namenode_health``): what the caller read this round
    already, so a round reads each file and the NameNode's health once; read here if not."""
    settings = collector.settings(refresh=True)
    ep = collector.ep
    d = delay_threshold_s
    if d is None:
        d = settings.delay_threshold_s
        if not settings.delay_scheduling:
            # no D on this cluster; use what threshold 1.0 would give, so M/DT stay measurable
            d = settings.nodes * settings.heartbeat_s
            log.warning("delay scheduling is off on this cluster; D = %.1f s is the nominal "
                        "value for threshold 1.0 (nodes x heartbeat)", d)
    if d <= 0:
        raise HadoopError("cannot derive a positive delay threshold D from the cluster; "
                          "pass --delay-threshold-s")
    round_trip = settings.heartbeat_s + collector.am_heartbeat_s + LAUNCH_ALLOWANCE_S
    grace = grace_s if grace_s is not None else round_trip
    settle = settle_s if settle_s is not None else round_trip
    if files is None:
        files = read_files(ep, [o.path for o in obs if o.path])
    blocks = map_to_blocks(obs, files)
    block_of, row_info = blocks.block_of, blocks.rows
    unmapped, input_gone = blocks.unmapped, blocks.input_gone
    rm_nodes = collector.nodes(refresh=True)
    params = AttributionParams(d, grace, settle, passed_over=not settings.reports_skips)
    per_task, m = compute_blocks(obs, collector.containers, rm_nodes, block_of, len(row_info),
                                 params, window_end_ms, collector.samples, collector.skips)
    if health is None:
        health = ep.jmx.namenode_health()
    live = health["live_datanodes"] or sorted({h for _, hosts, _, _ in row_info for h in hosts})
    blocks = []
    for r, (bid, hosts, repl, path) in enumerate(row_info):
        blocks.append({
            "block_id": bid, "nodes": [h for h in hosts if h in live] if live else hosts,
            "default_replicas": int(max(repl, 1)), "tasks": int(m.tasks[r]),
            "delayed_tasks": int(m.delayed_tasks[r]), "delay_s": round(float(m.delay_s[r]), 3),
            "y": 0.0, "n": 0,
            "nonlocal_tasks": int(m.nonlocal_tasks[r]), "peak_readers": int(m.peak_readers[r]),
            "path": path})
    if detail:
        per_task_rows = [
            {"attempt_id": o.attempt_id, "path": o.path, "start": o.start,
             "block_id": row_info[b][0] if b >= 0 else None,
             "wait_s": round(float(per_task["wait_s"][j]), 3),
             "delay_s": round(float(per_task["delay_s"][j]), 3),
             "delayed": bool(per_task["delayed"][j]), "local": bool(per_task["local"][j]),
             "replica_local": o.node in row_info[b][1] if b >= 0 else None,
             "sampled": bool(per_task["sampled"][j])}
            for j, (o, b) in enumerate(zip(obs, block_of))]
    blocks.sort(key=lambda b: (-b["delay_s"], -b["delayed_tasks"], -b["tasks"], b["block_id"]))
    doc = {
        "params": {"delay_threshold_s": round(d, 3)},
        "live_nodes": live,
        "blocks": blocks,
        "observe": {
            "window_start_ms": window_start_ms, "window_end_ms": window_end_ms,
            "delay_scheduling": settings.delay_scheduling,
            "node_locality_threshold": settings.node_threshold,
            "node_heartbeat_s": settings.heartbeat_s, "nodemanagers": settings.nodes,
            "delay_threshold_min_s": round(settings.min_delay_s, 3), "grace_s": round(grace, 3),
            "settle_s": round(settle, 3),
            "map_tasks": len(obs), "unmapped_tasks": unmapped,
            "input_gone_tasks": input_gone,
            "delayed_tasks": int(per_task["delayed"].sum()),
            "delay_s": round(float(per_task["delay_s"].sum()), 3),
            "node_local_tasks": int(per_task["local"].sum()),
            "tasks_judged_on_rm_samples": int(per_task["sampled"].sum()),
            "skipped_records": collector.skipped,
            "safe_mode": health["safe_mode"], "missing_blocks": health["missing_blocks"],
            "under_replicated_blocks": health["under_replicated_blocks"],
            "http_requests": ep.stats.requests,
        } | ({"tasks": per_task_rows} if detail else {}),
    }
    if jobs:
        read_by_job: dict[str, set] = {}
        for o, b in zip(obs, block_of):
            if b >= 0:
                read_by_job.setdefault(o.job_id, set()).add(row_info[b][0])
        doc["jobs"] = {job: sorted(ids) for job, ids in sorted(read_by_job.items())}
    return doc

