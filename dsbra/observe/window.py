"""Turn one window of map observations into the input of ``dsbra plan``.

I/O here is limited to what the window needs: the current block locations and replication of
the files its tasks read (one ``GET_BLOCK_LOCATIONS`` and one ``GETFILESTATUS`` per distinct
file), the NodeManagers' capacity and the NameNode's live DataNodes. The counting itself is
:mod:`dsbra.signals` (pure, numpy).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import numpy as np

from dsbra.errors import HadoopError
from dsbra.hadoop import shapes
from dsbra.observe import spark as spark_rule
from dsbra.observe.collector import Collector, Container, MapObservation
from dsbra.signals import AttributionParams, Containers, MapTasks, Samples, attribute, block_metrics

log = logging.getLogger(__name__)

#: the engine of MapReduce's maps (MapObservation.engine)
ENGINE_MR = "mapreduce"
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
    """Pure: MapReduce maps' attribution and per-block counters. Returns (per-task dict,
    BlockMetrics)."""
    per_task = attribute_maps(obs, containers, rm_nodes, params, now_ms, samples, skips)
    return per_task, task_block_metrics(obs, per_task, block_of, n_blocks, now_ms)


def task_block_metrics(obs: list[MapObservation], per_task: dict, block_of: list[int], n_blocks: int,
                       now_ms: int):
    """Per block row: the tasks' counters (dsbra.signals.block_metrics), whatever their engine."""
    end = np.array([o.finish_ms if o.finish_ms is not None else now_ms for o in obs], np.int64)
    return block_metrics(np.asarray(block_of, np.int64), per_task["delay_s"], per_task["delayed"],
                         per_task["local"], np.array([o.launch_ms for o in obs], np.int64), end, n_blocks)


