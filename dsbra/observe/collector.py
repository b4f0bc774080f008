"""The polling collector: which map attempts ran, where, after how long a wait.

Each poll asks the ResourceManager for running MapReduce applications and for those finished
since the cursor (two requests, however long the history). For each job it reads, once, the
job's conf and split files, and then its history file: the AM's in-progress copy in the
staging directory while the job runs (incrementally, from the byte where the previous poll
stopped), the final copy from the history server's done directories once it finished. So the
number of requests grows with new work (new jobs, running jobs), not with history.

Counting is idempotent: every map task is counted once, by its first attempt, keyed by the
attempt id in a persisted ``seen`` set, whichever source (in-progress file, final file,
a re-read after a restart) shows it. The cursor, the seen set, the not-yet-reported records
and the recent container occupancy are written atomically (temp file + rename) after each poll.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import fastavro

from dsbra.errors import HadoopError, StateError
from dsbra.hadoop import shapes
from dsbra.hadoop.locality import NODE_LOCALITY_DELAY
from dsbra.hadoop.rest import (AppMaster, Jmx, JobHistory, RequestStats, ResourceManager, WebHdfs,
                               split_urls)
from dsbra.observe import activities, jhist, splits
from dsbra.observe.delay_threshold import SchedulerSettings, settings_from_conf
from dsbra.statedir import write_json_atomic

log = logging.getLogger(__name__)

STATE_VERSION = 1
#: finished jobs kept for take_jobs(): the daemon takes them every round, other callers never
MAX_FINISHED_JOBS = 10_000
FINISHED_SLACK_MS = 60_000  # re-ask the RM this far behind the cursor (clock skew, late moves)
RESOLVE_GIVE_UP_MS = 15 * 60_000  # a finished job whose history file never shows up
MAX_SAMPLES = 20_000  # free-memory samples kept (one per poll)
AM_HEARTBEAT_KEY = "yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms"


@dataclass
class Endpoints:
    rm: ResourceManager
    am: AppMaster
    jhs: JobHistory
    hdfs: WebHdfs
    jmx: Jmx
    stats: RequestStats

    @classmethod
    def from_urls(cls, rm_url: str, webhdfs_url: str, jhs_url: str, *, user: str | None = None,
                  timeout_s: float = 10.0, session=None) -> "Endpoints":
        """``session``: one shared session (a recording or replaying one); default: one each."""
        import requests

        stats = RequestStats()
        # the NameNodes' web URLs (several with HA), with or without the /webhdfs/v1 suffix
        nn = [u.removesuffix("/webhdfs/v1") for u in split_urls(webhdfs_url)]
        rm_session, nn_session, jhs_session = (session or requests.Session() for _ in range(3))
        kw = {"timeout_s": timeout_s, "stats": stats}
        return cls(rm=ResourceManager(rm_url, session=rm_session, **kw),
                   am=AppMaster(rm_url, session=rm_session, **kw),
                   jhs=JobHistory(jhs_url, session=jhs_session, **kw),
                   hdfs=WebHdfs(nn, session=nn_session, user=user, **kw),
                   jmx=Jmx(nn, session=nn_session, **kw), stats=stats)


@dataclass
class MapObservation:
    """One counted map task: its first attempt, and the split it read."""

    job_id: str
    task_id: str
    attempt_id: str
    scheduled_ms: int
    launch_ms: int
    finish_ms: int | None
    node: str
    locality: str | None
    split_hosts: list[str]
    mem_mb: int
    path: str | None = None  # None: the task could not be mapped to a file split
    start: int | None = None
    length: int | None = None
    #: the engine that ran it: "mapreduce" (dsbra.signals.attribution's rule) or "spark"
    #: (dsbra.observe.spark's)
    engine: str = "mapreduce"


@dataclass
class Container:
    node: str
    start_ms: int
    end_ms: int | None  # None: still running
    mem_mb: int


class HistoryStream:
    """Incremental reader of a growing .jhist: keeps the byte offset after the last whole record."""

    def __init__(self):
        self.offset = 0
        self.kind: str | None = None
        self.schema = None

    def feed(self, chunk: bytes) -> list[dict]:
        """Events in ``chunk`` (the file's bytes from ``self.offset``); advances the offset."""
        if self.kind is None:
            first = chunk.find(b"\n")
            second = chunk.find(b"\n", first + 1) if first >= 0 else -1
            if second < 0:
                return []  # header not flushed yet
            he = jhist.read_events(chunk[: second + 1])
            self.kind = he.kind
            self.schema = fastavro.parse_schema(json.loads(chunk[first + 1: second]))
            self.offset = second + 1
            chunk = chunk[second + 1:]
        if self.kind == jhist.BINARY:
            import io

            stream, events, good = io.BytesIO(chunk), [], 0
            while stream.tell() < len(chunk):
                try:
                    events.append(fastavro.schemaless_reader(stream, self.schema))
                except Exception:
                    break
                good = stream.tell()
        else:
            text = chunk.decode("utf-8", "replace")
            decoder, events, pos, good = json.JSONDecoder(), [], 0, 0
            while True:
                while pos < len(text) and text[pos] in " \t\r\n":
                    pos += 1
                if pos >= len(text):
                    break
                try:
                    value, pos = decoder.raw_decode(text, pos)
                except ValueError:
                    break
                events.append(jhist.unwrap_json_union(value))
                good = len(text[:pos].encode("utf-8"))
        self.offset += good
        return events


@dataclass
class JobWatch:
    """What the collector knows about one job; rebuilt (not persisted) after a restart."""

    job_id: str
    app_id: str
    user: str
    conf: dict[str, str] | None = None
    splits: list | None = None
    splits_tried: bool = False
    staging_jhist: str | None = None
    stream: HistoryStream = field(default_factory=HistoryStream)
    events: list = field(default_factory=list)
    finished_at_ms: int | None = None  # RM finish time, once finished
    submitted_ms: int | None = None  # the RM's startedTime: when the application was submitted
    done: bool = False


def job_id_of(app_id: str) -> str:
    return "job_" + app_id[len("application_"):] if app_id.startswith("application_") else app_id


class Collector:
    """Poll a cluster; accumulate counted map observations until :meth:`take` hands them out."""

    def __init__(self, endpoints: Endpoints, *, state_path: Path | None = None,
                 since_ms: int | None = None, clock=time.time,
                 node_locality_delay: int | None = None):
        """``node_locality_delay``: the Capacity Scheduler's, for a ResourceManager whose
        configuration does not show it (dsbra.observe.delay_threshold)."""
        self.ep = endpoints
        self.node_locality_delay = node_locality_delay
        self._told_default = False
        self.state_path = Path(state_path) if state_path else None
        self.clock = clock
        now = int(clock() * 1000)
        self.cursor_ms = since_ms if since_ms is not None else now
        self.since_ms = self.cursor_ms  # attempts launched before this are not counted
        self.seen: dict[str, str] = {}  # attempt id -> job id
        self.done_jobs: dict[str, int] = {}  # job id -> finish ms
        self.pending: list[MapObservation] = []
        #: jobs whose final history was read since the last take_jobs(): id, submit and finish
        #: (ms, the RM's), final state, counted maps (a switchback's job response, dsbra impact)
        self.finished_jobs: list[dict] = []
        self.containers: dict[str, list[Container]] = {}  # job id -> its containers
        #: job id -> the (ms, host) its application declined for locality, as the Capacity
        #: Scheduler reported them (dsbra.observe.activities); empty on other schedulers
        self.skips: dict[str, list[tuple[int, str]]] = {}
        self._activities_failing = False
        self.jobs: dict[str, JobWatch] = {}
        self.skipped = 0
        self.am_heartbeat_s = 1.0  # the AM's allocate round trip; updated from job confs
        self._settings: SchedulerSettings | None = None
        self._nodes: list[dict] | None = None
        #: the RM's view of free memory, one sample per poll: (ms, {host: avail MB or -1 if down})
        self.samples: list[tuple[int, dict[str, int]]] = []
        if self.state_path and self.state_path.exists():
            self._load()

    # ------------------------------------------------------------------ cluster facts
    def nodes(self, refresh: bool = False) -> list[dict]:
        if self._nodes is None or refresh:
            self._nodes = self.ep.rm.nodes()
        return self._nodes

    def _sample_free(self, now: int) -> None:
        """Record the RM's free memory per node (what the scheduler sees, including containers
        allocated but not yet launched): the attribution's view of "room elsewhere"."""
        free: dict[str, int] = {}
        for n in self.nodes(refresh=True):
            host = shapes.as_str(n.get("nodeHostName"))
            if host:
                avail = shapes.as_int(n.get("availMemoryMB"))
                free[host] = avail if n.get("state") == "RUNNING" and avail is not None else -1
        self.samples.append((now, free))

    def settings(self, refresh: bool = False) -> SchedulerSettings:
        if self._settings is None or refresh:
            running = [n for n in self.nodes(refresh) if n.get("state") == "RUNNING"]
            self._settings = settings_from_conf(self.ep.rm.conf(), len(running),
                                                self.node_locality_delay)
            if self._settings.delay_source == "hadoop-default" and not self._told_default:
                self._told_default = True
                log.warning("the ResourceManager does not show yarn.scheduler.capacity."
                            "node-locality-delay (capacity-scheduler.xml is not in its /conf): "
                            "assuming Hadoop's default %d; give the cluster's value as "
                            "cluster.node_locality_delay (dsbra run) or --node-locality-delay "
                            "(dsbra observe)", NODE_LOCALITY_DELAY)
        return self._settings

    # ------------------------------------------------------------------ polling
    def poll(self) -> int:
        """One poll; returns the number of newly counted map tasks."""
        now = int(self.clock() * 1000)
        before = len(self.pending)
        self._sample_free(now)
        running = self.ep.rm.apps(states="RUNNING")
        finished = self.ep.rm.apps(states="FINISHED,FAILED,KILLED",
                                   finished_since_ms=self.cursor_ms - FINISHED_SLACK_MS)
        for app in running:
            job = self._watch(app)
            if job is not None and not job.done:
                self._guard(job, self._follow_running, job)
        if self.settings().reports_skips:
            self._read_skips(running)
        resolved_all = True
        for app in finished:
            job = self._watch(app)
            if job is None or job.done:
                continue
            job.finished_at_ms = shapes.as_int(app.get("finishedTime")) or now
            if job.finished_at_ms < self.since_ms:  # nothing of it can be in the window
                self._mark_done(job)
                continue
            if not self._guard(job, self._read_final, job):
                if now - job.finished_at_ms > RESOLVE_GIVE_UP_MS:
                    log.warning("job %s: no history file %d min after it finished; giving up",
                                job.job_id, RESOLVE_GIVE_UP_MS // 60000)
                    self._mark_done(job)
                else:
                    resolved_all = False
        if resolved_all:
            self.cursor_ms = now
        self._prune(now)
        self._save()
        return len(self.pending) - before

    def _read_skips(self, running: list[dict]) -> None:
        """The Capacity Scheduler's recorded locality skips of every running application (a
        failing endpoint, such as a Hadoop before 3.3, is a warning on change, not an error)."""
        failed = 0
        for app in running:
            app_id = shapes.as_str(app.get("id"))
            if not app_id:
                continue
            try:
                reply = self.ep.rm.app_activities(app_id, activities.RECORD_S)
            except HadoopError as exc:
                failed += 1
                if not self._activities_failing:
                    log.warning("app-activities of %s not read (the attribution infers the "
                                "declines instead): %s", app_id, exc)
                self._activities_failing = True
                continue
            have = self.skips.setdefault(job_id_of(app_id), [])
            have.extend(sorted(set(activities.locality_skips(reply)) - set(have)))
        if running and not failed and self._activities_failing:
            log.info("app-activities read again")
            self._activities_failing = False

    def _guard(self, job: JobWatch, fn, *args) -> bool:
        """Run one job's step; a Hadoop error is logged and retried next poll."""
        try:
            return bool(fn(*args))
        except HadoopError as exc:
            log.info("job %s: %s (will retry)", job.job_id, exc)
            return False

    def _watch(self, app: dict) -> JobWatch | None:
        app_id = shapes.as_str(app.get("id"))
        if not app_id or not app_id.startswith("application_"):
            self.skipped += 1
            log.warning("RM app without a valid id skipped: %r", str(app)[:120])
            return None
        job_id = job_id_of(app_id)
        if job_id in self.done_jobs:
            return None
        job = self.jobs.get(job_id)
        if job is None:
            job = self.jobs[job_id] = JobWatch(job_id, app_id, shapes.as_str(app.get("user"), "")
                                               or "")
        job.submitted_ms = job.submitted_ms or shapes.as_int(app.get("startedTime"))
        return job

    def _conf(self, job: JobWatch, live: bool) -> dict[str, str]:
        if job.conf is None:
            job.conf = (self.ep.am.conf(job.app_id, job.job_id) if live
                        else self.ep.jhs.conf(job.job_id))
            ms = shapes.as_float(job.conf.get(AM_HEARTBEAT_KEY))
            if ms and ms > 0:
                self.am_heartbeat_s = ms / 1000
        return job.conf

    def _staging_dir(self, job: JobWatch, live: bool) -> str | None:
        d = self._conf(job, live).get("mapreduce.job.dir")
        return splits.strip_scheme(d) if d else None

    def _load_splits(self, job: JobWatch, live: bool) -> None:
        if job.splits_tried:
            return
        staging = self._staging_dir(job, live)
        job.splits_tried = True
        if not staging:
            return
        try:
            meta = self.ep.hdfs.open(staging + "/job.splitmetainfo")
            data = self.ep.hdfs.open(staging + "/job.split")
            job.splits = splits.read_splits(meta, data)
        except HadoopError as exc:
            if exc.exception == "FileNotFoundException" or exc.status == 404:
                log.info("job %s: split files are gone (%s); mapping tasks from their status "
                         "strings where possible", job.job_id, staging)
            else:
                job.splits_tried = False  # transient: try again next poll
                raise

    def _follow_running(self, job: JobWatch) -> bool:
        self._load_splits(job, live=True)
        if job.staging_jhist is None:
            staging = self._staging_dir(job, live=True)
            if not staging:  # a job conf without mapreduce.job.dir: nothing to follow live
                return False
            names = [shapes.as_str(s.get("pathSuffix"), "") for s in self.ep.hdfs.list_status(staging)]
            hist = sorted(n for n in names if n.endswith(".jhist"))
            if not hist:
                return False
            job.staging_jhist = f"{staging}/{hist[-1]}"
        try:
            chunk = self.ep.hdfs.open(job.staging_jhist, offset=job.stream.offset)
        except HadoopError as exc:
            if exc.exception == "FileNotFoundException":
                job.staging_jhist = None  # a new AM attempt, or the job just finished
            return False  # offset past the visible end: nothing new
        job.events.extend(job.stream.feed(chunk))
        self._absorb(job, final=False)
        return True

    def _read_final(self, job: JobWatch) -> bool:
        path = self._locate_final(job)
        if path is None:
            return False
        self._load_splits(job, live=False)
        job.events = jhist.read_events(self.ep.hdfs.open(path)).events
        maps = self._absorb(job, final=True)
        if job.submitted_ms is not None and job.finished_at_ms is not None:
            self.finished_jobs.append({"job_id": job.job_id, "submit_ms": job.submitted_ms,
                                       "finish_ms": job.finished_at_ms, "maps": maps})
            del self.finished_jobs[:-MAX_FINISHED_JOBS]  # a caller that never takes them
        self._mark_done(job)
        return True

    def _history_dirs(self, job: JobWatch) -> tuple[str, str]:
        conf = self._conf(job, live=False)
        staging = splits.strip_scheme(conf.get("yarn.app.mapreduce.am.staging-dir",
                                               "/tmp/hadoop-yarn/staging"))
        inter = conf.get("mapreduce.jobhistory.intermediate-done-dir") or \
            staging + "/history/done_intermediate"
        done = conf.get("mapreduce.jobhistory.done-dir") or staging + "/history/done"
        return splits.strip_scheme(inter), splits.strip_scheme(done)

    def _locate_final(self, job: JobWatch) -> str | None:
        inter, done = self._history_dirs(job)
        candidates = [f"{inter}/{job.user}"]
        serial = f"{int(job.job_id.rsplit('_', 1)[1]):09d}"[:6]
        finished = (job.finished_at_ms or int(self.clock() * 1000)) / 1000
        for tz in (timezone.utc, None):
            day = datetime.fromtimestamp(finished, tz).strftime("%Y/%m/%d")
            candidates.append(f"{done}/{day}/{serial}")
        for d in dict.fromkeys(candidates):
            try:
                names = [shapes.as_str(s.get("pathSuffix"), "") for s in self.ep.hdfs.list_status(d)]
            except HadoopError as exc:
                if exc.exception == "FileNotFoundException":
                    continue
                raise
            for n in names:
                if n.startswith(job.job_id + "-") and n.endswith(".jhist"):
                    return f"{d}/{n}"
        return None

    def _mem(self, job: JobWatch, key: str, default: int) -> int:
        conf = job.conf or {}
        asked = shapes.as_int(conf.get(key), default) or default
        return self.settings().container_mb(asked if asked > 0 else default)

    def _absorb(self, job: JobWatch, final: bool) -> int:
        """Fold the job's events so far into counted observations and container occupancy;
        the job's map tasks."""
        hist = jhist.job_from_events(job.events, job.job_id)
        self.skipped += hist.skipped
        map_mb = self._mem(job, "mapreduce.map.memory.mb", 1024)
        red_mb = self._mem(job, "mapreduce.reduce.memory.mb", 1024)
        am_mb = self._mem(job, "yarn.app.mapreduce.am.resource.mb", 1536)
        end_default = hist.finish_ms if final else None
        cont = [Container(node, start, end_default, am_mb) for node, start in hist.am_containers]
        for task in hist.tasks.values():
            for att in task.attempts:
                cont.append(Container(att.node, att.launch_ms, att.finish_ms or end_default,
                                      map_mb if task.task_type == "MAP" else red_mb))
        self.containers[job.job_id] = cont
        by_attempt = {o.attempt_id: o for o in self.pending if o.job_id == job.job_id}
        for task in hist.tasks.values():
            if task.task_type != "MAP":
                continue
            att = task.first_attempt
            if att is None:
                continue
            if att.attempt_id in by_attempt:  # seen before, still unreported: update it
                obs = by_attempt[att.attempt_id]
                obs.finish_ms = att.finish_ms
                if obs.path is None:
                    self._map_split(job, task.index, att.status, obs)
                continue
            if att.attempt_id in self.seen or att.launch_ms < self.since_ms:
                continue
            self.seen[att.attempt_id] = job.job_id
            obs = MapObservation(job.job_id, task.task_id, att.attempt_id, task.scheduled_ms,
                                 att.launch_ms, att.finish_ms, att.node, att.locality,
                                 list(task.split_hosts), map_mb)
            self._map_split(job, task.index, att.status, obs)
            self.pending.append(obs)
        return sum(1 for task in hist.tasks.values() if task.task_type == "MAP")

    def _map_split(self, job: JobWatch, index: int, status: str | None,
                   obs: MapObservation) -> None:
        split = job.splits[index] if job.splits and 0 <= index < len(job.splits) else None
        if split is not None:
            obs.path, obs.start, obs.length = splits.strip_scheme(split.path), split.start, \
                split.length
            return
        parsed = splits.parse_status_split(status)  # arrives with the attempt's finish
        if parsed is not None:
            obs.path, obs.start, obs.length = parsed

    def _mark_done(self, job: JobWatch) -> None:
        job.done = True
        self.done_jobs[job.job_id] = job.finished_at_ms or int(self.clock() * 1000)
        self.jobs.pop(job.job_id, None)

    def _prune(self, now: int) -> None:
        horizon = now - 24 * 3600_000
        for jid, t in list(self.done_jobs.items()):
            if t < min(horizon, self.cursor_ms - FINISHED_SLACK_MS):
                del self.done_jobs[jid]
        reported = {o.attempt_id for o in self.pending}
        self.seen = {a: j for a, j in self.seen.items()
                     if j not in self.done_jobs or a in reported or j in self.jobs}
        oldest = min([o.scheduled_ms for o in self.pending], default=now) - 3600_000
        keep_from = min([o.scheduled_ms for o in self.pending], default=now) - 600_000
        first = next((i for i, (t, _) in enumerate(self.samples) if t >= keep_from),
                     len(self.samples))
        self.samples = self.samples[max(first - 1, 0):][-MAX_SAMPLES:]
        for jid, cont in list(self.containers.items()):
            if jid not in self.jobs and all(c.end_ms is not None and c.end_ms < oldest
                                            for c in cont):
                del self.containers[jid]
        self.skips = {j: v for j, v in self.skips.items() if j in self.containers or j in self.jobs}

    def poll_until_read(self, job_ids, timeout_s: float, interval_s: float = 2.0) -> int:
        """Poll until the final history file of every job in ``job_ids`` has been read, or
        ``timeout_s`` passed; returns the number of polls made."""
        deadline = time.monotonic() + timeout_s
        polls = 0
        while True:
            self.poll()
            polls += 1
            if all(j in self.done_jobs for j in job_ids) or time.monotonic() >= deadline:
                return polls
            time.sleep(interval_s)

    # ------------------------------------------------------------------ hand-out
    def take(self) -> list[MapObservation]:
        """The observations counted since the previous take (each attempt is handed out once)."""
        out, self.pending = self.pending, []
        self._save()
        return out

    def take_jobs(self) -> list[dict]:
        """The jobs finished (their final history read) since the previous take_jobs."""
        out, self.finished_jobs = self.finished_jobs, []
        self._save()
        return out

    # ------------------------------------------------------------------ persistence
    def _save(self) -> None:
        if not self.state_path:
            return
        doc = {"version": STATE_VERSION, "cursor_ms": self.cursor_ms, "since_ms": self.since_ms,
               "am_heartbeat_s": self.am_heartbeat_s, "seen": self.seen,
               "samples": self.samples, "done_jobs": self.done_jobs,
               "pending": [asdict(o) for o in self.pending], "finished_jobs": self.finished_jobs,
               "containers": {j: [asdict(c) for c in cs] for j, cs in self.containers.items()},
               "skips": self.skips}
        write_json_atomic(self.state_path, doc, compact=True)

    def _load(self) -> None:
        try:
            doc = json.loads(self.state_path.read_text())
            if doc.get("version") != STATE_VERSION:
                raise StateError(f"collector state {self.state_path}: unknown version "
                                 f"{doc.get('version')!r}")
            self.cursor_ms = int(doc["cursor_ms"])
            self.since_ms = int(doc["since_ms"])
            self.am_heartbeat_s = float(doc.get("am_heartbeat_s", 1.0))
            self.samples = [(int(t), {str(h): int(v) for h, v in free.items()})
                            for t, free in doc.get("samples", [])]
            self.seen = {str(k): str(v) for k, v in doc["seen"].items()}
            self.done_jobs = {str(k): int(v) for k, v in doc["done_jobs"].items()}
            self.pending = [MapObservation(**o) for o in doc["pending"]]
            self.finished_jobs = [{"job_id": str(j["job_id"]), "submit_ms": int(j["submit_ms"]),
                                   "finish_ms": int(j["finish_ms"]), "maps": int(j["maps"])}
                                  for j in doc.get("finished_jobs", [])]
            self.containers = {j: [Container(**c) for c in cs]
                               for j, cs in doc["containers"].items()}
            self.skips = {str(j): [(int(t), str(h)) for t, h in v]
                          for j, v in doc.get("skips", {}).items()}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StateError(f"collector state {self.state_path} is unreadable: "
                             f"{type(exc).__name__}: {exc}") from exc
