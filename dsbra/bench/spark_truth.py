"""Ground truth of Spark's locality waits, from the driver's own log.

At DEBUG, Spark's ``TaskSetManager`` logs each change of a task set's allowed locality level
("Valid locality levels for TaskSet 0.0: NODE_LOCAL, RACK_LOCAL, ANY" when it starts, "Moving
to RACK_LOCAL after waiting for 3000ms", "No tasks for locality level NODE_LOCAL, so moving to
locality level RACK_LOCAL"), and at INFO each task's start (host, executor, level) and end.
A task truly waited for locality when, while it was pending, an executor had a core free on a
host where the task would have run at a level its task set did not allow then: the driver
declined it there. A launch at a stricter level than the set's puts the set back at that level
(Spark resets its timer after an offer round without a reject, and logs nothing): the parser
takes that reset at each such launch. Its true wait runs from the first such moment to its launch.

The level lines do not name their task set, so a driver log is read as task sets one after
the other (the validation's applications run their grep jobs in turn). Times are the log's, to the
millisecond (conf-templates/log4j2.properties.j2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from dsbra.stats import precision_recall

LEVELS = ("PROCESS_LOCAL", "NODE_LOCAL", "NO_PREF", "RACK_LOCAL", "ANY")
RANK = {name: i for i, name in enumerate(LEVELS)}

STAMP = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}) (\w+) (\S+): (.*)$")
VALID = re.compile(r"Valid locality levels for TaskSet (\d+)\.(\d+): (.*)$")
MOVING = re.compile(r"Moving to (\w+) after waiting for (\d+)ms")
NO_TASKS = re.compile(r"No tasks for locality level (\w+), so moving to locality level (\w+)")
STARTING = re.compile(r"Starting task (\d+)\.(\d+) in stage (\d+)\.(\d+) \(TID (\d+)\) \(([^,]+),\s*executor (\S+), "
                      r"partition (\d+), (\w+),")
FINISHED = re.compile(r"Finished task (\d+)\.(\d+) in stage (\d+)\.(\d+) \(TID (\d+)\) in (\d+) ms on (\S+) "
                      r"\(executor (\S+)\)")
ADDING = re.compile(r"Adding task set (\d+)\.(\d+) with (\d+) tasks")


def log_time_ms(stamp: str) -> int:
    """``26/12/06 08:42:42.466`` (the driver's clock, UTC here) -> epoch ms."""
    moment = datetime.strptime(stamp, "%y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


@dataclass
class TaskSetLog:
    """One task set (a stage attempt): when it was added, its allowed level over time."""

    added_ms: int | None = None
    levels: list[tuple[int, str]] = field(default_factory=list)  # (ms, allowed level from then on)

    def allowed_at(self, ms: int) -> str:
        level = self.levels[0][1] if self.levels else "ANY"
        for t, name in self.levels:
            if t > ms:
                break
            level = name
        return level


@dataclass
class DriverLog:
    """One driver's task sets and tasks. The level lines name no task set: each belongs to the
    set whose "Valid locality levels" line came last (task sets one after the other)."""

    sets: dict[tuple[int, int], TaskSetLog] = field(default_factory=dict)
    #: tid -> stage, stage attempt, partition, launch ms, host, executor, level, finish ms
    tasks: dict[int, dict] = field(default_factory=dict)


def parse_driver_log(text: str) -> DriverLog:
    out = DriverLog()
    current: TaskSetLog | None = None
    for line in text.splitlines():
        m = STAMP.match(line)
        if not m:
            continue
        ms, message = log_time_ms(m[1]), m[4]
        if a := ADDING.search(message):
            out.sets.setdefault((int(a[1]), int(a[2])), TaskSetLog()).added_ms = ms
        elif v := VALID.search(message):
            current = out.sets.setdefault((int(v[1]), int(v[2])), TaskSetLog())
            current.levels.append((ms, v[3].split(",")[0].strip()))
        elif (mv := MOVING.search(message)) and current is not None:
            current.levels.append((ms, mv[1]))
        elif (nt := NO_TASKS.search(message)) and current is not None:
            current.levels.append((ms, nt[2]))
        elif s := STARTING.search(message):
            task_set = out.sets.get((int(s[3]), int(s[4])))
            if task_set is not None and task_set.levels and RANK[s[9]] < RANK[task_set.levels[-1][1]]:
                # a launch at a stricter level than the set's puts the set back at it (Spark
                # >= 3.1: resetDelayScheduleTimer after an offer round without a reject; the
                # legacy rule: after every launch), and Spark logs no line for it
                task_set.levels.append((ms, s[9]))
            out.tasks[int(s[5])] = {"stage": (int(s[3]), int(s[4])), "partition": int(s[8]),
                                    "launch_ms": ms, "host": s[6], "executor": s[7], "level": s[9],
                                    "finish_ms": None, "attempt": int(s[2])}
        elif f := FINISHED.search(message):
            task = out.tasks.get(int(f[5]))
            if task is not None:
                task["finish_ms"] = ms
    return out


def level_on(host: str, holders: list[str], rack_of: dict[str, str]) -> str:
    """The level a task whose block is on ``holders`` runs at on ``host``."""
    if host in holders:
        return "NODE_LOCAL"
    if rack_of.get(host) is not None and rack_of.get(host) in {rack_of.get(h) for h in holders}:
        return "RACK_LOCAL"
    return "ANY"


def true_waits(log: DriverLog, holders: dict[int, list[str]], executors: dict[str, tuple[str, int, int]],
               rack_of: dict[str, str], end_ms: int, min_idle_s: float) -> dict[int, tuple[bool, float]]:
    """tid -> (waited for locality, its wait in s) for each first attempt whose block holders
    are known. ``executors``: id -> (host, cores, registered ms)."""
    busy: dict[str, list[tuple[int, int]]] = {}
    for t in log.tasks.values():
        busy.setdefault(t["executor"], []).append((t["launch_ms"], t["finish_ms"] or end_ms))
    # each executor's free stretches, cut at every level change so a stretch has one level
    cuts = sorted({ms for ts in log.sets.values() for ms, _ in ts.levels})
    free: list[tuple[str, int, int]] = []
    for eid, (host, cores, added) in executors.items():
        events = sorted([(s, 1) for s, _ in busy.get(eid, [])] + [(e, -1) for _, e in busy.get(eid, [])],
                        key=lambda v: (v[0], v[1]))
        running, t0 = 0, added
        for moment, step in events + [(end_ms, 0)]:
            moment = max(moment, added)
            if running < cores and moment > t0:
                edges = [t0] + [c for c in cuts if t0 < c < moment] + [moment]
                free += [(host, a, b) for a, b in zip(edges, edges[1:])]
            running += step
            t0 = moment
    min_idle_ms = int(min_idle_s * 1000)
    out: dict[int, tuple[bool, float]] = {}
    for tid, t in log.tasks.items():
        where = holders.get(tid)
        task_set = log.sets.get(t["stage"])
        if not where or t["attempt"] != 0 or task_set is None or task_set.added_ms is None:
            continue
        pending_from = task_set.added_ms
        first = None
        for host, a, b in free:
            a, b = max(a, pending_from), min(b, t["launch_ms"])
            if b - a < min_idle_ms:
                continue
            if RANK[level_on(host, where, rack_of)] > RANK[task_set.allowed_at(a)]:
                first = a if first is None else min(first, a)
        out[tid] = (first is not None, (t["launch_ms"] - first) / 1000.0 if first is not None else 0.0)
    return out


def compare(inferred: dict[int, tuple[bool, float]], truth: dict[int, tuple[bool, float]]) -> dict:
    """Precision and recall of "delayed for locality", and the summed wait's error, over the
    tasks both judged."""
    common = sorted(set(inferred) & set(truth))
    pred = np.array([inferred[t][0] for t in common], bool)
    real = np.array([truth[t][0] for t in common], bool)
    tp, precision, recall = precision_recall(pred, real)
    wait_inferred = float(sum(inferred[t][1] for t in common))
    wait_true = float(sum(truth[t][1] for t in common))
    return {"tasks": len(common), "delayed_inferred": int(pred.sum()), "delayed_true": int(real.sum()),
            "true_positives": tp,
            "precision": precision, "recall": recall,
            "wait_inferred_s": round(wait_inferred, 3), "wait_true_s": round(wait_true, 3),
            "wait_error": round((wait_inferred - wait_true) / wait_true, 4) if wait_true else None}
