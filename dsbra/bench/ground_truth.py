"""The schedulers' own record of the map offers they declined, the ground truth the attribution
rule is scored against (benchmarks/validate_attribution.py --ground-truth): the Fair
Scheduler's per-offer TRACE lines and allocations, the Capacity Scheduler's DEBUG lines (a
decline read from what is missing) and its app-activities API, each raised or polled on the
ResourceManager at run time and read here."""

from __future__ import annotations

import json
import re
import sys

from dsbra.bench.grants import FS_APP, log_time_ms
from dsbra.errors import HadoopError
from dsbra.hadoop.rest import ResourceManager
from dsbra.observe.activities import OFF_SWITCH_DELAY

STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) "
DECLINE = re.compile(STAMP + r"TRACE .*Can't assign container on (\S+) node, allowedLocality: "
                     r"(\w+), priority: (\d+), app attempt id: appattempt_(\d+_\d+)_\d+")
ALLOCATE = re.compile(STAMP + r"DEBUG .*allocate: applicationAttemptId=appattempt_(\d+_\d+)_\d+ "
                      r"container=(\S+) host=(\S+) type=")
COMPLETE = re.compile(STAMP + r"DEBUG .*Completed container: (\S+) in state")


def trace_scheduler(rm_url: str) -> None:
    """Turn on the Fair Scheduler's per-offer TRACE lines at run time (the RM's /logLevel)."""
    set_log_levels(rm_url, [FS_APP], "TRACE")


def set_log_levels(rm_url: str, loggers: list[str], level: str) -> None:
    try:
        rm = ResourceManager(rm_url)
        for name in loggers:
            rm.set_log_level(name, level)
    except HadoopError as exc:
        sys.exit(str(exc))


def scheduler_log(rm_log: str, since_ms: int) -> dict:
    """What the Fair Scheduler logged at TRACE/DEBUG: every offer an application declined
    ([ms, node, allowed level, priority, job id]), every container it allocated ([ms,
    container, host, job id]) and every one completed ([ms, container])."""
    out: dict[str, list] = {"declines": [], "allocations": [], "completions": []}
    with open(rm_log, errors="replace") as f:
        for line in f:
            if m := DECLINE.match(line):
                out["declines"].append([log_time_ms(m.group(1)), m.group(2), m.group(3),
                                        int(m.group(4)), "job_" + m.group(5)])
            elif m := ALLOCATE.match(line):
                out["allocations"].append([log_time_ms(m.group(1)), m.group(3), m.group(4),
                                           "job_" + m.group(2)])
            elif m := COMPLETE.match(line):
                out["completions"].append([log_time_ms(m.group(1)), m.group(2)])
    return {k: [row for row in v if row[0] >= since_ms] for k, v in out.items()}


# --- the Capacity Scheduler's ground truth --------------------------------------------------
CS_PKG = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity."
CS_LOGGERS = [CS_PKG + "CapacityScheduler", CS_PKG + "AbstractLeafQueue",
              CS_PKG + "allocator.RegularContainerAllocator"]
CS_PASS = re.compile(STAMP + r"DEBUG .*Trying to schedule on node: ([^\s,:]+)\S*, available: "
                     r"<memory:(\d+)")
CS_TRY = re.compile(STAMP + r"DEBUG .*assignContainers: node=(\S+) "
                    r"application=application_(\d+_\d+) priority=(\d+) .*type=(\w+)")
CS_SKIP_APP = re.compile(STAMP + r"DEBUG .*Skip app_attempt=appattempt_(\d+_\d+)_\d+")
CS_CONSIDERED = re.compile(STAMP + r"DEBUG .*post-assignContainers for application "
                           r"application_(\d+_\d+)")


def debug_capacity_scheduler(rm_url: str) -> None:
    """Turn on the Capacity Scheduler's DEBUG lines at run time (the RM's /logLevel)."""
    set_log_levels(rm_url, CS_LOGGERS, "DEBUG")


