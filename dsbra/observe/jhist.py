"""Read MapReduce job history files (.jhist) and turn them into task records.

Format (``EventWriter``): a line ``Avro-Binary`` or ``Avro-Json``, a line with the ``Event``
schema as JSON, then a raw stream of ``Event{type, event}`` records: Avro binary encoding
with no container and no sync markers, or Avro's JSON encoding (unions as
``{"type-name": value}``). The schema is taken from the file itself, so 3.4 and 3.5 files (and
older ones) parse alike. An in-progress file (the AM's staging copy) may end in a partial
record: it is read up to the last whole record and flagged ``truncated``.

Malformed content never raises out of :func:`read_events`' callers unchecked: a bad header is a
:class:`dsbra.errors.HadoopError`, and individual events with missing or ill-typed fields are
skipped with a logged reason by :func:`job_from_events`.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import fastavro

from dsbra.errors import HadoopError
from dsbra.hadoop import shapes

log = logging.getLogger(__name__)

BINARY = "Avro-Binary"
JSON = "Avro-Json"


@dataclass
class HistoryEvents:
    kind: str  # BINARY or JSON
    events: list[dict]
    truncated: bool = False


def unwrap_json_union(value: Any) -> Any:
    """Avro JSON writes a non-null union member as ``{"typename": value}``; strip that."""
    if isinstance(value, dict):
        if len(value) == 1:
            (key, inner), = value.items()
            if key in ("string", "int", "long", "boolean", "double", "float", "bytes",
                       "array", "map") or key.startswith("org.apache.hadoop."):
                return unwrap_json_union(inner)
        return {k: unwrap_json_union(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_json_union(v) for v in value]
    return value


def read_events(data: bytes) -> HistoryEvents:
    """Parse a whole .jhist byte string into ``[{"type": ..., "event": {...}}, ...]``."""
    first_nl = data.find(b"\n")
    if first_nl < 0:
        raise HadoopError("job history file has no header line")
    header = data[:first_nl].strip().decode("ascii", "replace")
    second_nl = data.find(b"\n", first_nl + 1)
    if second_nl < 0:
        raise HadoopError("job history file has no schema line")
    if header not in (BINARY, JSON):
        raise HadoopError(f"job history file: unknown header {header[:40]!r}")
    try:
        raw_schema = json.loads(data[first_nl + 1:second_nl])
        schema = fastavro.parse_schema(raw_schema)
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as exc:
        raise HadoopError(f"job history file: unreadable schema ({type(exc).__name__})") from exc
    _check_event_schema(raw_schema)
    body = data[second_nl + 1:]
    if header == BINARY:
        return _read_binary(body, schema)
    return _read_json(body)


def _check_event_schema(raw_schema: Any) -> None:
    """The schema line must describe ``Event{type, event}``: any other record (a corrupted line
    can still be valid Avro, e.g. one with no fields) would decode the body as something else,
    possibly zero bytes per record, forever."""
    is_record = isinstance(raw_schema, dict) and raw_schema.get("type") == "record"
    fields = raw_schema.get("fields") if is_record else None
    names = {f.get("name") for f in fields if isinstance(f, dict)} if isinstance(fields, list) else set()
    if not {"type", "event"} <= names:
        raise HadoopError("job history file: the schema line is not the Event{type, event} record")


def _read_binary(body: bytes, schema) -> HistoryEvents:
    stream = io.BytesIO(body)
    events: list[dict] = []
    end = len(body)
    while stream.tell() < end:
        pos = stream.tell()
        try:
            events.append(fastavro.schemaless_reader(stream, schema))
        except Exception as exc:  # a partial trailing record of an in-progress file
            log.info("jhist: stopped at byte %d of %d (%s): partial or corrupt record",
                     pos, end, type(exc).__name__)
            return HistoryEvents(BINARY, events, truncated=True)
        if stream.tell() == pos:
            raise HadoopError(f"job history file: a record of zero bytes at byte {pos}")
    return HistoryEvents(BINARY, events)


def _read_json(body: bytes) -> HistoryEvents:
    text = body.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    events: list[dict] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return HistoryEvents(JSON, events)
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            log.info("jhist: JSON stream stops at char %d of %d: partial record", pos, end)
            return HistoryEvents(JSON, events, truncated=True)
        if isinstance(value, dict):
            events.append(unwrap_json_union(value))


# ---------------------------------------------------------------------------------------------
# Events -> records

@dataclass
class AttemptRecord:
    attempt_id: str
    task_id: str
    task_type: str  # MAP, REDUCE, SETUP, CLEANUP
    launch_ms: int
    node: str
    locality: str | None = None  # NODE_LOCAL, RACK_LOCAL, OFF_SWITCH (maps only)
    finish_ms: int | None = None
    state: str | None = None  # SUCCEEDED, FAILED, KILLED; None while running
    status: str | None = None  # the attempt's state string (old-API maps: the split)


@dataclass
class TaskRecord:
    task_id: str
    task_type: str
    scheduled_ms: int
    split_hosts: list[str]
    finish_ms: int | None = None
    attempts: list[AttemptRecord] = field(default_factory=list)

    @property
    def index(self) -> int:
        return task_index(self.task_id)

    @property
    def first_attempt(self) -> AttemptRecord | None:
        return min(self.attempts, key=lambda a: a.attempt_id) if self.attempts else None


@dataclass
class JobHistory:
    job_id: str
    user: str | None = None
    queue: str | None = None
    submit_ms: int | None = None
    launch_ms: int | None = None
    finish_ms: int | None = None
    status: str | None = None  # SUCCEEDED / FAILED / KILLED once finished
    total_maps: int | None = None
    am_containers: list[tuple[str, int]] = field(default_factory=list)  # (node, start_ms)
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    skipped: int = 0  # events skipped as malformed
    truncated: bool = False


def task_index(task_id: str) -> int:
    """``task_1700000000000_0001_m_000007`` -> 7."""
    try:
        return int(task_id.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return -1


def task_of_attempt(attempt_id: str) -> str:
    """``attempt_..._m_000007_0`` -> ``task_..._m_000007``."""
    return "task" + attempt_id[len("attempt"):].rsplit("_", 1)[0]


_START = {"MAP_ATTEMPT_STARTED", "REDUCE_ATTEMPT_STARTED", "SETUP_ATTEMPT_STARTED",
          "CLEANUP_ATTEMPT_STARTED"}
_FINISH = {"MAP_ATTEMPT_FINISHED", "REDUCE_ATTEMPT_FINISHED", "SETUP_ATTEMPT_FINISHED",
           "CLEANUP_ATTEMPT_FINISHED"}
_UNSUCCESSFUL = {"MAP_ATTEMPT_FAILED", "MAP_ATTEMPT_KILLED", "REDUCE_ATTEMPT_FAILED",
                 "REDUCE_ATTEMPT_KILLED", "SETUP_ATTEMPT_FAILED", "SETUP_ATTEMPT_KILLED",
                 "CLEANUP_ATTEMPT_FAILED", "CLEANUP_ATTEMPT_KILLED"}


class _Skip(Exception):
    pass


def _need_str(ev: dict, key: str) -> str:
    v = shapes.as_str(ev.get(key))
    if not v:
        raise _Skip(f"no {key}")
    return v


def _need_int(ev: dict, key: str) -> int:
    v = shapes.as_int(ev.get(key))
    if v is None or v < 0:
        raise _Skip(f"no valid {key}")
    return v


def job_from_events(events: list[dict], job_id: str | None = None) -> JobHistory:
    """Fold history events into a :class:`JobHistory`; malformed events are logged and skipped."""
    job = JobHistory(job_id=job_id or "")
    pending_attempts: list[AttemptRecord] = []
    for raw in events:
        try:
            if not isinstance(raw, dict):
                raise _Skip("event is not an object")
            etype = raw.get("type")
            ev = raw.get("event")
            if not isinstance(etype, str) or not isinstance(ev, dict):
                raise _Skip("no type/event")
            _apply(job, etype, ev, pending_attempts)
        except _Skip as why:
            job.skipped += 1
            log.warning("jhist %s: skipped a %s event: %s", job.job_id or "?",
                        raw.get("type") if isinstance(raw, dict) else "?", why)
    for att in pending_attempts:  # attempts whose TASK_STARTED came later or never
        task = job.tasks.get(att.task_id)
        if task is None:
            job.skipped += 1
            log.warning("jhist %s: attempt %s has no TASK_STARTED; skipped", job.job_id,
                        att.attempt_id)
        else:
            task.attempts.append(att)
    return job


def _apply(job: JobHistory, etype: str, ev: dict, pending: list[AttemptRecord]) -> None:
    if etype == "JOB_SUBMITTED":
        job.job_id = job.job_id or _need_str(ev, "jobid")
        job.user = shapes.as_str(ev.get("userName"))
        job.queue = shapes.as_str(ev.get("jobQueueName"))
        job.submit_ms = shapes.as_int(ev.get("submitTime"))
    elif etype == "JOB_INITED":
        job.launch_ms = shapes.as_int(ev.get("launchTime"))
        job.total_maps = shapes.as_int(ev.get("totalMaps"))
    elif etype == "AM_STARTED":
        host = _need_str(ev, "nodeManagerHost")
        job.am_containers.append((host, _need_int(ev, "startTime")))
    elif etype == "TASK_STARTED":
        task_id = _need_str(ev, "taskid")
        hosts = shapes.as_str(ev.get("splitLocations"), "") or ""
        job.tasks.setdefault(task_id, TaskRecord(
            task_id=task_id, task_type=_need_str(ev, "taskType"),
            scheduled_ms=_need_int(ev, "startTime"),
            split_hosts=[h for h in hosts.split(",") if h]))
    elif etype == "TASK_FINISHED" or etype == "TASK_FAILED":
        task = job.tasks.get(_need_str(ev, "taskid"))
        if task is not None:
            task.finish_ms = shapes.as_int(ev.get("finishTime"))
    elif etype in _START:
        attempt_id = _need_str(ev, "attemptId")
        task_id = shapes.as_str(ev.get("taskid")) or task_of_attempt(attempt_id)
        att = AttemptRecord(attempt_id=attempt_id, task_id=task_id,
                            task_type=_need_str(ev, "taskType"),
                            launch_ms=_need_int(ev, "startTime"),
                            node=_need_str(ev, "trackerName"),
                            locality=shapes.as_str(ev.get("locality")))
        task = job.tasks.get(task_id)
        if task is None:
            pending.append(att)
        elif all(a.attempt_id != attempt_id for a in task.attempts):
            task.attempts.append(att)
    elif etype in _FINISH or etype in _UNSUCCESSFUL:
        attempt_id = _need_str(ev, "attemptId")
        task = job.tasks.get(shapes.as_str(ev.get("taskid")) or task_of_attempt(attempt_id))
        att = next((a for a in task.attempts if a.attempt_id == attempt_id), None) if task else None
        if att is None:
            att = next((a for a in pending if a.attempt_id == attempt_id), None)
        if att is not None:
            att.finish_ms = shapes.as_int(ev.get("finishTime"))
            if etype in _FINISH:
                att.state = "SUCCEEDED"
                att.status = shapes.as_str(ev.get("state"))
            else:
                att.state = shapes.as_str(ev.get("status"), "FAILED")
    elif etype in ("JOB_FINISHED", "JOB_FAILED", "JOB_KILLED", "JOB_ERROR"):
        job.finish_ms = shapes.as_int(ev.get("finishTime"))
        job.status = {"JOB_FINISHED": "SUCCEEDED"}.get(
            etype, shapes.as_str(ev.get("jobStatus"), etype[4:]))


def parse(data: bytes, job_id: str | None = None) -> JobHistory:
    """Bytes of a .jhist -> :class:`JobHistory` (raises HadoopError only on a bad header)."""
    he = read_events(data)
    job = job_from_events(he.events, job_id)
    job.truncated = he.truncated
    return job
