"""What YARN's shared cache saves a Hive query on the benchmark cluster (issue 26).

Every Hive-on-MapReduce query ships hive-exec (83 MB) as its job jar: written to the job's
staging directory at the submit replication (4 here) over links shaped to 40 Mbit/s, then
downloaded by every NodeManager that runs one of the job's containers. With the shared cache
(`dsbra cluster up --shared-cache`) a query's job names the cached copy instead.

The cluster is run_bench_matrix.py's (4 workers, 2 racks, 40 Mbit/s, D = 10 s) brought up with
--shared-cache; the queries read a grep data set of their own (DATA_PATH, one 64 MiB file per
query), so the arms' data set stays as it is. One warm-up query puts hive-exec in the cache. Then
each repetition runs the same schedule twice, in alternating order: HiveServer2 started with
``--no-shared-cache`` (arm ``shipped``: every job ships the jar, as without a cache) and with
``--shared-cache`` (arm ``cached``). The schedule: ``--queries`` one-file queries ``--gap-s``
apart, each over its own 64 MiB file, so no two queries overlap and the difference is the jar's
cost, not contention. Each run waits until the 1-minute load average is below ``--max-load``
(the idle cluster stays under it) and records the load before and after; a run that had to
wait longer than 10 minutes stops the benchmark. Reported: each run's mean query response and
the paired difference (shipped - cached) per repetition with a 95% t-interval; where each job's
jar came from, read from its job conf in the JobHistoryServer.

    python benchmarks/bench_hive_shared_cache.py --out benchmarks/results/hive-shared-cache --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pyarrow.parquet as pq

from dsbra.bench.sitting import BLOCK, LAYOUT, cluster_up, dsbra, wait_for_quiet
from dsbra.cluster import cluster as cl
from dsbra.cluster.spec import SHARED_CACHE_ROOT, parse_size
from dsbra.hadoop.rest import JobHistory
from dsbra.stats import t_interval

ARMS = ("shipped", "cached")
DATA_SEED = 1
#: the queries' data set, beside run_bench_matrix's /bench/grep (the run committed on
#: 2026-11-26 read /bench/grep itself, written with this seed)
DATA_PATH = "/bench/hive-cache"


def make_schedule(out: Path, queries: int, gap_s: float) -> Path:
    """``queries`` jobs ``gap_s`` apart, job i reading data file i alone."""
    path = out / "schedule.json"
    if path.exists():
        return path
    dsbra("bench", "schedule", "--out", str(path), "--jobs", str(queries), "--slots", "20",
          "--inter-arrival-s", str(gap_s), "--seed", "1", "--size", str(parse_size(BLOCK) * queries), "--block-size", BLOCK,
          "--data-seed", str(DATA_SEED), "--path", DATA_PATH)
    doc = json.loads(path.read_text())
    prefix = doc["jobs"][0]["inputs"][0].rsplit("/", 1)[0]
    for i, job in enumerate(doc["jobs"]):
        job["inputs"], job["maps"] = [f"{prefix}/part-{i:05d}"], 1
    path.write_text(json.dumps(doc, indent=1))
    return path


def jar_sources(env: dict, hadoop_jobs: dict[str, str]) -> dict[str, str]:
    """Each schedule job's job jar: 'cache' (a /sharedcache path) or 'shipped' (its staging dir)."""
    out = {}
    for job, hadoop_id in hadoop_jobs.items():
        jar = JobHistory(env["jhs"], timeout_s=30).conf(hadoop_id)["mapreduce.job.jar"]
        out[job] = "cache" if jar.startswith(SHARED_CACHE_ROOT + "/") else "shipped"
    return out


def run(arm: str, label: str, schedule: Path, run_dir: Path, max_load: float) -> dict:
    """One replay with HiveServer2 started for ``arm``; its summary (kept: a rerun resumes)."""
    summary_path = run_dir / "summary.json"
    if summary_path.exists():
        return json.loads(summary_path.read_text())
    dsbra("bench", "hive", "stop")
    dsbra("bench", "hive", "start", "--timeout", "600", "--shared-cache" if arm == "cached" else "--no-shared-cache")
    load_before = wait_for_quiet(max_load)
    dsbra("bench", "replay", str(schedule), "--out", str(run_dir), "--label", label, "--engine", "hive",
          "--job-timeout-s", "900")
    summary = json.loads(summary_path.read_text())
    jobs = pq.read_table(run_dir / "jobs.parquet").to_pylist()
    summary |= {"arm": arm, "load_avg_start": load_before,
                "load_avg_end": [round(x, 2) for x in os.getloadavg()],
                "response_s": [round(j["response_s"], 3) for j in jobs],
                "jar_from": jar_sources(cl.env(LAYOUT), summary["hadoop_jobs"])}
    summary_path.write_text(json.dumps(summary, indent=1))
    return summary


