"""Why a map ran off its data: the level at which the Fair Scheduler granted its container.

6.8 of docs/benchmark.md found dsbra's runs losing node locality on the files it did not
raise, mostly in maps launched within the locality delay, and named two Hadoop behaviours that
would give it. This script tells them apart, per map:

- its container was granted **NODE_LOCAL** on a node that does not hold the map's block: the
  scheduler granted it for another map's ask on that node (or an ask the ApplicationMaster had
  not yet withdrawn), and the ApplicationMaster, finding no map local to that node left, handed
  it to this one (RMContainerAllocator assigns by host, then rack, then any);
- its container was granted **RACK_LOCAL or OFF_SWITCH**: the job's locality delay had run out
  (the Fair Scheduler's clock per job and priority, FSAppAttempt.getAllowedLocalityLevelByTime).

Recording, during a sitting (`run_bench_matrix.py --record-grants`, the cluster up): the
ResourceManager's FSAppAttempt logger is raised to DEBUG through its /logLevel servlet, where it
logs each allocation ("allocate: applicationAttemptId=... container=... host=... type=...");
after each run RUN/grants.json gets those of the run's jobs and every map attempt of them from
the JobHistoryServer (its container, node and launch). Analysis, offline from committed runs:

    python benchmarks/container_grants.py RESULTS --baseline static-amshare0.75

writes RESULTS/container-grants.json and prints per run the maps by locality and grant level,
and each other arm's paired difference from the baseline (by repetition, 95% t-interval).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts

from first_map_wait import paired_by_rep  # noqa: E402

from dsbra.errors import HadoopError  # noqa: E402
from dsbra.hadoop.rest import ResourceManager  # noqa: E402
from dsbra.results_schema import LOCALITY_NAMES as GRANTS  # noqa: E402
from dsbra.sim.metrics import grant_counts  # noqa: E402

FS_APP = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FSAppAttempt"
ALLOCATE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) DEBUG .*allocate: "
                      r"applicationAttemptId=appattempt_(\d+_\d+)_\d+ container=(\S+) host=(\S+) type=(\w+)")
#: the two counts the analysis is about: maps off their node, by the grant that put them there
CAUSES = {"handed_on": "off-node map in a container granted NODE_LOCAL (asked for another map)",
          "delay_expired": "off-node map in a container granted RACK_LOCAL or OFF_SWITCH"}


def debug_allocations(rm_url: str) -> None:
    """Raise the ResourceManager's FSAppAttempt logger to DEBUG, where it logs every allocation
    with its locality level (until the ResourceManager restarts)."""
    try:
        ResourceManager(rm_url).set_log_level(FS_APP, "DEBUG")
    except HadoopError as exc:
        raise SystemExit(str(exc)) from None


def _ms(stamp: str) -> int:
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)


def allocations(rm_log: Path, jobs: set[str], since_ms: int) -> list[list]:
    """[ms, container, host, job, level] of every allocation the log holds for ``jobs`` at or
    after ``since_ms``."""
    out = []
    with open(rm_log, errors="replace") as f:
        for line in f:
            m = ALLOCATE.match(line)
            if m and f"job_{m.group(2)}" in jobs and (ms := _ms(m.group(1))) >= since_ms:
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


def classify(run_dir: Path) -> dict:
    """One run's maps by their locality and the level their container was granted at. A map is
    matched to its attempt by job, node and launch time (tasks.parquet's launch is the
    attempt's start). Maps of one job launched on one node in the same millisecond cannot be
    told apart that way: when their containers were granted at different levels they are
    ``ambiguous`` and left out; ``unmatched``: maps with no attempt or allocation found."""
    grants = json.loads((run_dir / "grants.json").read_text())
    t0 = grants["t0_wall_ms"]
    level = {container: lvl for _, container, _, _, lvl in grants["allocations"]}
    levels: dict[tuple, list] = {}
    for job, _, container, node, start in grants["attempts"]:
        levels.setdefault((job, node, start), []).append(level.get(container))
    tasks = pq.read_table(run_dir / "tasks.parquet", columns=["job_id", "node", "locality", "launch_s"]).to_pylist()
    locality, grant = [], []
    unmatched = ambiguous = 0
    for t in tasks:
        found = set(levels.get((t["job_id"], t["node"], t0 + round(t["launch_s"] * 1000)), [None]))
        if None in found:
            unmatched += 1
        elif len(found) > 1:
            ambiguous += 1
        else:
            locality.append(t["locality"])
            grant.append(GRANTS.index(found.pop()))
    return {"maps": len(tasks), "unmatched": unmatched, "ambiguous": ambiguous,
            **grant_counts(locality, grant)}


def paired(rows: dict[str, dict], baseline: str) -> dict[str, dict]:
    """Per arm other than ``baseline``: each cause's count minus the baseline's in the same
    repetition, as the mean with its 95% t-interval over the pairs."""
    return paired_by_rep(rows, baseline, {cause: lambda row, cause=cause: row[cause] for cause in CAUSES})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a run_bench_matrix.py results directory recorded with --record-grants")
    ap.add_argument("--baseline", default=None,
                    help="an arm (a directory of RESULTS) to pair every other arm with, by repetition")
    a = ap.parse_args()
    rows = {str(d.relative_to(a.results)): classify(d)
            for d in sorted(a.results.glob("*/rep*")) if (d / "grants.json").exists()}
    if not rows:
        raise SystemExit(f"{a.results}: no run with grants.json (record them with run_bench_matrix.py --record-grants)")
    doc = {"command": "python benchmarks/container_grants.py " + " ".join(sys.argv[1:]), "causes": CAUSES,
           "runs": rows}
    if a.baseline:
        doc["paired_with"], doc["paired"] = a.baseline, paired(rows, a.baseline)
    (a.results / "container-grants.json").write_text(json.dumps(doc, indent=1) + "\n")
    print("| run | maps | node-local | handed on | delay expired | unmatched, ambiguous |")
    for name, r in rows.items():
        node_local = sum(r["by_locality_and_grant"]["node_local"].values())
        print(f"| {name} | {r['maps']} | {node_local} | {r['handed_on']} | {r['delay_expired']} | "
              f"{r['unmatched']}, {r['ambiguous']} |")
    for arm, diff in doc.get("paired", {}).items():
        print(f"| {arm} - {a.baseline} ({diff['pairs']} pairs) | | | "
              + " | ".join(f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}]" for m, lo, hi in (diff[c] for c in CAUSES)) + " | |")


if __name__ == "__main__":
    main()
