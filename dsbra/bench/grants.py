"""The level the Fair Scheduler granted each map's container at, recorded during a sitting
(`run_bench_matrix.py --record-grants`, the cluster up): the ResourceManager's FSAppAttempt
logger is raised to DEBUG, where it logs each allocation ("allocate: applicationAttemptId=...
container=... host=... type=..."), and after each run RUN/grants.json gets those of the run's
jobs and every map attempt of them from the JobHistoryServer. dsbra.bench.analysis.classify
reads them offline."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from dsbra.errors import HadoopError
from dsbra.hadoop.rest import ResourceManager

FS_APP = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FSAppAttempt"
ALLOCATE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) DEBUG .*allocate: "
                      r"applicationAttemptId=appattempt_(\d+_\d+)_\d+ container=(\S+) host=(\S+) type=(\w+)")


def debug_allocations(rm_url: str) -> None:
    """Raise the ResourceManager's FSAppAttempt logger to DEBUG, where it logs every allocation
    with its locality level (until the ResourceManager restarts)."""
    try:
        ResourceManager(rm_url).set_log_level(FS_APP, "DEBUG")
    except HadoopError as exc:
        raise SystemExit(str(exc)) from None


def log_time_ms(stamp: str) -> int:
    """A log4j time stamp ("2026-11-27 15:18:16,409", local time) in epoch milliseconds."""
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)


def allocations(rm_log: Path, jobs: set[str], since_ms: int) -> list[list]:
    """[ms, container, host, job, level] of every allocation the log holds for ``jobs`` at or
    after ``since_ms``."""
    out = []
    with open(rm_log, errors="replace") as f:
        for line in f:
            m = ALLOCATE.match(line)
            if m and f"job_{m.group(2)}" in jobs and (ms := log_time_ms(m.group(1))) >= since_ms:
                out.append([ms, m.group(3), m.group(4), f"job_{m.group(2)}", m.group(5)])
    return out


def record(run_dir: Path, env: dict, ep) -> dict:
    """RUN/grants.json for a finished run on the cluster still up: the allocations of the run's
    jobs and their map attempts ([bench job, attempt, container, node, launch ms])."""
    summary = json.loads((run_dir / "summary.json").read_text())
    t0 = summary["t0_wall_ms"]
    ours = {j["id"]: j["name"].removeprefix("bench-") for j in ep.jhs.jobs(finished_since_ms=t0)
            if j["name"].startswith("bench-job")}
    attempts = []
    for job_id, name in sorted(ours.items()):
        for task in ep.jhs.tasks(job_id):
            doc = ep.jhs.get_json(f"/ws/v1/history/mapreduce/jobs/{job_id}/tasks/{task['id']}/attempts")
            for a in doc["taskAttempts"]["taskAttempt"]:
                attempts.append([name, a["id"], a["assignedContainerId"], a["nodeHttpAddress"].split(":")[0],
                                 a["startTime"]])
    doc = {"t0_wall_ms": t0, "jobs": ours,
           "allocations": allocations(Path(env["logs"]["resourcemanager"]), set(ours), t0),
           "attempts": attempts}
    (run_dir / "grants.json").write_text(json.dumps(doc) + "\n")
    return doc
