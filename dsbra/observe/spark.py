"""What Spark's tasks read and waited for: the collector of Spark applications on YARN.

Spark binds tasks at its driver: a task set holds its pending tasks at a locality level for
``spark.locality.wait`` (per level) before it lets them run elsewhere, while the executors it
holds stay idle. Spark reports each task's host, executor, level (``taskLocality``), launch and
duration through its REST API (running applications through the ResourceManager's proxy,
finished ones through the History Server), but neither the split a task read nor how long it
waited. So:

* **the file** comes from the NameNode's audit log: with HDFS caller context on, each ``open``
  of an executor carries ``SPARK_TASK_<app>_JId_<job>_SId_<stage>_<attempt>_TId_<task>_<n>``
  (:class:`AuditTail` reads the local file on the NameNode host, across rotations);
* **the split** is recomputed where Spark's own rule is known exactly: an RDD from
  ``textFile`` (Hadoop's FileInputFormat) has partition i = split i, the splits of one file
  in offset order (:func:`split_starts`); a Spark SQL scan packs pieces of several files into
  one partition and stays at the file (its blocks unknown, the task not counted per block);
* **the wait** is what Spark's behaviour implies (:func:`attribute`): a task waited for
  locality when, while it was pending, an executor of its application on a host that holds
  none of its block's replicas had a core free for at least ``min_idle_s`` (an offer Spark
  declines leaves the core idle until the next offer; one it accepts fills it within
  milliseconds). Its wait runs from the first such moment to its launch. Validated against
  the driver's DEBUG log of its locality levels (benchmarks/validate_spark_waits.py,
  docs/spark.md). In a busy application of many jobs (Fair pools) a declined core goes at once
  to another job's task and is never idle; there the launch itself says it: a task that ran
  off its data at a rack or any level, its node-level wait or more after it became pending,
  while an executor was up on a holder of its block, waited out that wait (Spark escalates a
  task set's level only then), and is delayed by at least the wait.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from dsbra.errors import HadoopError, StateError
from dsbra.hadoop import shapes
from dsbra.hadoop.rest import ResourceManager, SparkApi
from dsbra.hadoop.spark_conf import DEFAULT_WAIT, pairs, spark_time_ms, waits
from dsbra.observe.collector import MapObservation
from dsbra.statedir import write_json_atomic

log = logging.getLogger(__name__)

ENGINE = "spark"
#: an executor's core idle this long while a task was pending means its task set declined it
MIN_IDLE_S = 0.5
#: a task is counted once launched this long ago (its executor's ``open`` is in the audit log
#: by then), or once finished
SETTLE_MS = 3000
#: a task whose file or split is still unknown this long after its launch is handed out as it is
STALE_MS = 60_000
#: a finished application the History Server has not shown after this long is given up
HISTORY_GIVE_UP_MS = 10 * 60 * 1000
FINISHED_SLACK_MS = 60_000
STATE_VERSION = 1
#: levels at which a task ran where its data is (no network read)
LOCAL_LEVELS = ("PROCESS_LOCAL", "NODE_LOCAL")

CALLER_CONTEXT = re.compile(
    r"SPARK_TASK_(?P<app>application_\d+_\d+)(?:_(?P<app_attempt>\d+))?_JId_(?P<job>\d+)"
    r"_SId_(?P<stage>\d+)_(?P<stage_attempt>\d+)_TId_(?P<tid>\d+)_(?P<attempt>\d+)")


def rest_time_ms(text) -> int | None:
    """Spark's REST time (``2026-12-06T08:42:42.362GMT``) -> epoch ms."""
    if not isinstance(text, str) or not text.endswith("GMT"):
        return None
    try:
        moment = datetime.strptime(text[:-3], "%Y-%m-%dT%H:%M:%S.%f")
    except ValueError:
        return None
    return int(moment.replace(tzinfo=timezone.utc).timestamp() * 1000)


# ---------------------------------------------------------------------- the audit log
@dataclass(frozen=True)
class TaskOpen:
    app_id: str
    task_id: int
    stage: int
    stage_attempt: int
    path: str


