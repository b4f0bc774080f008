#!/usr/bin/env python3
"""Validate the delay attribution of ``dsbra observe`` on a real cluster.

    .venv/bin/python benchmarks/validate_attribution.py --mode off
    .venv/bin/python benchmarks/validate_attribution.py --mode on
    .venv/bin/python benchmarks/validate_attribution.py --report   # table of both runs

Each mode brings up its *own* bundled cluster (state dir ``.dsbra/validate``, bridge ``dsv0``,
subnet 10.93.0.0/24, master ports +300; the main cluster is not touched) with the Fair
Scheduler's node and rack locality thresholds at 1.0 (on) or -1 (off), and runs the same
busy workload with hot blocks: 3 hot one-block files (replication 1) read by every job, 24
cold one-block files (replication 2), ``--jobs`` grep jobs each reading the 3 hot files and
3 cold ones drawn with a fixed seed, submitted ``--gap-s`` apart. A ``Collector`` polls while
they run; then the window is attributed with the same D cap in both modes (the "on" value,
nodes x 1.0 x heartbeat) so the two runs are measured by the same ruler. Expected: M and DT
near zero with delay scheduling off; with it on they rise and concentrate on the hot blocks.
Results: benchmarks/results/validate_attribution-<tag>-<mode>.json. Two workloads were run:

    ... --tag busy  --mode off|on --jobs 8 --gap-s 8     # 3-5 jobs at once, slots always short
    ... --tag light --mode off|on --jobs 6 --gap-s 25    # 1-2 jobs at once, room to decline
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsbra.cluster.jobs import submit_job  # noqa: E402
from dsbra.observe.collector import Collector, Endpoints  # noqa: E402
from dsbra.observe.window import build_round  # noqa: E402

STATE_DIR = ROOT / ".dsbra" / "validate"
CLUSTER = ["--prefix", "dsv", "--subnet", "10.93.0.0/24", "--port-offset", "300"]
RESULTS = ROOT / "benchmarks" / "results"
DSBRA = [sys.executable, "-m", "dsbra"]
PRINTABLE = "".join(chr(c) for c in range(33, 127) if chr(c) not in "\t\\")


def sh(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True)
    if check and proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc


def cluster_down() -> None:
    """Our own validation cluster only; a second try finishes a partly failed tear-down."""
    if sh(DSBRA + ["cluster", "down", "--state-dir", str(STATE_DIR)], check=False).returncode:
        sh(DSBRA + ["cluster", "down", "--state-dir", str(STATE_DIR)])


def cluster_up(threshold: float) -> dict:
    status = sh(DSBRA + ["cluster", "status", "--json", "--state-dir", str(STATE_DIR)], check=False)
    if status.returncode == 0 and '"down"' not in status.stdout:
        cluster_down()
    sh(DSBRA + ["cluster", "up", "--state-dir", str(STATE_DIR), *CLUSTER,
                "--locality-delay-node", str(threshold), "--locality-delay-rack", str(threshold)])
    return json.loads(sh(DSBRA + ["cluster", "env", "--json", "--state-dir", str(STATE_DIR)]).stdout)


def grep_lines(n: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        value = "".join(rnd.choices(PRINTABLE, k=80))
        key = "".join(rnd.choices(PRINTABLE, k=10))
        lines.append(f"{key}\t{i:010d}{value}\n")
    return "".join(lines).encode()


def make_data(nn_url: str, hot: int, cold: int, lines: int) -> tuple[list[str], list[str]]:
    from hdfs import InsecureClient

    client = InsecureClient(nn_url, user="root")
    client.delete("/validate", recursive=True)
    client.makedirs("/validate")
    hot_paths = [f"/validate/hot-{i}" for i in range(hot)]
    cold_paths = [f"/validate/cold-{i}" for i in range(cold)]
    for i, p in enumerate(hot_paths):
        client.write(p, grep_lines(lines, i), replication=1)
    for i, p in enumerate(cold_paths):
        client.write(p, grep_lines(lines, 100 + i), replication=2)
    return hot_paths, cold_paths


def run(mode: str, jobs: int, gap_s: float, lines: int, keep: bool, tag: str) -> dict:
    threshold = 1.0 if mode == "on" else -1.0
    env = cluster_up(threshold)
    hot, cold = make_data(env["namenode"], 3, 24, lines)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    start_ms = int(time.time() * 1000)
    collector = Collector(ep, since_ms=start_ms)
    settings = collector.settings()
    cap = settings.nodes * 1.0 * settings.heartbeat_s  # the "on" D, for both modes
    rnd = random.Random(7)
    runs, polls, next_submit, submitted = [], 0, time.monotonic(), 0
    # reduces start after all maps, so they cannot hold slots the maps need (no deadlock)
    conf = {"mapreduce.task.files.preserve.filepattern": "job_.*",
            "mapreduce.job.reduce.slowstart.completedmaps": "1.0"}
    while submitted < jobs or any(r.poll() is None for r in runs):
        if submitted < jobs and time.monotonic() >= next_submit:
            inputs = ",".join(hot + rnd.sample(cold, 3))
            runs.append(submit_job(["grep", inputs, f"/validate/out-{submitted}", "XYZ"],
                                   conf=conf, state_dir=STATE_DIR))
            submitted += 1
            next_submit += gap_s
        collector.poll()
        polls += 1
        time.sleep(2.0)
    results = [r.wait(timeout=60, check=False) for r in runs]
    job_ids = [j for r in results for j in r.job_ids]
    for _ in range(60):
        collector.poll()
        polls += 1
        if all(j in collector.done_jobs for j in job_ids):
            break
        time.sleep(2.0)
    obs = collector.take()
    end_ms = int(time.time() * 1000)
    doc = build_round(collector, obs, window_start_ms=start_ms, window_end_ms=end_ms,
                      delay_threshold_s=cap, detail=True)
    hot_set = set(hot)
    summary = {"mode": mode, "locality_threshold": threshold, "jobs": jobs, "gap_s": gap_s,
               "failed_jobs": sum(1 for r in results if not r.ok), "polls": polls,
               "http_requests": ep.stats.requests, "D_cap_s": cap,
               "grace_s": doc["observe"]["grace_s"], "settle_s": doc["observe"]["settle_s"],
               "job_seconds": sorted(round(r.seconds, 1) for r in results)}
    for name, sel in (("hot", lambda b: b["path"] in hot_set),
                      ("cold", lambda b: b["path"] not in hot_set),
                      ("all", lambda b: True)):
        rows = [b for b in doc["blocks"] if sel(b)]
        n = sum(b["tasks"] for b in rows)
        m = sum(b["delayed_tasks"] for b in rows)
        dt = sum(b["delay_s"] for b in rows)
        nonlocal_ = sum(b["nonlocal_tasks"] for b in rows)
        summary[name] = {"blocks": len(rows), "N": n, "M": m, "DT_s": round(dt, 2),
                         "M_over_N": round(m / n, 3) if n else None,
                         "DT_per_task_s": round(dt / n, 3) if n else None,
                         "nonlocal": nonlocal_}
    waits = sorted(o.launch_ms - o.scheduled_ms for o in obs)
    summary["wait_ms_p50_p90_max"] = [waits[len(waits) // 2], waits[int(len(waits) * .9)],
                                      waits[-1]] if waits else None
    summary["unmapped_tasks"] = doc["observe"]["unmapped_tasks"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary["tag"] = tag
    out = RESULTS / f"validate_attribution-{tag}-{mode}.json"
    out.write_text(json.dumps({"summary": summary, "round": doc}, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    if not keep:
        cluster_down()
    return summary


def report() -> None:
    print("| workload | delay scheduling | jobs (gap s) | blocks | N | M | DT (s) | M/N | DT/N (s) "
          "| non-local | wait p50/p90/max (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(RESULTS.glob("validate_attribution-*-o*.json")):
        s = json.loads(path.read_text())["summary"]
        mode = s["mode"]
        for part in ("hot", "cold", "all"):
            r = s[part]
            print(f"| {s.get('tag', '?')} | {mode} ({part}) | {s['jobs']} ({s['gap_s']:g}) | "
                  f"{r['blocks']} | {r['N']} | {r['M']} | "
                  f"{r['DT_s']} | {r['M_over_N']} | {r['DT_per_task_s']} | {r['nonlocal']} | "
                  f"{'/'.join(map(str, s['wait_ms_p50_p90_max'] or [])) if part == 'all' else ''} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mode", choices=["on", "off"])
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--gap-s", type=float, default=8.0)
    ap.add_argument("--lines", type=int, default=4000, help="grep lines per input file")
    ap.add_argument("--keep", action="store_true", help="leave the validation cluster up")
    ap.add_argument("--tag", default="busy", help="names the result files")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    if args.report:
        report()
    elif args.mode:
        run(args.mode, args.jobs, args.gap_s, args.lines, args.keep, args.tag)
    else:
        ap.error("give --mode on|off or --report")


if __name__ == "__main__":
    main()
