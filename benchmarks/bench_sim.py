"""Simulator speed: a full day of FB-2009 (5,894 jobs) on 600 nodes x 8 slots, target <= 60 s
wall time; the same day on 10,000 nodes (feasibility: time and peak memory); events per second.

Each configuration runs in a fresh subprocess (so peak RSS is that run's own), ``--repeat``
times; we report min / median / max wall time. The machine is shared, so expect spread.

    .venv/bin/python benchmarks/bench_sim.py [--repeat 3] [--out benchmarks/results/sim-bench.json]

``--baseline-rev REV`` times this tree against git revision REV side by side: REV's ``dsbra/``
is extracted into a temporary directory, and each repetition runs every case once on each tree
(PYTHONPATH set to it; the order alternates between repetitions so that a drift in the
machine's load hits both), reporting per case the ratio this tree / REV of the engine's wall
time (median, min-max over the repetitions) and whether both runs measured the same.

    .venv/bin/python benchmarks/bench_sim.py --baseline-rev main --repeat 5 \
        --cases fb2009-day-600x8-static-delay fb2009-day-600x8-dsbra
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

TRACE = Path("/work/shared/traces/FB-2009_samples_24_times_1hr_0.tsv")
FB2010 = Path("/work/shared/traces/FB-2010_withInputPaths_hours00-11.tsv")
ROOT = Path(__file__).resolve().parents[1]  # the tree whose dsbra/ is timed

CASES = {
    "fb2009-day-600x8-static-delay": dict(nodes=600, racks=20, policy="static"),
    "fb2009-day-600x8-dsbra": dict(nodes=600, racks=20, policy="dsbra"),  # the default profile
    "fb2009-day-10000x8-static-delay": dict(nodes=10000, racks=250, policy="static"),
    # issue 9 item 7: a policy run within 2x of static on FB-2010 (input paths: real
    # popularity); the first 3,000 jobs (about 2.3 h) keep the tuning loop's check short
    **{f"fb2010-3000jobs-600x8-{p}": dict(nodes=600, racks=20, policy=p, trace=FB2010,
                                          jobs=3000)
       for p in ("static", "dsbra", "scarlett", "dare")},
    **{f"fb2010-600x8-{p}": dict(nodes=600, racks=20, policy=p, trace=FB2010)
       for p in ("static", "dsbra", "scarlett", "dare")},
}
DEFAULT_CASES = [c for c in CASES if not c.startswith("fb2010-600x8")]  # the 12 h runs: opt-in


def child(case: str) -> None:
    """Run one case in this process and print its measurements as JSON."""
    import dsbra
    from dsbra.sim.config import SimConfig
    from dsbra.sim.run import WorkloadSpec, simulate

    c = CASES[case]
    cfg = SimConfig(nodes=c["nodes"], slots_per_node=8, racks=c["racks"], replication=3,
                    block_size_mb=128, delay_node_s=5, delay_rack_s=5, policy=c["policy"],
                    seed=0)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(cfg, WorkloadSpec(source=f"swim:{c.get('trace', TRACE)}", jobs=c.get("jobs")))
    total = time.perf_counter() - t0
    cpu = time.process_time() - c0
    s = res.summary
    print(json.dumps({
        "case": case, "total_wall_s": total, "cpu_s": cpu, "engine_wall_s": s["wall_s"],
        "events": s["events"], "heartbeats": s["heartbeats"], "jobs": s["jobs"],
        "tasks": s["tasks"], "events_per_s": s["events"] / s["wall_s"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "node_locality": s["node_locality"], "mean_response_s": s["mean_response_s"],
        "dsbra": str(Path(dsbra.__file__).parent),
    }))


def run_child(case: str, tree: Path) -> dict:
    """One case in a fresh subprocess importing ``tree``'s dsbra package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, __file__, "--child", case], check=True,
                         capture_output=True, text=True, env=env).stdout
    m = json.loads(out.strip().splitlines()[-1])
    if Path(m["dsbra"]) != tree / "dsbra":
        raise SystemExit(f"{case}: the child imported {m['dsbra']}, not {tree / 'dsbra'}")
    return m