def attribute_maps(obs: list[MapObservation], containers: dict[str, list[Container]],
                   rm_nodes: list[dict], params: AttributionParams, now_ms: int,
                   samples: list[tuple[int, dict[str, int]]] = (),
                   skips: dict[str, list[tuple[int, str]]] | None = None) -> dict[str, np.ndarray]:
    """Pure: each MapReduce map's attribution (dsbra.signals.attribution's rule).
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
    return {"delay_s": delay_s, "delayed": delayed, "local": local, "wait_s": wait_s,
            "sampled": sampled, "locality_wait_s": delay_s}


def attribute_spark(obs: list[MapObservation], holders: list[list[str] | None], spark, now_ms: int,
                    min_idle_s: float, delay_threshold_s: float | None = None) -> dict[str, np.ndarray]:
    """Each Spark task's attribution (dsbra.observe.spark's rule), application by
    application over its whole timeline of tasks and executors (``spark``: the SparkCollector).
    With ``delay_threshold_s`` (the window's D), ``delay_s`` is each wait in units of that D:
    the wait times D over its application's node-level locality wait, the D of the scheduler
    that made it wait, so DSBRA's DT/(N D) weighs a Spark task that waited out its level as a
    map that waited out the ResourceManager's delay; ``locality_wait_s`` keeps the seconds."""
    n = len(obs)
    out = {"delay_s": np.zeros(n), "delayed": np.zeros(n, bool), "local": np.zeros(n, bool),
           "wait_s": np.array([max(o.launch_ms - o.scheduled_ms, 0) / 1000.0 for o in obs]),
           "sampled": np.zeros(n, bool), "locality_wait_s": np.zeros(n)}
    by_app: dict[str, list[int]] = {}
    for j, o in enumerate(obs):
        by_app.setdefault(o.job_id, []).append(j)
    for app_id, rows in by_app.items():
        tasks, executors = spark.timeline(app_id)
        at = {spark_rule.attempt_id(t.app_id, t.task_id): k for k, t in enumerate(tasks)}
        known = [j for j in rows if obs[j].attempt_id in at]
        if not known:
            continue
        where: list[list[str] | None] = [None] * len(tasks)
        for j in known:
            where[at[obs[j].attempt_id]] = holders[j]
        wait = spark.node_wait_s(app_id)
        judged = spark_rule.attribute(tasks, where, executors, now_ms, min_idle_s, wait)
        scale = delay_threshold_s / wait if delay_threshold_s and wait else 1.0
        for j in known:
            k = at[obs[j].attempt_id]
            out["delayed"][j], out["local"][j] = judged["delayed"][k], judged["local"][k]
            out["locality_wait_s"][j] = judged["delay_s"][k]
            out["delay_s"][j] = judged["delay_s"][k] * scale
    return out


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


@dataclass
class Window:
    """One window's blocks, columnar: what a round's policy reads, as observe measured it.

    Rows are the blocks the window's maps read (most delayed first: summed wait, then delayed
    and all tasks, then id), then any the daemon adds (:meth:`with_cooling`). Replicas are a
    CSR over ``live_nodes``; each job of the window is the rows its maps read (a CSR over the
    jobs in id order). :meth:`document` is the edge form, `dsbra observe`'s JSON and `dsbra
    plan`'s input; the daemon hands the columns to the policy as they are."""

    block_ids: np.ndarray  #: "blk_<n>", HDFS's names
    paths: np.ndarray  #: each block's file
    replication: np.ndarray  #: its file's replication (>= 1)
    replica_indptr: np.ndarray
    replica_nodes: np.ndarray  #: indices into ``live_nodes``
    tasks: np.ndarray
    delayed_tasks: np.ndarray
    delay_s: np.ndarray  #: summed delay-scheduling wait, to the millisecond as reported
    nonlocal_tasks: np.ndarray
    peak_readers: np.ndarray
    block_bytes: np.ndarray  #: a block's length where known (the daemon's rows), else -1
    live_nodes: list[str]
    delay_threshold_s: float  #: D, to the millisecond as reported
    observe: dict  #: about the window: its span, the scheduler's settings, counts, health
    job_ids: list[str] | None = None
    job_indptr: np.ndarray | None = None
    job_rows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.block_ids)

    def with_cooling(self, located: dict[str, FileBlocks | None],
                     raised: dict[str, int]) -> Window:
        """This window plus a zero-task row for each block of a ``raised`` file the window did
        not read (``located``: path -> its blocks, :func:`file_blocks`), so a file that cools is
        seen cooling and lowered back: a block absent from the round is invisible to the policy."""
        seen = set(self.block_ids.tolist())
        live = {h: j for j, h in enumerate(self.live_nodes)}
        ids, paths, repl, nodes, lengths, sizes = [], [], [], [], [], []
        for path, fb in located.items():
            if path not in raised or fb is None:
                continue
            for bid, hosts, start, end in zip(fb.block_ids, fb.hosts, fb.starts, fb.ends):
                if bid in seen:
                    continue
                held = [live[h] for h in hosts if h in live]
                ids.append(bid)
                paths.append(path)
                repl.append(int(fb.replication))
                nodes.extend(held)
                lengths.append(len(held))
                sizes.append(int(end - start))
                seen.add(bid)
        if not ids:
            return self
        zeros = np.zeros(len(ids), np.int64)
        cat = np.concatenate
        return dataclasses.replace(
            self, block_ids=cat((self.block_ids, np.array(ids, object))),
            paths=cat((self.paths, np.array(paths, object))),
            replication=cat((self.replication, repl)),
            replica_indptr=cat((self.replica_indptr,
                                self.replica_indptr[-1] + np.cumsum(lengths))),
            replica_nodes=cat((self.replica_nodes, np.array(nodes, self.replica_nodes.dtype))),
            tasks=cat((self.tasks, zeros)), delayed_tasks=cat((self.delayed_tasks, zeros)),
            delay_s=cat((self.delay_s, np.zeros(len(ids)))),
            nonlocal_tasks=cat((self.nonlocal_tasks, zeros)),
            peak_readers=cat((self.peak_readers, zeros)),
            block_bytes=cat((self.block_bytes, sizes)))

    def document(self) -> dict:
        """The window as `dsbra observe --json` writes it and `dsbra plan` reads it."""
        blocks = []
        for r in range(len(self)):
            held = self.replica_nodes[self.replica_indptr[r]:self.replica_indptr[r + 1]]
            block = {"block_id": str(self.block_ids[r]),
                     "nodes": [self.live_nodes[j] for j in held.tolist()],
                     "default_replicas": int(self.replication[r]), "tasks": int(self.tasks[r]),
                     "delayed_tasks": int(self.delayed_tasks[r]),
                     "delay_s": float(self.delay_s[r]), "y": 0.0, "n": 0,
                     "nonlocal_tasks": int(self.nonlocal_tasks[r]),
                     "peak_readers": int(self.peak_readers[r]), "path": str(self.paths[r])}
            if self.block_bytes[r] >= 0:
                block["bytes"] = int(self.block_bytes[r])
            blocks.append(block)
        doc = {"params": {"delay_threshold_s": self.delay_threshold_s},
               "live_nodes": list(self.live_nodes), "blocks": blocks, "observe": self.observe}
        if self.job_ids is not None:
            doc["jobs"] = {job: [str(self.block_ids[r]) for r in
                                 self.job_rows[self.job_indptr[k]:self.job_indptr[k + 1]]]
                           for k, job in enumerate(self.job_ids)}
        return doc

    @classmethod
    def from_document(cls, doc: dict) -> Window:
        """The inverse of :meth:`document`, for a window a document holds (``dsbra observe
        --json``'s output, or a test's hand-written round); no checks beyond its shape."""
        live = list(doc["live_nodes"])
        node = {h: j for j, h in enumerate(live)}
        blocks = doc["blocks"]
        col = lambda key, dtype, default=0: np.array(  # noqa: E731
            [b.get(key, default) for b in blocks], dtype)
        replica_indptr, replica_nodes = _csr([[node[h] for h in b["nodes"]] for b in blocks],
                                             np.int32)
        ids = np.array([str(b["block_id"]) for b in blocks], object)
        window = cls(
            block_ids=ids, paths=np.array([str(b.get("path", b["block_id"])) for b in blocks],
                                          object),
            replication=col("default_replicas", np.int64),
            replica_indptr=replica_indptr, replica_nodes=replica_nodes,
            tasks=col("tasks", np.int64), delayed_tasks=col("delayed_tasks", np.int64),
            delay_s=col("delay_s", np.float64), nonlocal_tasks=col("nonlocal_tasks", np.int64),
            peak_readers=col("peak_readers", np.int64), block_bytes=col("bytes", np.int64, -1),
            live_nodes=live, delay_threshold_s=float(doc["params"]["delay_threshold_s"]),
            observe=doc.get("observe", {}))
        if doc.get("jobs") is not None:
            row = {bid: r for r, bid in enumerate(ids.tolist())}
            window = window.with_jobs({job: [row[str(b)] for b in read]
                                       for job, read in doc["jobs"].items()})
        return window

    def with_jobs(self, rows_by_job: dict[str, list[int]]) -> Window:
        """The window's jobs (job id -> the rows its maps read), as a CSR in job id order."""
        job_ids = sorted(rows_by_job)
        job_indptr, job_rows = _csr([list(dict.fromkeys(rows_by_job[j])) for j in job_ids],
                                    np.int64)
        return dataclasses.replace(self, job_ids=job_ids, job_indptr=job_indptr,
                                   job_rows=job_rows)