def capacity_log(lines, since_ms: int) -> dict:
    """What the Capacity Scheduler logged at DEBUG, as locality declines. It logs no line when
    an application skips a node for locality (RegularContainerAllocator.assignNodeLocal/
    RackLocal/OffSwitchContainers return LOCALITY_SKIPPED/APP_SKIPPED silently; only the
    activities record it), so a decline is read from what is missing, on the one scheduler
    thread (no asynchronous scheduling), node heartbeat by node heartbeat:
    CapacityScheduler.allocateContainerOnSingleNode logs "Trying to schedule on node: n,
    available: <memory:m, ...>"; AbstractLeafQueue.assignContainers logs "post-assignContainers
    for application A" after offering n to each application in FIFO order;
    RegularContainerAllocator.assignContainer logs "assignContainers: node=n application=A
    priority=p ... type=T" whenever canAssign let A take n at some level, and
    RegularContainerAllocator.assignContainers "Skip app_attempt=A..." when A asks for nothing.
    A was offered n and declined it when the offer ended with neither line for A: a decline
    [ms, node, free MB at the heartbeat less one container per try logged before it in the same
    heartbeat (-1 when unknown), job]. Also the heartbeats ([ms, node, free MB]) and the tries
    ([ms, node, job, priority, type])."""
    out: dict[str, list] = {"declines": [], "heartbeats": [], "tries": []}
    node, free, tries_here, answered = None, -1, 0, set()
    for line in lines:
        if m := CS_PASS.match(line):
            node, free, tries_here, answered = m.group(2), int(m.group(3)), 0, set()
            out["heartbeats"].append([log_time_ms(m.group(1)), node, free])
        elif m := CS_TRY.match(line):
            out["tries"].append([log_time_ms(m.group(1)), m.group(2), "job_" + m.group(3),
                                 int(m.group(4)), m.group(5)])
            answered.add(m.group(3))
            tries_here += 1
        elif m := CS_SKIP_APP.match(line):
            answered.add(m.group(2))
        elif m := CS_CONSIDERED.match(line):
            app = m.group(2)
            if node is not None and app not in answered:
                out["declines"].append([log_time_ms(m.group(1)), node, free, tries_here, "job_" + app])
            answered.discard(app)  # the queue offers the node again after an allocation
    return {k: [row for row in v if row[0] >= since_ms] for k, v in out.items()}


class AppActivities:
    """Polls /ws/v1/cluster/scheduler/app-activities/{appid}?actions=refresh,get for every
    accepted or running application: the refresh keeps the RM recording that application's
    allocation attempts (ActivitiesManager.turnOnAppActivitiesRecording, for maxTime seconds),
    the get returns the latest ones it kept (app-activities.max-queue-length, 100 by default or more
    with many nodes). Every attempt is kept once, compactly: [ms, node, state, [[priority,
    node-level diagnostic or state], ...]]; ``raw`` keeps the first replies verbatim."""

    def __init__(self, rm_url: str, max_time_s: float = 10.0, keep_raw: int = 3):
        self.rm = ResourceManager(rm_url)
        self.max_time_s, self.keep_raw = max_time_s, keep_raw
        self.records: dict[str, dict[tuple, list]] = {}
        self.raw: list[dict] = []
        self.requests = 0
        self.errors: list[str] = []

    def poll(self) -> None:
        try:
            apps = self.rm.apps(states="ACCEPTED,RUNNING")
        except HadoopError as e:
            self.errors.append(str(e)[:200])
            return
        for app in apps:
            app_id = app["id"]
            self.requests += 1
            try:
                reply = self.rm.app_activities(app_id, self.max_time_s)
            except HadoopError as e:
                self.errors.append(str(e)[:200])
                continue
            if not isinstance(reply, dict):
                self.errors.append(f"app-activities {app_id}: not a JSON object")
                continue
            kept = (reply.get("appActivities") or {}).get("allocations")
            if len(self.raw) < self.keep_raw and kept:
                self.raw.append(reply)
            self.add(app_id, reply)

    def add(self, app_id: str, reply: dict) -> None:
        """Keep a reply's attempts not kept yet. Replies overlap and two attempts can be alike
        to the millisecond (one heartbeat offers a node again after an allocation), so each
        distinct attempt is kept as many times as one reply holds it at most."""
        mine = self.records.setdefault("job_" + app_id[len("application_"):], {})
        counts: dict[str, list] = {}
        for a in _as_list((reply.get("appActivities") or {}).get("allocations")):
            row = [int(a.get("timestamp") or 0), str(a.get("nodeId") or ""),
                   a.get("allocationState"), _node_diagnostics(a)]
            counts.setdefault(json.dumps(row), []).append(row)
        for key, rows in counts.items():
            have = mine.setdefault(key, [])
            have.extend(rows[len(have):])

    def as_json(self) -> dict:
        return {"records": {j: sorted(row for rows in r.values() for row in rows)
                            for j, r in self.records.items()},
                "raw": self.raw, "requests": self.requests, "errors": self.errors[:20]}


def _as_list(x) -> list:
    return x if isinstance(x, list) else [] if x is None else [x]


def _node_diagnostics(allocation: dict) -> list:
    """[[request priority, diagnostic (or state)], ...] of an app allocation's node-level
    children (request -> node in the activities tree)."""
    out = []
    for req in _as_list(allocation.get("children")):
        pri = req.get("requestPriority", req.get("name"))
        kids = _as_list(req.get("children")) or [req]
        for k in kids:
            out.append([pri, k.get("diagnostic") or k.get("allocationState")])
    return out


def activity_declines(activities: dict, since_ms: int) -> list:
    """[ms, host, job] of every allocation attempt whose node-level diagnostic was the
    off-switch delay (an application that skipped the node for locality)."""
    out = []
    for job, recs in activities.get("records", {}).items():
        for ms, node, _state, diags in recs:
            if ms >= since_ms and any(d == OFF_SWITCH_DELAY for _, d in diags):
                out.append([ms, node.split(":")[0], job])
    return sorted(out)