def parse_audit_line(line: str) -> TaskOpen | None:
    """A Spark task's ``open`` in a NameNode audit line (tab-separated ``key=value``), else None."""
    if "cmd=open" not in line or "SPARK_TASK_" not in line:
        return None
    fields = dict(part.split("=", 1) for part in line.rstrip("\n").split("\t") if "=" in part)
    match = CALLER_CONTEXT.search(fields.get("callerContext", ""))
    src = fields.get("src")
    if match is None or not src or fields.get("cmd") != "open" or fields.get("allowed") == "false":
        return None
    return TaskOpen(match["app"], int(match["tid"]), int(match["stage"]), int(match["stage_attempt"]), src)


class AuditTail:
    """Follows the NameNode's audit log from where it was last read. log4j's rolling appender
    renames the file to ``<name>.1`` and starts a new one: the rest of the old file is read
    from ``.1`` (matched by inode), then the new one from its start. A missing file is a
    logged skip (said once, and again when it is back)."""

    def __init__(self, path: str | Path, *, inode: int | None = None, offset: int = 0):
        self.path = Path(path)
        self.inode = inode
        self.offset = offset
        self.missing = False

    @classmethod
    def at_end(cls, path: str | Path) -> "AuditTail":
        """From now on: what the log held before is not this collector's."""
        tail = cls(path)
        try:
            st = os.stat(tail.path)
            tail.inode, tail.offset = st.st_ino, st.st_size
        except OSError:
            pass
        return tail

    def read(self) -> list[TaskOpen]:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if not self.missing:
                log.warning("the NameNode's audit log %s cannot be read (%s): Spark tasks are "
                            "not mapped to files until it is", self.path, exc.strerror)
            self.missing = True
            return []
        if self.missing:
            log.info("the NameNode's audit log %s is readable again", self.path)
            self.missing = False
        out: list[TaskOpen] = []
        if self.inode is not None and st.st_ino != self.inode:  # rotated
            rolled = self.path.with_name(self.path.name + ".1")
            try:
                if os.stat(rolled).st_ino == self.inode:
                    out += self._read_from(rolled, self.offset)
                else:
                    log.warning("the audit log %s rotated more than once between two reads; "
                                "Spark tasks of that span are not mapped to files", self.path)
            except OSError:
                pass
            self.offset = 0
        elif st.st_size < self.offset:  # truncated in place
            self.offset = 0
        self.inode = st.st_ino
        lines = self._read_from(self.path, self.offset, advance=True)
        return out + lines

    def _read_from(self, path: Path, offset: int, advance: bool = False) -> list[TaskOpen]:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        if advance:
            self.offset = offset + end
        return [t for line in data[:end].decode("utf-8", "replace").splitlines()
                if (t := parse_audit_line(line)) is not None]


# ---------------------------------------------------------------------- REST replies
@dataclass
class SparkTask:
    """One task attempt as Spark reported it, and the file and offset it read where known."""

    app_id: str
    task_id: int
    stage: int
    stage_attempt: int
    partition: int
    attempt: int
    stage_tasks: int  # the stage attempt's number of tasks (partitions)
    submitted_ms: int  # its stage attempt's submission: from then on it was pending
    launch_ms: int
    duration_ms: int | None  # None: still running
    executor: str
    host: str
    locality: str
    status: str
    speculative: bool