def _csr(lists: list[list[int]], dtype) -> tuple[np.ndarray, np.ndarray]:
    """Lists as a CSR: (indptr, their values in order)."""
    indptr = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(x) for x in lists], out=indptr[1:])
    return indptr, np.array([v for x in lists for v in x], dtype)


def attribution_params(collector: Collector, settings, delay_threshold_s: float | None = None,
                       grace_s: float | None = None, settle_s: float | None = None) -> AttributionParams:
    """The attribution's D, grace and settle for this cluster (``settings``:
    ``collector.settings()``), each from the scheduler's configuration unless given."""
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
    return AttributionParams(d, grace_s if grace_s is not None else round_trip,
                             settle_s if settle_s is not None else round_trip,
                             passed_over=not settings.reports_skips)


def build_window(collector: Collector, obs: list[MapObservation], *, window_start_ms: int,
                 window_end_ms: int, grace_s: float | None = None, settle_s: float | None = None,
                 delay_threshold_s: float | None = None, detail: bool = False,
                 jobs: bool = False, files: dict[str, dict | None] | None = None,
                 health: dict | None = None, spark=None,
                 spark_min_idle_s: float = spark_rule.MIN_IDLE_S) -> Window:
    """This window's blocks and what observe knows about the window. ``detail``: each map's
    attribution in ``observe["tasks"]`` (the daemon's map records); ``jobs``: which blocks
    each job's maps read, for the policy's co-read options. ``files`` (:func:`read_files` of
    at least the window's paths) and ``health`` (the NameNode's, ``Jmx.namenode_health``):
    what the caller read this round already, so a round reads each file and the NameNode's
    health once; read here if not given. ``spark``: the SparkCollector whose tasks are among
    ``obs`` (engine "spark"), judged by its rule over their applications' timelines."""
    settings = collector.settings(refresh=True)
    ep = collector.ep
    params = attribution_params(collector, settings, delay_threshold_s, grace_s, settle_s)
    d, grace, settle = params.delay_threshold_s, params.grace_s, params.settle_s
    if files is None:
        files = read_files(ep, [o.path for o in obs if o.path])
    blocks = map_to_blocks(obs, files)
    block_of, row_info = blocks.block_of, blocks.rows
    rm_nodes = collector.nodes(refresh=True)
    per_task = _attribute(obs, block_of, row_info, collector, spark, rm_nodes, params,
                          window_end_ms, spark_min_idle_s, d)
    m = task_block_metrics(obs, per_task, block_of, len(row_info), window_end_ms)
    if health is None:
        health = ep.jmx.namenode_health()
    live = health["live_datanodes"] or sorted({h for _, hosts, _, _ in row_info for h in hosts})
    node = {h: j for j, h in enumerate(live)}
    # to the millisecond as `dsbra observe` reports it (Python's rounding: the same floats)
    delay_s = np.array([round(float(v), 3) for v in m.delay_s], np.float64)
    delayed = np.asarray(m.delayed_tasks, np.int64)
    tasks = np.asarray(m.tasks, np.int64)
    names = [bid for bid, _, _, _ in row_info]
    # most delayed first, as `dsbra observe` lists them (and the policy's ties break)
    order = sorted(range(len(row_info)),
                   key=lambda r: (-delay_s[r], -delayed[r], -tasks[r], names[r]))
    replica_indptr, replica_nodes = _csr(
        [[node[h] for h in row_info[r][1] if h in node] for r in order], np.int32)
    window = Window(
        block_ids=np.array([names[r] for r in order], object),
        paths=np.array([row_info[r][3] for r in order], object),
        replication=np.array([max(row_info[r][2], 1) for r in order], np.int64),
        replica_indptr=replica_indptr, replica_nodes=replica_nodes, tasks=tasks[order], delayed_tasks=delayed[order], delay_s=delay_s[order],
        nonlocal_tasks=np.asarray(m.nonlocal_tasks, np.int64)[order],
        peak_readers=np.asarray(m.peak_readers, np.int64)[order],
        block_bytes=np.full(len(order), -1, np.int64), live_nodes=live,
        delay_threshold_s=round(d, 3),
        observe=_about(settings, collector, health, obs, blocks, per_task, window_start_ms,
                       window_end_ms, grace, settle))
    if detail:
        window.observe["tasks"] = [
            {"attempt_id": o.attempt_id, "path": o.path, "start": o.start,
             "block_id": row_info[b][0] if b >= 0 else None,
             "wait_s": round(float(per_task["wait_s"][j]), 3),
             "delay_s": round(float(per_task["delay_s"][j]), 3),
             "delayed": bool(per_task["delayed"][j]), "local": bool(per_task["local"][j]),
             "replica_local": o.node in row_info[b][1] if b >= 0 else None,
             "sampled": bool(per_task["sampled"][j])}
            for j, (o, b) in enumerate(zip(obs, block_of))]
    if jobs:
        row_of = {r: k for k, r in enumerate(order)}
        by_job: dict[str, list[int]] = {}
        for o, b in zip(obs, block_of):
            if b >= 0:
                by_job.setdefault(o.job_id, []).append(b)
        window = window.with_jobs({job: [row_of[b] for b in sorted(set(rows),
                                                                   key=lambda b: names[b])]
                                   for job, rows in by_job.items()})
    return window


