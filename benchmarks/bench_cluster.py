"""Benchmark the bundled cluster: `dsbra cluster up` time, idle RSS, 1-map grep end to end.

Runs its own cluster (own state dir, name prefix, subnet and ports) so a cluster other people
use stays untouched. Targets (issue 2): up with 4 workers <= 120 s, idle cluster <= 8 GiB RSS,
a 1-map grep job end to end <= 30 s. Every number is measured here, repeated, with its spread.

    .venv/bin/python benchmarks/bench_cluster.py --repeats 3 --jobs 5
writes benchmarks/results/cluster.json and cluster.md (this run) and appends to cluster-history.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from dsbra.bench.sitting import cluster_cli
from dsbra.cluster import cluster as cl
from dsbra.cluster import processes as procs
from dsbra.cluster.jobs import run_grep
from dsbra.stats import repeats_summary

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".dsbra" / "bench-cluster"
NET = ["--prefix", "dsbrab", "--subnet", "10.80.0.0/24", "--port-offset", "4000"]
TARGETS = {"up_seconds": 120.0, "idle_rss_gib": 8.0, "grep_1map_seconds": 30.0}


def cli(*args: str) -> subprocess.CompletedProcess:
    return cluster_cli(*args, state=STATE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="cold `up` runs")
    parser.add_argument("--jobs", type=int, default=5, help="1-map grep jobs")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds idle before measuring RSS")
    args = parser.parse_args()

    subprocess.run([sys.executable, "-m", "dsbra", "cluster", "down", "--state-dir", str(STATE)],
                   capture_output=True)
    load_before = os.getloadavg()
    up_times, down_times, rss = [], [], []
    for _ in tqdm(range(args.repeats), desc="up/down", file=sys.stderr):
        start = time.monotonic()
        cli("up", "--workers", str(args.workers), *NET)
        up_times.append(time.monotonic() - start)
        time.sleep(args.settle)
        rss.append(procs.rss_bytes(procs.state_processes(STATE.resolve())) / 2**30)
        if _ is not args.repeats - 1:
            start = time.monotonic()
            cli("down")
            down_times.append(time.monotonic() - start)

    env = json.loads(cli("env", "--json").stdout)
    cl.hdfs_client(env["namenode"], timeout=30).write(
        "/bench/in/one-block", data=b"dsbra needle line\n" * 20000, overwrite=True)
    grep_times = []
    for i in tqdm(range(args.jobs), desc="grep", file=sys.stderr):
        start = time.monotonic()
        result = run_grep("/bench/in", f"/bench/out-{i}", "needle", state_dir=STATE)
        grep_times.append(time.monotonic() - start)
        assert len(result.job_ids) == 2
    start = time.monotonic()
    cli("down", "--purge")
    down_times.append(time.monotonic() - start)

    results = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/bench_cluster.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "hadoop_version": env["hadoop_version"],
        "workers": args.workers,
        "up_seconds": repeats_summary(up_times),
        "down_seconds": repeats_summary(down_times),
        "idle_rss_gib": repeats_summary(rss),
        "grep_1map_seconds": repeats_summary(grep_times),
        "targets": TARGETS,
        "loadavg_1m": {"before": round(load_before[0], 1), "after": round(os.getloadavg()[0], 1)},
        "notes": "up: `dsbra cluster up` wall time from a cold start (cluster down, new HDFS) until every "
                 "DataNode and NodeManager registered, HDFS left safe mode and the JHS answers. RSS: sum "
                 f"of VmRSS of all cluster JVMs after {args.settle:.0f} s idle. grep: the examples' grep "
                 "(a 1-map search job and a 1-map sort job, each with 1 reduce) over one one-block file, "
                 "client JVM start to exit. The machine is shared with other work: expect noise.",
    }
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "cluster.json").write_text(json.dumps(results, indent=2) + "\n")
    with open(out / "cluster-history.jsonl", "a") as history:  # every run, to see the spread across runs
        history.write(json.dumps(results) + "\n")
    rows = [(key, results[key], TARGETS.get(key)) for key in ("up_seconds", "down_seconds", "idle_rss_gib",
                                                              "grep_1map_seconds")]
    lines = [f"# Bundled cluster benchmark ({results['measured_at']})", "",
             f"Command: `{results['command']}`; Hadoop {results['hadoop_version']}, {args.workers} workers, "
             f"{results['machine']['cpus']} CPUs, 1-minute load average {results['loadavg_1m']['before']} before, "
             f"{results['loadavg_1m']['after']} after (other work shares the machine).", "",
             "| metric | median | min | max | runs | target |", "| --- | --- | --- | --- | --- | --- |"]
    for key, value, target in rows:
        verdict = "" if target is None else f"<= {target} ({'met' if value['max'] <= target else 'NOT met'})"
        lines.append(f"| {key} | {value['median']} | {value['min']} | {value['max']} | {value['runs']} | {verdict} |")
    lines += ["", results["notes"], ""]
    (out / "cluster.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