def tasks_from_stages(app_id: str, stages) -> list[SparkTask]:
    """Every task attempt of ``stages`` (``/stages?details=true``); malformed ones skipped."""
    out: list[SparkTask] = []
    for stage in shapes.as_list(stages):
        if not isinstance(stage, dict):
            continue
        submitted = rest_time_ms(stage.get("submissionTime"))
        stage_id, stage_attempt = shapes.as_int(stage.get("stageId")), shapes.as_int(stage.get("attemptId"))
        stage_tasks = shapes.as_int(stage.get("numTasks"), 0) or 0
        tasks = stage.get("tasks")
        if submitted is None or stage_id is None or stage_attempt is None or not isinstance(tasks, dict):
            continue
        for task in tasks.values():
            if not isinstance(task, dict):
                continue
            launch = rest_time_ms(task.get("launchTime"))
            tid = shapes.as_int(task.get("taskId"))
            partition = shapes.as_int(task.get("partitionId"))
            if partition is None or partition < 0:
                partition = shapes.as_int(task.get("index"))
            host = shapes.as_str(task.get("host"))
            if launch is None or tid is None or partition is None or not host:
                log.debug("Spark task of %s without launch/id/partition/host skipped", app_id)
                continue
            status = shapes.as_str(task.get("status"), "") or ""
            duration = shapes.as_int(task.get("duration"))
            out.append(SparkTask(
                app_id, tid, stage_id, stage_attempt, partition, shapes.as_int(task.get("attempt"), 0) or 0,
                stage_tasks, submitted, launch, duration if status not in ("RUNNING", "") else None,
                shapes.as_str(task.get("executorId"), "") or "", host,
                shapes.as_str(task.get("taskLocality"), "") or "", status, bool(task.get("speculative"))))
    out.sort(key=lambda t: t.task_id)
    return out


@dataclass(frozen=True)
class Executor:
    executor_id: str
    host: str
    cores: int
    add_ms: int
    remove_ms: int | None


def executors_from_reply(reply) -> list[Executor]:
    """``allexecutors`` without the driver (it runs no tasks)."""
    out = []
    for e in shapes.as_list(reply):
        if not isinstance(e, dict) or e.get("id") == "driver":
            continue
        host = (shapes.as_str(e.get("hostPort"), "") or "").rsplit(":", 1)[0]
        add = rest_time_ms(e.get("addTime"))
        cores = shapes.as_int(e.get("totalCores"), 0) or 0
        if not host or add is None or cores <= 0:
            continue
        out.append(Executor(str(e.get("id")), host, cores, add, rest_time_ms(e.get("removeTime"))))
    return out


def node_wait_s(environment: dict) -> float | None:
    """spark.locality.wait.node of an application's ``/environment`` (seconds); None when it
    does not say or Spark could not read it."""
    props = pairs(environment.get("sparkProperties")) if isinstance(environment, dict) else None
    if props is None:
        return None
    ms = spark_time_ms(waits(props)["node"][1])
    return ms / 1000 if ms is not None and ms >= 0 else None


# ---------------------------------------------------------------------- splits
def hadoop_split_starts(length: int, split_size: int) -> list[int]:
    """FileInputFormat's splits of one file: ``split_size`` pieces while more than 1.1 of one
    remains (SPLIT_SLOP), the rest in the last."""
    starts, remaining = [], length
    while split_size > 0 and remaining / split_size > 1.1:
        starts.append(length - remaining)
        remaining -= split_size
    if remaining > 0 or not starts:
        starts.append(length - remaining)
    return starts


def split_starts(counts: dict[str, int], lengths: dict[str, int], block_size: dict[str, int]) -> dict[str, list[int]] | None:
    """The start offset of each split of each file a ``textFile`` stage read, recomputed as
    Hadoop's FileInputFormat cut them: split size max(1, min(total / minPartitions,
    block size)), for the one minPartitions that gives every file the number of tasks that
    opened it (``counts``). None when no minPartitions does: not a plain ``textFile`` stage."""
    total = sum(lengths[p] for p in counts)
    for min_partitions in range(1, sum(counts.values()) + 1):
        goal = total // min_partitions
        found = {p: hadoop_split_starts(lengths[p], max(1, min(goal, block_size[p]))) for p in counts}
        if all(len(found[p]) == counts[p] for p in counts):
            return found
    return None