def _attribute(obs, block_of, row_info, collector: Collector, spark, rm_nodes, params,
               now_ms: int, spark_min_idle_s: float, delay_threshold_s: float) -> dict[str, np.ndarray]:
    """Each task's attribution by its engine's rule, in ``obs``' order."""
    spark_rows = [j for j, o in enumerate(obs) if o.engine == spark_rule.ENGINE]
    if not spark_rows:
        return attribute_maps(obs, collector.containers, rm_nodes, params, now_ms,
                              collector.samples, collector.skips)
    if spark is None:
        raise ValueError("Spark tasks in the window without the SparkCollector that read them")
    rows = {ENGINE_MR: [j for j, o in enumerate(obs) if o.engine != spark_rule.ENGINE],
            spark_rule.ENGINE: spark_rows}
    parts = {
        ENGINE_MR: attribute_maps([obs[j] for j in rows[ENGINE_MR]], collector.containers, rm_nodes,
                                  params, now_ms, collector.samples, collector.skips),
        spark_rule.ENGINE: attribute_spark(
            [obs[j] for j in spark_rows],
            [row_info[block_of[j]][1] if block_of[j] >= 0 else None for j in spark_rows],
            spark, now_ms, spark_min_idle_s, delay_threshold_s)}
    n = len(obs)
    out = {"delay_s": np.zeros(n), "delayed": np.zeros(n, bool), "local": np.zeros(n, bool),
           "wait_s": np.zeros(n), "sampled": np.zeros(n, bool), "locality_wait_s": np.zeros(n)}
    for engine, idx in rows.items():
        for key in out:
            out[key][idx] = parts[engine][key]
    return out