def extract(rev: str, into: Path) -> str:
    """``rev``'s dsbra/ package into ``into``; its full commit id."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    tar = into / "dsbra.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(tar), commit, "dsbra"],
                   check=True)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    tar.unlink()
    return commit


def compare(args) -> None:
    """Each case on this tree and on ``args.baseline_rev``, interleaved per repetition."""
    same_keys = ("events", "heartbeats", "jobs", "tasks", "node_locality", "mean_response_s")
    with tempfile.TemporaryDirectory(prefix="bench-sim-baseline-") as tmp:
        base = Path(tmp)
        commit = extract(args.baseline_rev, base)
        trees = {"baseline": base, "current": ROOT}
        runs: dict = {case: {"baseline": [], "current": []} for case in args.cases}
        for rep in range(args.repeat):
            for case in args.cases:
                order = ("baseline", "current") if rep % 2 == 0 else ("current", "baseline")
                for side in order:
                    m = run_child(case, trees[side])
                    runs[case][side].append(m)
                b, c = runs[case]["baseline"][-1], runs[case]["current"][-1]
                print(f"[{rep + 1}/{args.repeat}] {case}: engine {c['engine_wall_s']:.2f} s vs "
                      f"{b['engine_wall_s']:.2f} s baseline: "
                      f"x{c['engine_wall_s'] / b['engine_wall_s']:.3f}", flush=True)
    report = {"command": "python benchmarks/bench_sim.py " + " ".join(sys.argv[1:]),
              "baseline_rev": args.baseline_rev, "baseline_commit": commit,
              "current_tree": str(ROOT),
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "loadavg_at_end": os.getloadavg()},
              "ratio": "current / baseline, per repetition", "cases": {}}
    for case, sides in runs.items():
        report["cases"][case] = {
            **{f"{key}_ratio": spread([c[key] / b[key] for b, c in zip(sides["baseline"],
                                                                         sides["current"])])
               for key in ("engine_wall_s", "cpu_s")},
            "same_measurements": all({k: b[k] for k in same_keys} == {k: c[k] for k in same_keys}
                                     for b, c in zip(sides["baseline"], sides["current"])),
            "runs": sides,
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({case: {k: v for k, v in r.items() if k != "runs"}
                      for case, r in report["cases"].items()}, indent=2))


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", nargs="*", default=DEFAULT_CASES, choices=list(CASES))
    ap.add_argument("--out", type=Path, default=None,
                    help="default benchmarks/results/sim-bench.json, or with --baseline-rev "
                         "benchmarks/results/sim-bench-vs-baseline.json")
    ap.add_argument("--baseline-rev", help="time this tree against this git revision's dsbra/")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    if args.out is None:
        args.out = Path("benchmarks/results/sim-bench-vs-baseline.json" if args.baseline_rev
                        else "benchmarks/results/sim-bench.json")
    if args.baseline_rev:
        compare(args)
        return
    results = {}
    for rep in range(args.repeat):
        for case in args.cases:  # interleave cases so load drifts hit all of them
            m = run_child(case, ROOT)
            results.setdefault(case, []).append(m)
            print(f"[{rep + 1}/{args.repeat}] {case}: total {m['total_wall_s']:.1f} s, engine "
                  f"{m['engine_wall_s']:.1f} s, cpu {m['cpu_s']:.1f} s, "
                  f"{m['events_per_s']:.0f} events/s, peak RSS {m['peak_rss_mb']:.0f} MB",
                  flush=True)
    report = {"command": "python benchmarks/bench_sim.py " + " ".join(sys.argv[1:]),
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "loadavg_at_end": os.getloadavg()},
              "target": "fb2009 day on 600x8 <= 60 s total wall time", "cases": {}}
    for case, runs in results.items():
        walls = [r["total_wall_s"] for r in runs]
        cpus = [r["cpu_s"] for r in runs]
        report["cases"][case] = {
            "runs": runs,
            "total_wall_s": {"min": min(walls), "median": statistics.median(walls),
                             "max": max(walls)},
            "cpu_s": {"min": min(cpus), "median": statistics.median(cpus), "max": max(cpus)},
            "events_per_s_median": statistics.median(r["events_per_s"] for r in runs),
            "peak_rss_mb_max": max(r["peak_rss_mb"] for r in runs),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: {kk: v[kk] for kk in ("total_wall_s", "cpu_s", "events_per_s_median",
                                                 "peak_rss_mb_max")}
                      for k, v in report["cases"].items()}, indent=2))


if __name__ == "__main__":
    main()