def locate_tasks(tasks: list[SparkTask], opened: dict[tuple[str, int], str],
                 lengths: dict[str, int], block_size: dict[str, int]) -> list[tuple[str | None, int | None]]:
    """(file, split start) of each task: the file from the audit log, the start from
    :func:`split_starts` over the tasks of its stage attempt (partition order within a file is
    offset order), once every partition of the stage attempt opened its file; (file, None)
    where the split cannot be recomputed (yet), (None, None) without a file."""
    by_stage: dict[tuple, list[int]] = {}
    for j, t in enumerate(tasks):
        by_stage.setdefault((t.app_id, t.stage, t.stage_attempt), []).append(j)
    out: list[tuple[str | None, int | None]] = [(None, None)] * len(tasks)
    for members in by_stage.values():
        first = {}
        for j in members:  # one attempt per partition: the first that opened a file
            path = opened.get((tasks[j].app_id, tasks[j].task_id))
            if path is not None and tasks[j].partition not in first:
                first[tasks[j].partition] = path
        complete = len(first) >= tasks[members[0]].stage_tasks
        readable = {p for p in set(first.values()) if p in lengths and p in block_size} if complete else set()
        per_file: dict[str, list[int]] = {}
        for partition, path in sorted(first.items()):
            per_file.setdefault(path, []).append(partition)
        starts = split_starts({p: len(v) for p, v in per_file.items() if p in readable}, lengths, block_size) \
            if readable else None
        offset_of = {(path, part): (starts[path][k] if starts and path in starts else None)
                     for path, parts in per_file.items() for k, part in enumerate(parts)}
        for j in members:
            path = first.get(tasks[j].partition)
            out[j] = (path, offset_of.get((path, tasks[j].partition))) if path else (None, None)
    return out


# ---------------------------------------------------------------------- the wait
def idle_intervals(tasks: list[SparkTask], executors: list[Executor], now_ms: int) -> list[tuple[str, int, int]]:
    """(host, start, end) of each stretch in which an executor had a core free."""
    busy: dict[str, list[tuple[int, int]]] = {}
    for t in tasks:
        end = t.launch_ms + t.duration_ms if t.duration_ms is not None else now_ms
        busy.setdefault(t.executor, []).append((t.launch_ms, max(end, t.launch_ms)))
    out = []
    for e in executors:
        life_end = e.remove_ms if e.remove_ms is not None else now_ms
        events = sorted([(s, 1) for s, _ in busy.get(e.executor_id, [])]
                        + [(x, -1) for _, x in busy.get(e.executor_id, [])], key=lambda v: (v[0], v[1]))
        running, t0 = 0, e.add_ms
        for moment, step in events + [(life_end, 0)]:
            moment = min(max(moment, e.add_ms), life_end)
            if running < e.cores and moment > t0:
                out.append((e.host, t0, moment))
            running += step
            t0 = moment
    return out


def attribute(tasks: list[SparkTask], holders: list[list[str] | None], executors: list[Executor],
              now_ms: int, min_idle_s: float = MIN_IDLE_S,
              node_wait_s: float | None = None) -> dict[str, np.ndarray]:
    """Per task: ``delayed`` (waited for locality: see the module's docstring), ``delay_s`` (from
    the first idle core elsewhere to its launch; at least ``node_wait_s``, the application's
    spark.locality.wait.node, for a task that ran off its data after waiting it out), ``local``
    (ran on a holder of its block, or at a local level when the holders are unknown).
    ``holders[j]``: the hosts of task j's block replicas, None when not known (then it is never
    judged delayed). ``node_wait_s`` None: the launch rule is off. Pure."""
    n = len(tasks)
    delayed, local, delay_s = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n)
    idle = idle_intervals(tasks, executors, now_ms)
    hosts = np.array([h for h, _, _ in idle], object)
    starts = np.array([s for _, s, _ in idle], np.int64)
    ends = np.array([e for _, _, e in idle], np.int64)
    min_idle_ms = int(min_idle_s * 1000)
    for j, t in enumerate(tasks):
        where = holders[j]
        local[j] = t.host in where if where else t.locality in LOCAL_LEVELS
        if not where or t.launch_ms <= t.submitted_ms:
            continue
        elsewhere = ~np.isin(hosts, list(where))
        s = np.maximum(starts, t.submitted_ms)
        e = np.minimum(ends, t.launch_ms)
        ok = elsewhere & (e - s >= min_idle_ms)
        if ok.any():
            delayed[j] = True
            delay_s[j] = (t.launch_ms - int(s[ok].min())) / 1000.0
        if node_wait_s is not None and waited_out_node_level(t, where, executors, node_wait_s):
            delayed[j] = True
            delay_s[j] = max(delay_s[j], node_wait_s)
    return {"delayed": delayed, "delay_s": delay_s, "local": local}