def _about(settings, collector: Collector, health: dict, obs, blocks: BlockRows, per_task,
           window_start_ms: int, window_end_ms: int, grace: float, settle: float) -> dict:
    """The window's ``observe`` section: its span, the scheduler's settings, the counts."""
    return {
        "window_start_ms": window_start_ms, "window_end_ms": window_end_ms,
        "delay_scheduling": settings.delay_scheduling,
        "node_locality_threshold": settings.node_threshold,
        "node_heartbeat_s": settings.heartbeat_s, "nodemanagers": settings.nodes,
        "delay_threshold_min_s": round(settings.min_delay_s, 3), "grace_s": round(grace, 3),
        "settle_s": round(settle, 3),
        "map_tasks": len(obs), "unmapped_tasks": blocks.unmapped,
        "input_gone_tasks": blocks.input_gone,
        "delayed_tasks": int(per_task["delayed"].sum()),
        "delay_s": round(float(per_task["delay_s"].sum()), 3),
        "node_local_tasks": int(per_task["local"].sum()),
        "tasks_judged_on_rm_samples": int(per_task["sampled"].sum()),
        "skipped_records": collector.skipped,
        "safe_mode": health["safe_mode"], "missing_blocks": health["missing_blocks"],
        "under_replicated_blocks": health["under_replicated_blocks"],
        "http_requests": collector.ep.stats.requests,
        "engines": _by_engine(obs, blocks, per_task),
    }


def _by_engine(obs, blocks: BlockRows, per_task) -> dict[str, dict]:
    """The window's counts per engine whose tasks it holds (MapReduce's maps, Spark's tasks)."""
    out = {}
    for engine in sorted({o.engine for o in obs}):
        idx = np.array([j for j, o in enumerate(obs) if o.engine == engine], np.int64)
        out[engine] = {"tasks": len(idx),
                       "unmapped_tasks": int(sum(blocks.block_of[j] < 0 for j in idx)),
                       "delayed_tasks": int(per_task["delayed"][idx].sum()),
                       "delay_s": round(float(per_task["delay_s"][idx].sum()), 3),
                       "locality_wait_s": round(float(per_task["locality_wait_s"][idx].sum()), 3),
                       "node_local_tasks": int(per_task["local"][idx].sum())}
    return out
