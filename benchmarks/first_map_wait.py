"""Where a replayed job's wait before its first map goes (issue 26, part 1).

`dsbra bench replay` measures each job from its submission to its first map's launch
(``median_first_map_wait_s``). This script splits that wait into the stages Hadoop records,
from the ResourceManager's application (``startedTime``: accepted; ``launchTime``: the AM
container launched) and the JobHistoryServer's job (AM attempt ``startTime``: MRAppMaster
running; job ``startTime``: the job initialised; the earliest map's ``startTime``: its first
map request; the earliest map attempt's ``startTime``: its first map launched):

- ``am_queue``: accepted -> AM container launched (waiting for the queue's AM share and a
  container);
- ``am_jvm``: AM container launched -> MRAppMaster started (localisation, JVM start);
- ``am_init``: MRAppMaster started -> job initialised (splits read, tasks created);
- ``am_request``: job initialised -> first map requested;
- ``map_wait``: first map requested -> first map launched (the scheduler, delay scheduling).

A run's jobs are found among the ResourceManager's applications by name (``bench-<job id>``)
within the run's time (from its ``t0_wall_ms``, or its label's timestamp, for ``wall_s``), so run it while the cluster that
ran them is up (the ResourceManager keeps the last 1000 applications). Writes RESULTS/
first-map-wait.json (per run, each stage's median and mean, how many jobs ran uber and the most
AMs that ran at once) and prints a table. With ``--baseline ARM``, each other arm's run medians are paired with the
baseline's by repetition, and each stage's mean difference is given with its 95% t-interval:
what an arm's setting (run_bench_matrix.py's AM start-up arms) changes, stage by stage.

    .venv/bin/python benchmarks/first_map_wait.py benchmarks/results/bench-fb2009-40-quiet
    .venv/bin/python benchmarks/first_map_wait.py benchmarks/results/bench-am-start-up --baseline static
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from dsbra.bench.analysis import STAGES, most_ams_at_once, paired_stages
from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout, default_state_dir
from dsbra.errors import InputError
from dsbra.observe.collector import Endpoints


def job_stages(ep: Endpoints, app: dict) -> dict[str, float]:
    """One application's stage durations in seconds, and its total (accepted -> first map)."""
    job_id = app["id"].replace("application_", "job_")
    job = ep.jhs.job(job_id)
    attempts = ep.jhs.get_json(f"/ws/v1/history/mapreduce/jobs/{job_id}/jobattempts")["jobAttempts"]["jobAttempt"]
    tasks = ep.jhs.tasks(job_id)
    first_task = min(tasks, key=lambda t: t["startTime"])
    launches = [a["startTime"] for t in tasks for a in ep.jhs.get_json(
        f"/ws/v1/history/mapreduce/jobs/{job_id}/tasks/{t['id']}/attempts")["taskAttempts"]["taskAttempt"]]
    marks = [app["startedTime"], app["launchTime"], min(a["startTime"] for a in attempts), job["startTime"],
             first_task["startTime"], min(launches)]
    out = {stage: (b - a) / 1000 for stage, a, b in zip(STAGES, marks, marks[1:])}
    out["total"] = (marks[-1] - marks[0]) / 1000
    out["uberized"] = bool(job.get("uberized"))
    return out


def run_jobs(ep: Endpoints, run_dir: Path, apps: list[dict]) -> list[dict]:
    """The run's applications: named bench-job*, accepted within the run's wall time."""
    summary = json.loads((run_dir / "summary.json").read_text())
    # the replay's epoch; runs from before it was recorded: the label's timestamp (a second earlier)
    start_ms = summary.get("t0_wall_ms") or int(summary["label"].rsplit("-", 1)[1]) * 1000
    end_ms = start_ms + int(summary["wall_s"] * 1000)
    return [a for a in apps if a["name"].startswith("bench-job") and start_ms <= a["startedTime"] <= end_ms]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a run_bench_matrix.py results directory")
    ap.add_argument("--baseline", default=None,
                    help="an arm (a directory of RESULTS) to pair every other arm with, by repetition")
    a = ap.parse_args()
    env = cl.env(StateLayout(default_state_dir()))
    ep = Endpoints.from_urls(env["rm"], env["namenode"], env["jhs"], user="root")
    apps = ep.rm.apps(states="FINISHED")
    rows = {}
    for run_dir in sorted(a.results.glob("*/rep*")):
        if not (run_dir / "summary.json").exists():
            continue
        found = run_jobs(ep, run_dir, apps)
        if not found:
            print(f"{run_dir}: its applications are no longer in the ResourceManager; skipped", file=sys.stderr)
            continue
        per_job = [job_stages(ep, app) for app in found]
        rows[str(run_dir.relative_to(a.results))] = {
            "jobs": len(per_job), "uberized_jobs": sum(j["uberized"] for j in per_job),
            "most_ams_at_once": most_ams_at_once(found),
            **{k: {"median_s": round(statistics.median(j[k] for j in per_job), 2),
                   "mean_s": round(statistics.fmean(j[k] for j in per_job), 2)} for k in (*STAGES, "total")}}
    doc = {"command": "python benchmarks/first_map_wait.py " + " ".join(sys.argv[1:]), "stages": STAGES, "runs": rows}
    if a.baseline:
        try:
            doc["paired_with"], doc["paired"] = a.baseline, paired_stages(rows, a.baseline)
        except InputError as exc:
            ap.error(str(exc))
    (a.results / "first-map-wait.json").write_text(json.dumps(doc, indent=1) + "\n")
    print("| run | jobs | uber | AMs at once | " + " | ".join(f"{k} median s" for k in (*STAGES, "total")) + " |")
    for name, r in rows.items():
        print(f"| {name} | {r['jobs']} | {r['uberized_jobs']} | {r['most_ams_at_once']} | "
              + " | ".join(f"{r[k]['median_s']:.1f}" for k in (*STAGES, "total")) + " |")
    for arm, diff in doc.get("paired", {}).items():
        print(f"| {arm} - {a.baseline} ({diff['pairs']} pairs) | | | | " + " | ".join(
            f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}]" for m, lo, hi in (diff[k] for k in (*STAGES, "total"))) + " |")


if __name__ == "__main__":
    main()