def waited_out_node_level(task: SparkTask, holders: list[str], executors: list[Executor],
                          node_wait_s: float) -> bool:
    """Whether ``task`` ran off its data at a rack or any level, ``node_wait_s`` or more after
    it became pending, while an executor of its application was up on a holder of its block
    for that wait: its task set could launch it node-local (the level was valid) and held it
    until the wait let it go elsewhere (TaskSetManager.getAllowedLocalityLevel)."""
    if (node_wait_s <= 0 or task.host in holders or task.locality in LOCAL_LEVELS
            or task.locality == "NO_PREF"):
        return False
    wait_ms = node_wait_s * 1000
    if task.launch_ms - task.submitted_ms < wait_ms:
        return False
    since = task.launch_ms - wait_ms
    return any(e.host in holders and e.add_ms <= since
               and (e.remove_ms is None or e.remove_ms >= task.launch_ms) for e in executors)


def attempt_id(app_id: str, task_id: int) -> str:
    """A Spark task attempt's MapObservation.attempt_id: its application and Spark's task id."""
    return f"{app_id}:tid{task_id}"


def task_of(attempt: str) -> tuple[str, int]:
    """(application, Spark task id) of an :func:`attempt_id`."""
    app_id, tid = attempt.rsplit(":tid", 1)
    return app_id, int(tid)


# ---------------------------------------------------------------------- the collector
@dataclass
class AppWatch:
    app_id: str
    tasks: list[SparkTask] = field(default_factory=list)
    executors: list[Executor] = field(default_factory=list)
    finished_ms: int | None = None
    done: bool = False
    #: its spark.locality.wait.node (s): the delay threshold D of the scheduler that waited
    node_wait_s: float | None = None