def report(out: Path, runs: dict[str, list[dict]], args) -> dict:
    means = {arm: [sum(r["response_s"]) / len(r["response_s"]) for r in runs[arm]] for arm in ARMS}
    diff = [s - c for s, c in zip(means["shipped"], means["cached"])]
    ratio = [c / s for s, c in zip(means["shipped"], means["cached"])]
    doc = {"command": "python benchmarks/bench_hive_shared_cache.py " + " ".join(sys.argv[1:]),
           "queries": args.queries, "gap_s": args.gap_s, "reps": len(diff),
           "mean_response_s": means, "shipped_minus_cached_s": diff,
           "shipped_minus_cached_ci": t_interval(diff), "cached_over_shipped": ratio,
           "cached_over_shipped_ci": t_interval(ratio),
           "jar_from": {arm: [r["jar_from"] for r in runs[arm]] for arm in ARMS},
           "load_avg_start": {arm: [r["load_avg_start"] for r in runs[arm]] for arm in ARMS},
           "load_avg_end": {arm: [r["load_avg_end"] for r in runs[arm]] for arm in ARMS}}
    (out / "summary.json").write_text(json.dumps(doc, indent=1))
    lines = ["# Hive queries with and without YARN's shared cache", "", f"`{doc['command']}`", "",
             f"{args.queries} one-file queries {args.gap_s:g} s apart per run, {len(diff)} repetitions, "
             "the two arms in alternating order. Mean query response per run (s):", "",
             "| rep | shipped | cached | shipped - cached | jobs whose jar came from the cache (cached arm) |",
             "| --- | --- | --- | --- | --- |"]
    for i, (s, c) in enumerate(zip(means["shipped"], means["cached"])):
        from_cache = sum(v == "cache" for v in runs["cached"][i]["jar_from"].values())
        lines.append(f"| {i + 1} | {s:.1f} | {c:.1f} | {s - c:+.1f} | {from_cache}/{args.queries} |")
    ci = doc["shipped_minus_cached_ci"]
    if ci:
        lines += ["", f"Paired difference, 95% t-interval: {ci[0]:+.1f} s [{ci[1]:+.1f}, {ci[2]:+.1f}]; "
                  f"cached / shipped {doc['cached_over_shipped_ci'][0]:.2f} "
                  f"[{doc['cached_over_shipped_ci'][1]:.2f}, {doc['cached_over_shipped_ci'][2]:.2f}]."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/hive-shared-cache"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--gap-s", type=float, default=40.0)
    ap.add_argument("--max-load", type=float, default=1.0,
                    help="wait for the 1-minute load average to fall below this before each run")
    args = ap.parse_args()
    if args.reps < 2 or args.queries < 1 or args.gap_s <= 0:
        ap.error("--reps must be >= 2 (the interval needs a spread), --queries >= 1, --gap-s > 0")
    args.out.mkdir(parents=True, exist_ok=True)
    cluster_up(delay=True, seed=0, shared_cache=True)  # with run_bench_matrix's data set
    dsbra("bench", "data", "--size", str(parse_size(BLOCK) * args.queries), "--block-size", BLOCK,
          "--data-seed", str(DATA_SEED), "--path", DATA_PATH)
    schedule = make_schedule(args.out, args.queries, args.gap_s)
    warm = json.loads(schedule.read_text())
    warm["jobs"] = warm["jobs"][:1]
    (args.out / "warm-up.json").write_text(json.dumps(warm))
    run("cached", "warmup", args.out / "warm-up.json", args.out / "warm-up", args.max_load)
    runs: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for rep in range(1, args.reps + 1):
        order = ARMS if rep % 2 else ARMS[::-1]
        for arm in order:
            runs[arm].append(run(arm, f"{arm}{rep}", schedule, args.out / arm / f"rep{rep}", args.max_load))
    doc = report(args.out, runs, args)
    print(json.dumps({k: doc[k] for k in ("mean_response_s", "shipped_minus_cached_ci",
                                           "cached_over_shipped_ci")}, indent=1))


if __name__ == "__main__":
    main()
