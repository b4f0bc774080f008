#!/usr/bin/env python3
"""Validate the delay attribution of ``dsbra observe`` on a real cluster.

    .venv/bin/python benchmarks/validate_attribution.py --tag busy --mode off
    .venv/bin/python benchmarks/validate_attribution.py --tag busy --mode on
    .venv/bin/python benchmarks/validate_attribution.py --recompute  # re-attribute recorded runs
    .venv/bin/python benchmarks/validate_attribution.py --report     # table of every run

Each run brings up its *own* bundled cluster (state dir ``.dsbra/validate``, bridge ``dsv0``,
subnet 10.93.0.0/24, master ports +300; the main cluster is not touched). By default it uses
continuous scheduling, whose delay is time-based: "on" sets the Fair Scheduler's node and rack
delays to ``--delay-ms``, "off" to -1 (no delay scheduling); ``--scheduling heartbeat`` uses the
counted thresholds (1.0 / -1) instead. Workload: 3 hot one-block files (replication 1) read by
every job, 24 cold one-block files (replication 2), ``--jobs`` grep jobs each reading the 3
hot files and 3 cold ones drawn with a fixed seed, submitted ``--gap-s`` apart. A
``Collector`` polls while they run. Everything it gathered (map observations, every job's
containers, the RM's free-memory samples, nodes, block locations) is written to
``benchmarks/results/validate_attribution-<tag>-<mode>.raw.json.gz``; the summary
(``...-<tag>-<mode>.json``) attributes that record with the current rule and the "on" D in
both modes, so the two runs are measured with the same ruler, and ``--recompute`` redoes it
without a cluster. Expected: M and DT near zero with delay scheduling off; with it on they
rise and concentrate on the hot blocks.

Capacity Scheduler (issue 22)::

    .venv/bin/python benchmarks/validate_attribution.py --scheduler capacity --mode on \
        --ground-truth --tag cs-busy          # node-locality-delay 4 (--node-locality-delay N)
    .venv/bin/python benchmarks/validate_attribution.py --scheduler capacity --mode off \
        --ground-truth --tag cs-busy          # node-locality-delay -1

brings the validation cluster up with ``dsbra cluster up --scheduler capacity
--node-locality-delay N`` ("on": N, default 4 = the workers, so ``min(nodes, N)`` does not cut
it; "off": -1; heartbeat scheduling, no asynchronous or multi-node placement, as
conf-templates/capacity-scheduler.xml.j2 sets). D for both modes is the "on" run's
``min(nodes, N) x heartbeat``. ``--report`` prints these runs in their own tables. Ground truth
(Hadoop 3.4.2, read with ``javap -c -p`` on hadoop-yarn-server-resourcemanager-3.4.2.jar):

* The Capacity Scheduler logs *no* line when an application skips a node for locality.
  ``RegularContainerAllocator.assignContainersOnNode`` tries NODE_LOCAL (only when the node
  has a local ask), RACK_LOCAL and OFF_SWITCH in turn; ``assignNodeLocalContainers`` and
  ``assignRackLocalContainers`` return ``ContainerAllocation.LOCALITY_SKIPPED`` silently when
  ``canAssign`` refuses (rack-local: missed opportunities must exceed ``min(nodes,
  node-locality-delay)``), and ``assignOffSwitchContainers`` returns ``APP_SKIPPED`` after
  ``FiCaSchedulerApp.updateAppSkipNodeDiagnostics("Skipping assigning to Node as request
  locality is not matching.")`` (the AM-launch diagnostics) and
  ``ActivitiesLogger.APP.recordSkippedAppActivityWithoutAllocation(..., "Node skipped because
  of off-switch delay")`` (off-switch: missed > ``min(nodes, outstanding asks x locality wait
  factor)`` with rack-locality-additional-delay -1). ``tryAllocateOnNode`` counts the
  opportunity (``addSchedulingOpportunity``) before; a NODE_LOCAL allocation resets it
  (``doAllocation``, DEBUG "Resetting scheduling opportunities"). So the declines are read from
  what is missing in three DEBUG loggers raised through ``/logLevel?log=<class>&level=DEBUG``
  (``capacity_log``): ``...scheduler.capacity.CapacityScheduler`` ("Trying to schedule on node:
  <host>, available: <memory:M, vCores:V>", ``allocateContainerOnSingleNode``, once per node
  heartbeat), ``...scheduler.capacity.AbstractLeafQueue`` ("post-assignContainers for
  application <app id>", ``assignContainers``, after each application in the queue's FIFO
  order was offered the node) and ``...capacity.allocator.RegularContainerAllocator``
  ("assignContainers: node=<host> application=<app id> priority=<p> pendingAsk=<...>
  type=NODE_LOCAL|RACK_LOCAL|OFF_SWITCH", ``assignContainer``, only when ``canAssign`` let it
  take the node at that level; "Skip app_attempt=<attempt id>, because it doesn't need more
  resource", ``assignContainers``). An offer that ends with neither line for that application
  is a decline; its room is the heartbeat's available memory less one container per try
  before it in the heartbeat. The lines carry the application id and the host, not the
  locality level (there is none: every level was refused) nor the priority.
* The activities REST API records the same skip directly. ``GET
  /ws/v1/cluster/scheduler/app-activities/{appid}?actions=refresh,get&maxTime=S`` (the
  ``refresh`` calls ``ActivitiesManager.turnOnAppActivitiesRecording(app, S)``, default 3 s;
  ``get`` returns the allocation attempts kept, at most
  ``yarn.resourcemanager.activities-manager.app-activities.max-queue-length`` (100, raised with
  many nodes) per application, for ``app-activities.ttl-ms`` (600000); ``groupBy=diagnostic``,
  ``summarize``, ``limit``, ``requestPriorities``, ``allocationRequestIds`` filter; an ended
  application answers "fail to get application activities after finished"). An attempt has
  ``nodeId``, ``timestamp``, ``allocationState`` and children request -> node, whose
  ``diagnostic`` for a locality skip is ActivityDiagnosticConstant
  ``NODE_SKIPPED_BECAUSE_OF_OFF_SWITCH_DELAY`` = "Node skipped because of off-switch delay"
  (the node-local and rack-local skips record nothing in 3.4.2). Other constants an
  application can show there: "Node skipped because relax locality is not allowed", "Node
  skipped because node/rack locality cannot be satisfied", "Node does not have sufficient
  resource for request", "Request does not need more resource", "Queue skipped to respect FIFO
  of applications". ``/ws/v1/cluster/scheduler/activities`` (``nodeId``, ``groupBy``) records
  only the next node heartbeat after each call (``recordNextNodeUpdateActivities``), too sparse
  for a run. ``AppActivities`` polls every running application at each collector poll
  (``maxTime`` 10 s, longer than the poll interval, so the recording never lapses) and the raw
  record keeps every attempt once (``cs_activities``), so the two truths can be compared
  (``truths_agree`` in the summary).

``score_against_capacity`` scores the rule against each truth as the Fair Scheduler's runs
are scored (precision, recall, and nothing flagged with delay scheduling off). Limits: the log
truth is read from an absence, so a silent skip of another kind (every request key
PRIORITY_SKIPPED while the application still has asks) reads as a decline; with
rack-locality-additional-delay -1, node-locality-delay -1 turns off the rack-local wait only,
and an application whose rack ask is spent still waits ``min(nodes, outstanding asks x
locality wait factor)`` opportunities for off-switch (``canAssign(OFF_SWITCH)``); the
activities cover an application only from the poll that first saw it (the poll interval, 2 s,
later under load), so the two truths differ at the start of each application.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsbra.cluster.jobs import grep_lines, submit_spaced  # noqa: E402
from dsbra.errors import HadoopError  # noqa: E402
from dsbra.hadoop.rest import ResourceManager  # noqa: E402
from dsbra.observe.activities import OFF_SWITCH_DELAY  # noqa: E402
from dsbra.observe.collector import Collector, Container, Endpoints, MapObservation  # noqa: E402
from dsbra.observe.window import (LAUNCH_ALLOWANCE_S, compute_blocks, map_to_blocks,  # noqa: E402
                                  read_files)
from dsbra.signals import AttributionParams  # noqa: E402

STATE_DIR = ROOT / ".dsbra" / "validate"
CLUSTER = ["--prefix", "dsv", "--subnet", "10.93.0.0/24", "--port-offset", "300"]
RESULTS = ROOT / "benchmarks" / "results"
DSBRA = [sys.executable, "-m", "dsbra"]


def sh(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True)
    if check and proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc


def cluster_down() -> None:
    """Our own validation cluster only; a second try finishes a partly failed tear-down."""
    if sh(DSBRA + ["cluster", "down", "--state-dir", str(STATE_DIR)], check=False).returncode:
        sh(DSBRA + ["cluster", "down", "--state-dir", str(STATE_DIR)])


def cluster_up(mode: str, scheduling: str, delay_ms: int, scheduler: str = "fair",
               node_delay: int = 4) -> dict:
    """"on": delay scheduling with D = delay_ms (time-based, continuous scheduling) or threshold
    1.0 (heartbeat-counted); "off": the same scheduling with delay scheduling off (-1). With
    ``scheduler="capacity"``: the Capacity Scheduler, node-locality-delay ``node_delay`` ("on")
    or -1 with an additional rack delay of 0 ("off")."""
    status = sh(DSBRA + ["cluster", "status", "--json", "--state-dir", str(STATE_DIR)], check=False)
    if status.returncode == 0 and '"down"' not in status.stdout:
        cluster_down()
    if scheduler == "capacity":
        # off: no rack-local wait (-1) and no off-switch one either (an additional rack delay of
        # 0; at -1 the off-switch wait would fall back to the locality wait factor)
        delay = ["--scheduler", "capacity", "--node-locality-delay",
                 str(node_delay if mode == "on" else -1), "--rack-locality-additional-delay",
                 "-1" if mode == "on" else "0"]
    elif scheduling == "continuous":
        ms = str(delay_ms if mode == "on" else -1)
        delay = ["--continuous-scheduling", "--locality-delay-node-ms", ms,
                 "--locality-delay-rack-ms", ms, "--locality-delay-node", "-1",
                 "--locality-delay-rack", "-1"]
    else:
        threshold = "1.0" if mode == "on" else "-1"
        delay = ["--locality-delay-node", threshold, "--locality-delay-rack", threshold]
    sh(DSBRA + ["cluster", "up", "--state-dir", str(STATE_DIR), *CLUSTER, *delay])
    return json.loads(sh(DSBRA + ["cluster", "env", "--json", "--state-dir", str(STATE_DIR)]).stdout)


FS_APP = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FSAppAttempt"
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


def _ms(stamp: str) -> int:
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)


def scheduler_log(rm_log: str, since_ms: int) -> dict:
    """What the Fair Scheduler logged at TRACE/DEBUG: every offer an application declined
    ([ms, node, allowed level, priority, job id]), every container it allocated ([ms,
    container, host, job id]) and every one completed ([ms, container])."""
    out: dict[str, list] = {"declines": [], "allocations": [], "completions": []}
    with open(rm_log, errors="replace") as f:
        for line in f:
            if m := DECLINE.match(line):
                out["declines"].append([_ms(m.group(1)), m.group(2), m.group(3),
                                        int(m.group(4)), "job_" + m.group(5)])
            elif m := ALLOCATE.match(line):
                out["allocations"].append([_ms(m.group(1)), m.group(3), m.group(4),
                                           "job_" + m.group(2)])
            elif m := COMPLETE.match(line):
                out["completions"].append([_ms(m.group(1)), m.group(2)])
    return {k: [row for row in v if row[0] >= since_ms] for k, v in out.items()}


# --- the Capacity Scheduler's ground truth (see the module docstring) -------------------------
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
            out["heartbeats"].append([_ms(m.group(1)), node, free])
        elif m := CS_TRY.match(line):
            out["tries"].append([_ms(m.group(1)), m.group(2), "job_" + m.group(3),
                                 int(m.group(4)), m.group(5)])
            answered.add(m.group(3))
            tries_here += 1
        elif m := CS_SKIP_APP.match(line):
            answered.add(m.group(2))
        elif m := CS_CONSIDERED.match(line):
            app = m.group(2)
            if node is not None and app not in answered:
                out["declines"].append([_ms(m.group(1)), node, free, tries_here, "job_" + app])
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
        self.rm_url, self.max_time_s, self.keep_raw = rm_url, max_time_s, keep_raw
        self.records: dict[str, dict[tuple, list]] = {}
        self.raw: list[dict] = []
        self.requests = 0
        self.errors: list[str] = []

    def poll(self) -> None:
        import requests

        try:
            apps = requests.get(f"{self.rm_url}/ws/v1/cluster/apps",
                                params={"states": "ACCEPTED,RUNNING"}, timeout=10).json()
        except (requests.RequestException, ValueError) as e:
            self.errors.append(str(e)[:200])
            return
        for app in ((apps or {}).get("apps") or {}).get("app") or []:
            app_id = app["id"]
            self.requests += 1
            try:
                reply = requests.get(
                    f"{self.rm_url}/ws/v1/cluster/scheduler/app-activities/{app_id}",
                    params={"actions": "refresh,get", "maxTime": str(self.max_time_s)},
                    headers={"Accept": "application/json"}, timeout=10).json()
            except (requests.RequestException, ValueError) as e:
                self.errors.append(str(e)[:200])
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


def make_data(nn_url: str, hot: int, cold: int, lines: int) -> tuple[list[str], list[str]]:
    from hdfs import InsecureClient

    client = InsecureClient(nn_url, user="root")
    client.delete("/validate", recursive=True)
    client.makedirs("/validate")
    hot_paths = [f"/validate/hot-{i}" for i in range(hot)]
    cold_paths = [f"/validate/cold-{i}" for i in range(cold)]
    for i, p in enumerate(hot_paths):
        client.write(p, grep_lines(lines, i, match_rate=0.0), replication=1)
    for i, p in enumerate(cold_paths):
        client.write(p, grep_lines(lines, 100 + i, match_rate=0.0), replication=2)
    return hot_paths, cold_paths


def run(mode: str, scheduling: str, delay_ms: int, jobs: int, gap_s: float, lines: int,
        keep: bool, tag: str, ground_truth: bool, scheduler: str = "fair",
        node_delay: int = 4) -> dict:
    capacity = scheduler == "capacity"
    env = cluster_up(mode, scheduling, delay_ms, scheduler, node_delay)
    activities = AppActivities(env["rm"]) if capacity and ground_truth else None
    if ground_truth:
        (debug_capacity_scheduler if capacity else trace_scheduler)(env["rm"])
    hot, cold = make_data(env["namenode"], 3, 24, lines)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    start_ms = int(time.time() * 1000)
    collector = Collector(ep, since_ms=start_ms,
                          node_locality_delay=(node_delay if mode == "on" else -1)
                          if capacity else None)
    settings = collector.settings()
    # the "on" D for both modes, so that the two runs are measured with the same ruler
    if capacity:  # min(nodes, node-locality-delay) missed opportunities, one per heartbeat
        cap = min(settings.nodes, node_delay) * settings.heartbeat_s
    else:
        cap = (delay_ms / 1000 if scheduling == "continuous"
               else settings.nodes * settings.heartbeat_s)
    rnd = random.Random(7)
    args = [["grep", ",".join(hot + rnd.sample(cold, 3)), f"/validate/out-{i}", "XYZ"]
            for i in range(jobs)]
    polls = 0

    def tick(_runs) -> None:
        nonlocal polls
        collector.poll()
        if activities is not None:
            activities.poll()
        polls += 1

    runs = submit_spaced(args, gap_s, tick, state_dir=STATE_DIR)
    results = [r.wait(timeout=60, check=False) for r in runs]
    polls += collector.poll_until_read([j for r in results for j in r.job_ids], timeout_s=120)
    obs = collector.take()
    end_ms = int(time.time() * 1000)
    settings = collector.settings(refresh=True)
    files = read_files(ep, [o.path for o in obs if o.path])
    raw = {"tag": tag, "mode": mode, "scheduling": "heartbeat" if capacity else scheduling,
           "delay_ms": delay_ms, "jobs": jobs,
           "gap_s": gap_s, "D_cap_s": cap, "hot": hot,
           "round_trip_s": settings.heartbeat_s + collector.am_heartbeat_s + LAUNCH_ALLOWANCE_S,
           "window_ms": [start_ms, end_ms], "polls": polls, "http_requests": ep.stats.requests,
           "failed_jobs": sum(1 for r in results if not r.ok),
           "settings": asdict(settings), "rm_nodes": collector.nodes(refresh=True),
           "samples": collector.samples, "obs": [asdict(o) for o in obs],
           "containers": {j: [asdict(c) for c in cs] for j, cs in collector.containers.items()},
           # the Capacity Scheduler's locality skips as the Collector read them (the daemon's
           # path), and what each kind of request cost
           "skips": collector.skips, "http": asdict(ep.stats),
           "files": files}
    if capacity:
        raw |= {"scheduler": "capacity", "node_delay": node_delay if mode == "on" else -1}
    if ground_truth and capacity:
        with open(env["logs"]["resourcemanager"], errors="replace") as f:
            raw["cs_log"] = capacity_log(f, start_ms)
        raw["cs_activities"] = activities.as_json()
    elif ground_truth:
        raw |= scheduler_log(env["logs"]["resourcemanager"], start_ms)
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw_path = RESULTS / f"validate_attribution-{tag}-{mode}.raw.json.gz"
    with gzip.open(raw_path, "wt") as f:
        json.dump(raw, f, separators=(",", ":"))
    if not keep:
        cluster_down()
    return summarize(raw_path)


def summarize(raw_path: Path) -> dict:
    """Attribute a recorded run with the current rule (no cluster needed); write its summary."""
    summary, tasks = attribute_record(raw_path, with_tasks=True)
    out = RESULTS / raw_path.name.replace(".raw.json.gz", ".json")
    out.write_text(json.dumps({"summary": summary, "tasks": tasks}, indent=1) + "\n")
    print(json.dumps(summary))
    return summary


def attribute_record(raw_path: Path, with_tasks: bool = False):
    """The summary of a recorded run under the current rule (and its per-task rows)."""
    with gzip.open(raw_path, "rt") as f:
        raw = json.load(f)
    obs = [MapObservation(**o) for o in raw["obs"]]
    containers = {j: [Container(**c) for c in cs] for j, cs in raw["containers"].items()}
    blocks = map_to_blocks(obs, raw["files"])
    block_of, row_path = blocks.block_of, [path for *_, path in blocks.rows]
    grace = settle = raw["round_trip_s"]
    params = AttributionParams(raw["D_cap_s"], grace, settle,
                               passed_over=raw.get("scheduler") != "capacity")
    samples = [(int(t), {str(h): int(v) for h, v in free.items()}) for t, free in raw["samples"]]
    skips = {j: [(int(t), str(h)) for t, h in v] for j, v in raw.get("skips", {}).items()}
    per_task, m = compute_blocks(obs, containers, raw["rm_nodes"], block_of, len(row_path), params,
                                 raw["window_ms"][1], samples, skips)
    hot_set = set(raw["hot"])
    summary = {k: raw[k] for k in ("tag", "mode", "scheduling", "delay_ms", "jobs", "gap_s",
                                   "failed_jobs", "polls", "http_requests", "D_cap_s")}
    # each MapReduce job's span, first container launch to last container end (grep runs two)
    spans = sorted((max(c.end_ms or raw["window_ms"][1] for c in cs) - min(c.start_ms for c in cs))
                   / 1000 for cs in containers.values() if cs)
    summary["mr_job_span_s_p50_max"] = [spans[len(spans) // 2], spans[-1]] if spans else None
    summary |= {"grace_s": grace, "settle_s": settle}
    for name, sel in (("hot", lambda p: p in hot_set), ("cold", lambda p: p not in hot_set),
                      ("all", lambda p: True)):
        idx = [r for r, p in enumerate(row_path) if sel(p)]
        n = int(m.tasks[idx].sum())
        mm = int(m.delayed_tasks[idx].sum())
        dt = float(m.delay_s[idx].sum())
        summary[name] = {"blocks": len(idx), "N": n, "M": mm, "DT_s": round(dt, 2),
                         "M_over_N": round(mm / n, 3) if n else None,
                         "DT_per_task_s": round(dt / n, 3) if n else None,
                         "DT_per_block_s": round(dt / len(idx), 3) if idx else None,
                         "nonlocal": int(m.nonlocal_tasks[idx].sum())}
    if raw.get("scheduler") == "capacity":
        summary |= {"scheduler": "capacity", "node_delay": raw["node_delay"]}
        http = raw.get("http") or {}  # what the Collector's app-activities reads cost
        summary["app_activities"] = {
            "requests": http.get("by_kind", {}).get("rm.app-activities", 0),
            "seconds": round(http.get("seconds_by_kind", {}).get("rm.app-activities", 0.0), 3),
            "bytes": http.get("bytes_by_kind", {}).get("rm.app-activities", 0),
            "all_requests": http.get("requests", 0),
            "skips": sum(len(v) for v in raw.get("skips", {}).values())}
        if "cs_log" in raw:
            summary["truth"] = score_against_capacity(raw, obs, block_of, row_path, hot_set,
                                                      per_task, params)
    elif "allocations" in raw:
        summary["truth"] = score_against_scheduler(raw, obs, block_of, row_path, hot_set,
                                                   per_task, params)
    waits = sorted(o.launch_ms - o.scheduled_ms for o in obs)
    summary["wait_ms_p50_p90_max"] = [waits[len(waits) // 2], waits[int(len(waits) * .9)],
                                      waits[-1]] if waits else None
    summary["unmapped_tasks"] = blocks.unmapped
    summary["tasks_judged_on_rm_samples"] = int(per_task["sampled"].sum())
    tasks = [{"attempt_id": o.attempt_id, "path": o.path, "wait_s": round(float(w), 3),
              "delay_s": round(float(d), 3), "delayed": bool(x), "local": bool(lo)}
             for o, w, d, x, lo in zip(obs, per_task["wait_s"], per_task["delay_s"],
                                       per_task["delayed"], per_task["local"])]
    return (summary, tasks) if with_tasks else summary


def _spread(values: list[float]) -> str:
    values = sorted(values)
    mid = values[len(values) // 2] if len(values) % 2 else \
        (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2
    return f"{mid:.3g} [{values[0]:.3g}, {values[-1]:.3g}]" if len(values) > 1 else f"{mid:.3g}"


MAP_PRIORITY = 20  # MapReduce's RMContainerAllocator.PRIORITY_MAP
# recorded after the measured-lead rule (commit f23bf2e) was frozen, and not looked at while
# designing it: the rule's held-out score (busy6, light3 and busy7, held out from the
# application-level rule of commit ea405a2, were designed on for this one)
HELD_OUT = {"busy8", "light4"}
#: the Capacity Scheduler's runs recorded after its rule (the Collector's app-activities skips,
#: no "passed over" evidence; commit "Issue 22: on the Capacity Scheduler the Collector reads")
#: was frozen; cs-busy1-4 were looked at while designing it
CAPACITY_FROZEN = ("cs-busy5", "cs-busy6")


def score_against_scheduler(raw: dict, obs: list, block_of: list[int], row_path: list[str],
                            hot_set: set, per_task: dict, params: AttributionParams) -> dict:
    """The rule against the scheduler's own log. A declined map offer is a usable slot when
    the node had room then (by the RM's own allocations and completions; the heartbeat path
    also offers full nodes). A task truly waited for locality when its application declined
    such a slot on a node without the task's split during its wait; its true delay runs from
    the first such decline to its launch, capped at D."""
    host_of = {c: h for _, c, h, _ in raw["allocations"]}
    events: dict[str, list[tuple[int, int]]] = {}
    for ms, c, h, _ in raw["allocations"]:
        events.setdefault(h, []).append((ms, 1))
    for ms, c in raw["completions"]:
        if c in host_of:
            events.setdefault(host_of[c], []).append((ms, -1))
    # every container is granted at one size (maps', reduces' and AMs' asks are equal, or
    # all rounded up to the scheduler's increment: 1024 MB in the runs recorded before issue 27)
    size = max(o["mem_mb"] for o in raw["obs"])
    caps = {str(n.get("nodeHostName")): (n.get("totalResource") or {}).get("memory", 0) // size
            for n in raw["rm_nodes"]}

    def has_room(host: str, ms: int) -> bool:
        # a container allocated at the same millisecond as the decline came after it
        used = sum(d for t, d in events.get(host, ()) if t < ms or (t == ms and d < 0))
        return used < caps.get(host, 0)

    by_job: dict[str, list[tuple[int, str]]] = {}
    usable = 0
    for ms, node, _, priority, job in raw["declines"]:
        if priority == MAP_PRIORITY and has_room(node, ms):
            by_job.setdefault(job, []).append((ms, node))
            usable += 1
    out = {"declines": len(raw["declines"]),
           "map_declines": sum(1 for d in raw["declines"] if d[3] == MAP_PRIORITY),
           "usable_map_declines": usable}
    _, scored = _score_declines(by_job, obs, block_of, row_path, hot_set, per_task, params)
    return out | scored


def score_against_capacity(raw: dict, obs: list, block_of: list[int], row_path: list[str],
                           hot_set: set, per_task: dict, params: AttributionParams) -> dict:
    """The rule against the Capacity Scheduler's own record, scored as the Fair Scheduler's
    runs are: a decline counts when the node had room for a container then (the heartbeat's
    free memory less one container per try before it in that heartbeat); a task truly waited
    for locality when its application declined such a node, holding none of its split, during
    its wait; its true delay runs from the first such decline to its launch, capped at D.
    Scored twice: against the DEBUG log (``cs_log``) and against the app-activities API's
    off-switch-delay skips (``cs_activities``, room from the log's heartbeats), with how far
    the two agree."""
    size = max(o["mem_mb"] for o in raw["obs"])
    log = raw.get("cs_log") or {}
    by_job: dict[str, list[tuple[int, str]]] = {}
    usable = 0
    for ms, node, free, tries_before, job in log.get("declines", ()):
        if free - tries_before * size >= size:
            by_job.setdefault(job, []).append((ms, node))
            usable += 1
    out = {"declines": len(log.get("declines", ())), "usable_map_declines": usable,
           "heartbeats": len(log.get("heartbeats", ())), "tries": len(log.get("tries", ()))}
    truth_log, scored = _score_declines(by_job, obs, block_of, row_path, hot_set, per_task, params)
    out |= scored
    beats: dict[str, list[tuple[int, int]]] = {}
    for ms, node, free in log.get("heartbeats", ()):
        beats.setdefault(node, []).append((ms, free))
    acts = activity_declines(raw.get("cs_activities") or {}, raw["window_ms"][0])
    act_by_job: dict[str, list[tuple[int, str]]] = {}
    act_usable = 0
    for ms, node, job in acts:
        before = [free for t, free in beats.get(node, ()) if t <= ms]
        if not beats or (before and before[-1] >= size):
            act_by_job.setdefault(job, []).append((ms, node))
            act_usable += 1
    truth_act, act_scored = _score_declines(act_by_job, obs, block_of, row_path, hot_set,
                                            per_task, params)
    mapped = [b >= 0 for b in block_of]
    out["activities"] = {"requests": (raw.get("cs_activities") or {}).get("requests"),
                         "declines": len(acts), "usable_declines": act_usable} | act_scored
    out["truths_agree"] = {
        "both": sum(1 for a, b, k in zip(truth_log, truth_act, mapped) if a and b and k),
        "log_only": sum(1 for a, b, k in zip(truth_log, truth_act, mapped) if a and not b and k),
        "activities_only": sum(1 for a, b, k in zip(truth_log, truth_act, mapped)
                               if b and not a and k)}
    return out


def _score_declines(by_job: dict, obs: list, block_of: list[int], row_path: list[str],
                    hot_set: set, per_task: dict, params: AttributionParams):
    """(per-task truth, scores) of the rule against declines {job: [(ms, node)]}: a task truly
    waited for locality when its application declined a node holding none of its split during
    its wait; its true delay runs from the first such decline to its launch, capped at D."""
    true_delayed, true_delay = [], []
    for o in obs:
        hosts = set(o.split_hosts)
        firsts = [ms for ms, node in by_job.get(o.job_id, ())
                  if o.scheduled_ms <= ms < o.launch_ms and node not in hosts]
        true_delayed.append(bool(firsts))
        true_delay.append(min(o.launch_ms - min(firsts), params.delay_threshold_s * 1000) / 1000
                          if firsts else 0.0)
    mapped = [b >= 0 for b in block_of]
    rule = [bool(x) for x in per_task["delayed"]]
    over_grace = [w > params.grace_s for w in per_task["wait_s"]]
    both = sum(1 for r, t, k in zip(rule, true_delayed, mapped) if r and t and k)
    n_rule = sum(1 for r, k in zip(rule, mapped) if r and k)
    n_true = sum(1 for t, k in zip(true_delayed, mapped) if t and k)
    n_true_long = sum(1 for t, k, g in zip(true_delayed, mapped, over_grace) if t and k and g)
    both_long = sum(1 for r, t, k, g in zip(rule, true_delayed, mapped, over_grace)
                    if r and t and k and g)
    out = {"M_true": n_true, "M_rule": n_rule, "both": both,
           "precision": round(both / n_rule, 3) if n_rule else None,
           "recall": round(both / n_true, 3) if n_true else None,
           "recall_waits_over_grace": round(both_long / n_true_long, 3) if n_true_long else None,
           "DT_true_s": round(sum(d for d, k in zip(true_delay, mapped) if k), 2),
           "DT_rule_s": round(sum(float(d) for d, k in zip(per_task["delay_s"], mapped) if k), 2)}
    for name, sel in (("hot", lambda p: p in hot_set), ("cold", lambda p: p not in hot_set)):
        keep = [b >= 0 and sel(row_path[b]) for b in block_of]
        out[f"M_true_{name}"] = sum(1 for t, k in zip(true_delayed, keep) if t and k)
        out[f"DT_true_{name}_s"] = round(sum(d for d, k in zip(true_delay, keep) if k), 2)
    return true_delayed, out


def report() -> None:
    """Markdown: one row per run, then median [min, max] over the runs of each workload."""
    runs = [json.loads(p.read_text())["summary"]
            for p in sorted(RESULTS.glob("validate_attribution-*-o[nf]*.json"))]
    capacity = [r for r in runs if r.get("scheduler") == "capacity"]
    runs = [r for r in runs if r.get("scheduler") != "capacity"]
    _report_fair(runs)
    if capacity:
        _report_capacity(capacity)


def _report_fair(runs: list[dict]) -> None:
    print("| run | D (s) | delay scheduling | N | M hot / cold | M/N | DT (s) hot / cold "
          "| DT per block (s) hot / cold | non-local hot / cold | MR job span p50 / max (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        h, c, a = r["hot"], r["cold"], r["all"]
        print(f"| {r['tag']} | {r['D_cap_s']:g} | {r['mode']} | {a['N']} | {h['M']} / {c['M']} | "
              f"{a['M_over_N']} | {h['DT_s']} / {c['DT_s']} | {h['DT_per_block_s']} / "
              f"{c['DT_per_block_s']} | {h['nonlocal']} / {c['nonlocal']} | "
              f"{' / '.join(f'{x:.0f}' for x in r['mr_job_span_s_p50_max'])} |")
    print()
    print("| workload | D (s) | delay scheduling | runs | M/N | M/N hot | M/N cold "
          "| DT per hot block (s) | DT per cold block (s) | non-local maps |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        workload = re.sub(r"-?\d+$", "", r["tag"])  # busy1, busy2 -> busy; busyD6-1 -> busyD6
        groups.setdefault((workload, r["D_cap_s"], r["mode"]), []).append(r)
    for (workload, d, mode), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                          kv[0][2] != "off")):
        print(f"| {workload} | {d:g} | {mode} | {len(rs)} | "
              f"{_spread([r['all']['M_over_N'] for r in rs])} | "
              f"{_spread([r['hot']['M_over_N'] for r in rs])} | "
              f"{_spread([r['cold']['M_over_N'] for r in rs])} | "
              f"{_spread([r['hot']['DT_per_block_s'] for r in rs])} | "
              f"{_spread([r['cold']['DT_per_block_s'] for r in rs])} | "
              f"{_spread([r['all']['nonlocal'] for r in rs])} |")
    scored = [r for r in runs if "truth" in r]
    if scored:
        print()
        print("| run | delay scheduling | usable map declines | M true (hot / cold) | M rule | both "
              "| precision | recall | recall, waits > grace | DT true (s) | DT rule (s) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in scored:
            t = r["truth"]
            print(f"| {r['tag']} | {r['mode']} | {t['usable_map_declines']} | {t['M_true']} "
                  f"({t['M_true_hot']} / {t['M_true_cold']}) | {t['M_rule']} | {t['both']} | "
                  f"{_cell(t['precision'])} | {_cell(t['recall'])} | "
                  f"{_cell(t['recall_waits_over_grace'])} | {t['DT_true_s']} | {t['DT_rule_s']} |")
        print()
        print("| ground-truth runs | runs | M true | M rule | both | precision | recall "
              "| precision, off runs' flags counted |")
        print("|---|---|---|---|---|---|---|---|")
        for name, keep in (("designed on", lambda r: r["tag"] not in HELD_OUT),
                           ("held out (recorded after the rule was frozen)",
                            lambda r: r["tag"] in HELD_OUT)):
            rs = [r for r in scored if keep(r)]
            on = [r["truth"] for r in rs if r["mode"] == "on"]
            false_off = sum(r["truth"]["M_rule"] for r in rs if r["mode"] == "off")
            true, flagged, both = (sum(t[k] for t in on) for k in ("M_true", "M_rule", "both"))
            print(f"| {name} | {len(rs)} | {true} | {flagged} (+{false_off} off) | {both} | "
                  f"{_cell(round(both / flagged, 3) if flagged else None)} | "
                  f"{_cell(round(both / true, 3) if true else None)} | "
                  f"{_cell(round(both / (flagged + false_off), 3) if flagged + false_off else None)} |")


def _report_capacity(runs: list[dict]) -> None:
    """The Capacity Scheduler's runs, in their own tables: the counts, then the rule against
    its DEBUG log and against the app-activities API."""
    print()
    print("Capacity Scheduler runs (D = min(nodes, node-locality-delay) x heartbeat)")
    print()
    print("| run | node-locality-delay | D (s) | N | M hot / cold | M/N | DT (s) hot / cold "
          "| non-local hot / cold | MR job span p50 / max (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        h, c, a = r["hot"], r["cold"], r["all"]
        span = r["mr_job_span_s_p50_max"] or []
        print(f"| {r['tag']} {r['mode']} | {r['node_delay']} | {r['D_cap_s']:g} | {a['N']} | "
              f"{h['M']} / {c['M']} | {a['M_over_N']} | {h['DT_s']} / {c['DT_s']} | "
              f"{h['nonlocal']} / {c['nonlocal']} | {' / '.join(f'{x:.0f}' for x in span)} |")
    scored = [r for r in runs if "truth" in r]
    if not scored:
        return
    print()
    print("| run | truth | usable declines | M true (hot / cold) | M rule | both | precision "
          "| recall | recall, waits > grace | DT true (s) | DT rule (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in scored:
        for name, t, usable in (("log", r["truth"], r["truth"]["usable_map_declines"]),
                                ("activities", r["truth"]["activities"],
                                 r["truth"]["activities"]["usable_declines"])):
            print(f"| {r['tag']} {r['mode']} | {name} | {usable} | {t['M_true']} "
                  f"({t['M_true_hot']} / {t['M_true_cold']}) | {t['M_rule']} | {t['both']} | "
                  f"{_cell(t['precision'])} | {_cell(t['recall'])} | "
                  f"{_cell(t['recall_waits_over_grace'])} | {t['DT_true_s']} | {t['DT_rule_s']} |")
    print()
    print("| capacity ground-truth runs (log) | runs | M true | M rule | both | precision "
          "| recall | precision, off runs' flags counted "
          "| truths agree (both / log only / activities only) |")
    print("|---|---|---|---|---|---|---|---|---|")
    frozen = [r for r in scored if r["tag"] in CAPACITY_FROZEN]
    before = [r for r in scored if r["tag"] not in CAPACITY_FROZEN]
    for name, group in (("recorded before the rule was frozen", before),
                        ("recorded after (" + ", ".join(CAPACITY_FROZEN) + ")", frozen)):
        if not group:
            continue
        on = [r["truth"] for r in group if r["mode"] == "on"]
        false_off = sum(r["truth"]["M_rule"] for r in group if r["mode"] == "off")
        true, flagged, both = (sum(t[k] for t in on) for k in ("M_true", "M_rule", "both"))
        agree = [sum(r["truth"]["truths_agree"][k] for r in group)
                 for k in ("both", "log_only", "activities_only")]
        print(f"| {name} | {len(group)} | {true} | {flagged} (+{false_off} off) | {both} | "
              f"{_cell(round(both / flagged, 3) if flagged else None)} | "
              f"{_cell(round(both / true, 3) if true else None)} | "
              f"{_cell(round(both / (flagged + false_off), 3) if flagged + false_off else None)} | "
              f"{' / '.join(map(str, agree))} |")
    costs = [r["app_activities"] for r in runs if r.get("app_activities", {}).get("requests")]
    if costs:
        print()
        print("| app-activities reads by the Collector | runs | requests (of all) | seconds | "
              "KiB | skips read |")
        print("|---|---|---|---|---|---|")
        tot = {k: sum(c[k] for c in costs) for k in costs[0]}
        print(f"| all | {len(costs)} | {tot['requests']} ({tot['all_requests']}) | "
              f"{tot['seconds']:.2f} | {tot['bytes'] / 1024:.0f} | {tot['skips']} |")


def _cell(value) -> str:
    return "-" if value is None else str(value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mode", choices=["on", "off"])
    ap.add_argument("--scheduling", choices=["continuous", "heartbeat"], default="continuous",
                    help="time-based delay (continuous scheduling) or heartbeat-counted thresholds")
    ap.add_argument("--delay-ms", type=int, default=6000,
                    help="D with --scheduling continuous (node and rack delay), and the cap")
    ap.add_argument("--scheduler", choices=["fair", "capacity"], default="fair",
                    help="the Fair Scheduler (the rule's design) or the Capacity Scheduler")
    ap.add_argument("--node-locality-delay", type=int, default=4,
                    help="--scheduler capacity: yarn.scheduler.capacity.node-locality-delay with "
                         "--mode on (default: the bundled cluster's 4 workers, so the "
                         "min(nodes, delay) cap does not cut it); -1 with --mode off")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--gap-s", type=float, default=8.0)
    ap.add_argument("--lines", type=int, default=4000, help="grep lines per input file")
    ap.add_argument("--keep", action="store_true", help="leave the validation cluster up")
    ap.add_argument("--tag", default="busy", help="names the result files")
    ap.add_argument("--ground-truth", action="store_true",
                    help="also record every offer the Fair Scheduler declined (RM TRACE log) and "
                         "score the rule against it")
    ap.add_argument("--recompute", action="store_true",
                    help="re-attribute every recorded run (*.raw.json.gz) with the current rule")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    if args.recompute:
        for path in sorted(RESULTS.glob("validate_attribution-*.raw.json.gz")):
            summarize(path)
    if args.report:
        report()
    elif args.mode:
        run(args.mode, args.scheduling, args.delay_ms, args.jobs, args.gap_s, args.lines,
            args.keep, args.tag, args.ground_truth, args.scheduler, args.node_locality_delay)
    elif not args.recompute:
        ap.error("give --mode on|off, --recompute or --report")


if __name__ == "__main__":
    main()