class SparkCollector:
    """Polls the ResourceManager for Spark applications and reads their tasks: running ones
    through the RM's proxy each poll, a finished one once from the History Server. Hands out
    each first attempt once (:meth:`take`) as a :class:`MapObservation` of engine ``spark``,
    its file from the audit log; keeps each application's tasks and executors for the wait
    (:meth:`timeline`). Every failure of a source is a logged skip, retried next poll."""

    def __init__(self, rm: ResourceManager, proxy: SparkApi, history: SparkApi | None,
                 audit: AuditTail | None, *, state_path: Path | None = None,
                 since_ms: int | None = None, clock=time.time):
        self.rm, self.proxy, self.history, self.audit = rm, proxy, history, audit
        self.clock = clock
        now = int(clock() * 1000)
        self.since_ms = since_ms if since_ms is not None else now
        self.cursor_ms = self.since_ms
        self.apps: dict[str, AppWatch] = {}
        self.opened: dict[tuple[str, int], str] = {}
        self.counted: set[tuple[str, int]] = set()
        self.done_apps: dict[str, int] = {}
        self.skips: dict[str, int] = {}  # source -> failed reads, for the status
        self.state_path = Path(state_path) if state_path else None
        if self.state_path and self.state_path.exists():
            self._load()

    def poll(self) -> None:
        now = int(self.clock() * 1000)
        if self.audit is not None:
            for t in self.audit.read():
                self.opened.setdefault((t.app_id, t.task_id), t.path)
        running = self._apps("RUNNING")
        finished = self._apps("FINISHED,FAILED,KILLED", self.cursor_ms - FINISHED_SLACK_MS)
        for app in running or []:
            watch = self._watch(app)
            if watch is not None:
                self._read(watch, self.proxy, "proxy")
        resolved = True
        for app in finished or []:
            watch = self._watch(app)
            if watch is None:
                continue
            watch.finished_ms = shapes.as_int(app.get("finishedTime")) or now
            if watch.finished_ms < self.since_ms:
                self._done(watch)
            elif self.history is None or self._read(watch, self.history, "history"):
                self._done(watch)  # without a History Server: what the proxy last showed
            elif now - watch.finished_ms > HISTORY_GIVE_UP_MS:
                log.warning("Spark application %s: not in the History Server %d min after it "
                            "ended; counted as last seen", watch.app_id, HISTORY_GIVE_UP_MS // 60000)
                self._done(watch)
            else:
                resolved = False
        if resolved and running is not None and finished is not None:
            self.cursor_ms = now
        self._save()

    def _apps(self, states: str, finished_since_ms: int | None = None) -> list[dict] | None:
        try:
            return self.rm.apps(states=states, app_type="SPARK", finished_since_ms=finished_since_ms)
        except HadoopError as exc:
            self._skip("rm", f"Spark applications not listed: {exc}")
            return None

    def _watch(self, app: dict) -> AppWatch | None:
        app_id = shapes.as_str(app.get("id"))
        if not app_id or not app_id.startswith("application_") or app_id in self.done_apps:
            return None
        if self.audit is None and not self.apps and not self.done_apps:
            log.warning("Spark application %s seen, but no NameNode audit log is configured "
                        "(spark.audit_log): Spark's tasks are counted, not mapped to files or "
                        "blocks (docs/spark.md)", app_id)
        return self.apps.setdefault(app_id, AppWatch(app_id))

    def _read(self, watch: AppWatch, api: SparkApi, source: str) -> bool:
        try:
            stages = api.stages(watch.app_id)
            executors = api.executors(watch.app_id)
        except HadoopError as exc:
            self._skip(source, f"Spark application {watch.app_id}: {exc} (will retry)")
            return False
        watch.tasks = tasks_from_stages(watch.app_id, stages)
        watch.executors = executors_from_reply(executors)
        if watch.node_wait_s is None:
            try:
                watch.node_wait_s = node_wait_s(api.environment(watch.app_id))
            except HadoopError as exc:
                self._skip(source, f"Spark application {watch.app_id}: its environment: {exc} (will retry)")
        return True

    def _skip(self, source: str, message: str) -> None:
        self.skips[source] = self.skips.get(source, 0) + 1
        log.info(message)

    def _done(self, watch: AppWatch) -> None:
        watch.done = True
        self.done_apps[watch.app_id] = watch.finished_ms or int(self.clock() * 1000)

    def take(self, files: dict[str, dict | None] | None = None) -> list[MapObservation]:
        """The first attempts launched since the collector started and not handed out yet:
        settled (launched ``SETTLE_MS`` ago, or finished) ones. ``files``: each path's
        ``{"located", "replication"}`` (observe.window.read_files) for the split offsets;
        without it, the lengths are asked of nobody and the tasks stay at their file."""
        self._prune()  # what the previous take handed out last: its round has judged it
        now = int(self.clock() * 1000)
        out: list[MapObservation] = []
        for watch in self.apps.values():
            tasks = [t for t in watch.tasks if t.attempt == 0 and not t.speculative
                     and t.launch_ms >= self.since_ms and (watch.app_id, t.task_id) not in self.counted
                     and (t.duration_ms is not None or now - t.launch_ms >= SETTLE_MS or watch.done)]
            if not tasks:
                continue
            lengths, block_size = _file_facts(files or {})
            located = locate_tasks(watch.tasks, self.opened, lengths, block_size)
            where = {(t.app_id, t.task_id): located[j] for j, t in enumerate(watch.tasks)}
            for t in tasks:
                path, start = where[(t.app_id, t.task_id)]
                if start is None and not watch.done and now - t.launch_ms < STALE_MS:
                    continue  # its stage's other tasks have not opened their files yet
                self.counted.add((t.app_id, t.task_id))
                out.append(MapObservation(
                    job_id=t.app_id, task_id=f"{t.app_id}:{t.stage}.{t.stage_attempt}:{t.partition}",
                    attempt_id=attempt_id(t.app_id, t.task_id), scheduled_ms=t.submitted_ms,
                    launch_ms=t.launch_ms,
                    finish_ms=t.launch_ms + t.duration_ms if t.duration_ms is not None else None,
                    node=t.host, locality=t.locality, split_hosts=[], mem_mb=0, path=path,
                    start=start, length=None, engine=ENGINE))
        self._save()
        return out

    def give_back(self, obs: list[MapObservation]) -> None:
        """Tasks :meth:`take` handed to a round that was skipped: the next take hands them again."""
        for o in obs:
            self.counted.discard(task_of(o.attempt_id))

    def paths_pending(self) -> set[str]:
        """The files the tasks :meth:`take` would hand out read: what a round reads first."""
        return {p for (app, tid), p in self.opened.items() if (app, tid) not in self.counted}

    def timeline(self, app_id: str) -> tuple[list[SparkTask], list[Executor]]:
        watch = self.apps.get(app_id)
        return (watch.tasks, watch.executors) if watch else ([], [])

    def node_wait_s(self, app_id: str) -> float:
        """The application's node-level locality wait (Spark's default until its environment
        was read)."""
        watch = self.apps.get(app_id)
        wait = watch.node_wait_s if watch else None
        return wait if wait is not None else spark_time_ms(DEFAULT_WAIT) / 1000

    def _prune(self) -> None:
        """Forget a finished application once all its tasks were handed out (and judged: its
        timeline serves the round that took its last tasks)."""
        for app_id in [a for a, w in self.apps.items() if w.done]:
            watch = self.apps[app_id]
            if all((app_id, t.task_id) in self.counted or t.attempt or t.speculative
                   or t.launch_ms < self.since_ms for t in watch.tasks):
                del self.apps[app_id]
                self.opened = {k: v for k, v in self.opened.items() if k[0] != app_id}
                self.counted = {k for k in self.counted if k[0] != app_id}

    # ------------------------------------------------------------------ persistence
    def _save(self) -> None:
        if not self.state_path:
            return
        doc = {"version": STATE_VERSION, "since_ms": self.since_ms, "cursor_ms": self.cursor_ms,
               "done_apps": self.done_apps, "counted": sorted(map(list, self.counted)),
               "audit": ({"path": str(self.audit.path), "inode": self.audit.inode,
                          "offset": self.audit.offset} if self.audit else None),
               "opened": [[a, t, p] for (a, t), p in sorted(self.opened.items())],
               "apps": {a: {"tasks": [asdict(t) for t in w.tasks],
                            "executors": [asdict(e) for e in w.executors],
                            "finished_ms": w.finished_ms, "done": w.done, "node_wait_s": w.node_wait_s}
                        for a, w in self.apps.items()}}
        write_json_atomic(self.state_path, doc, compact=True)

    def _load(self) -> None:
        try:
            doc = json.loads(self.state_path.read_text())
            if doc.get("version") != STATE_VERSION:
                raise StateError(f"Spark collector state {self.state_path}: unknown version "
                                 f"{doc.get('version')!r}")
            self.since_ms, self.cursor_ms = int(doc["since_ms"]), int(doc["cursor_ms"])
            self.done_apps = {str(k): int(v) for k, v in doc["done_apps"].items()}
            self.counted = {(str(a), int(t)) for a, t in doc["counted"]}
            self.opened = {(str(a), int(t)): str(p) for a, t, p in doc["opened"]}
            audit = doc.get("audit")
            if audit and self.audit is not None and str(self.audit.path) == audit["path"]:
                self.audit.inode, self.audit.offset = audit["inode"], int(audit["offset"])
            self.apps = {a: AppWatch(a, [SparkTask(**t) for t in w["tasks"]],
                                     [Executor(**e) for e in w["executors"]], w["finished_ms"], w["done"],
                                     w.get("node_wait_s"))
                         for a, w in doc["apps"].items()}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StateError(f"Spark collector state {self.state_path} is unreadable: "
                             f"{type(exc).__name__}: {exc}") from exc


def _file_facts(files: dict[str, dict | None]) -> tuple[dict[str, int], dict[str, int]]:
    """Each readable file's length and block size, from its GET_BLOCK_LOCATIONS reply."""
    lengths, block_size = {}, {}
    for path, v in files.items():
        located = (v or {}).get("located") or {}
        blocks = [b for b in shapes.as_list(located.get("locatedBlocks")) if isinstance(b, dict)]
        length = shapes.as_int(located.get("fileLength"))
        if length is None or not blocks:
            continue
        sizes = [shapes.as_int((b.get("block") or {}).get("numBytes"), 0) or 0 for b in blocks]
        lengths[path] = length
        block_size[path] = max(sizes) if len(sizes) > 1 else max(sizes[0], 1)
    return lengths, block_size
