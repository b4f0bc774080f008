"""Choose the real Spark sitting's hot-spot schedule in the simulator, before the sitting (issue 69).

MapReduce's hot-spot schedule (docs/benchmark.md 6.2, 20 jobs 6 s apart) is too light for Spark:
in one real static run of it (`run_bench_matrix.py --engine spark --arms static --reps 1`) a
task took 3 s node-local against 14 s rack-local (the shaped links), jobs answered in 3.7 s and
98% of the tasks ran node-local, so replication has nothing to win. A schedule is worth a
sitting only if the oracle (every file on every worker) separates from static.

Each candidate is a `dsbra bench schedule` (fb2009-bins scaled to the cluster's 8 slots, one of
the 16 files hot for the whole run) of JOBS jobs GAP s apart with HOT_SHARE of the tasks reading
the hot file; each runs in the simulator under the Spark binding as the bundled cluster runs
the replay's shared application (dsbra.sim.fitted.spark_arm_config: 7 executors, a 3 s
locality wait, a 0.5 s NodeManager heartbeat), with the task model of the given real static
runs (``--fit``), as static, oracle and the default profile (``dsbra-hold``) over ``--seeds``
placements. The choice: among the candidates where the oracle gains at least MIN_ORACLE_GAIN
of static's mean response, the one where the default captures the largest share of that gain;
where the default captures none anywhere (it is predicted slower than static), the one where
static answers quickest, so that the sitting tests that prediction where static spreads least.
OUT/choice.md, OUT/choice.json, OUT/schedule-<candidate>.json.

``--contention``: the binding as benchmarks/compare_sim_spark.py validated it on a shared sitting
(docs/benchmark.md 6.16): ``--fit`` is that sitting's static arm, the task model fitted under
the host's CPUs and the shaped links (calibration.contended_task_model) with the executors'
warm-up, the policies' copies on the links at the fitted rate, 2 streams a node. ``--candidates``
replaces the built-in list (JOBSxGAPxSHARE, e.g. 100x3x0.9).

    .venv/bin/python benchmarks/choose_spark_schedule.py --out benchmarks/results/spark-choice \\
        --fit benchmarks/results/spark-choice/pilot-static
    .venv/bin/python benchmarks/choose_spark_schedule.py --out benchmarks/results/spark-choice-long \\
        --fit benchmarks/results/bench-spark-hotspot/static --contention --candidates 100x3x0.9 ...
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from dsbra.report.runs import Run, find_runs
from dsbra.sim import calibration
from dsbra.sim.fitted import simulate_spark_arm

RESULTS = Path(__file__).resolve().parent / "results"
CANDIDATES = ((40, 3.0, 0.5), (40, 3.0, 0.9), (40, 2.0, 0.9), (60, 2.0, 0.7), (60, 2.0, 0.9),
              (60, 1.5, 0.9))
ARMS = ("static", "oracle", "dsbra-hold")
MIN_ORACLE_GAIN = 0.30
EXECUTORS, HEARTBEAT_S, WAIT_S = 7, 0.5, 3.0


def candidate(text: str) -> tuple[int, float, float]:
    """JOBSxGAPxSHARE -> (jobs, gap_s, hot_share)."""
    try:
        jobs, gap_s, share = text.split("x")
        parsed = int(jobs), float(gap_s), float(share)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected JOBSxGAPxSHARE, e.g. 100x3x0.9") from None
    if parsed[0] < 1 or parsed[1] <= 0 or not 0 < parsed[2] <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: jobs >= 1, gap > 0, 0 < share <= 1")
    return parsed


def make_schedule(path: Path, jobs: int, gap_s: float, hot_share: float) -> None:
    subprocess.run([sys.executable, "-m", "dsbra", "bench", "schedule", "--out", str(path),
                    "--jobs", str(jobs), "--seed", "0", "--slots", "8", "--inter-arrival-s", f"{gap_s:g}",
                    "--hot-fraction", "0.0625", "--hot-share", f"{hot_share:g}", "--hot-period-s", "1000000",
                    "--size", "1g", "--block-size", "64m", "--data-seed", "0"],
                   check=True, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--fit", type=Path, nargs="+", required=True,
                    help="real static runs of run_bench_matrix.py --engine spark (their tasks fit the task model)")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--contention", action="store_true",
                    help="fit and simulate with the host's CPUs, the shaped links and the copies on them "
                         "(--fit: a shared sitting's static arm)")
    ap.add_argument("--candidates", type=candidate, nargs="+", default=list(CANDIDATES),
                    metavar="JOBSxGAPxSHARE")
    a = ap.parse_args()
    if a.seeds < 1:
        ap.error("--seeds must be at least 1")
    static = [r for runs in find_runs(a.fit).values() for r in runs]
    if not static:
        ap.error(f"{' '.join(map(str, a.fit))}: no real runs to fit on")
    network = json.loads((RESULTS / "network.json").read_text())
    config = {"executors": EXECUTORS, "heartbeat_s": HEARTBEAT_S, "wait_s": WAIT_S}
    if a.contention:
        model, contention, copies = calibration.contended_spark_config(static, network, EXECUTORS)
        config |= contention | copies
    else:
        model = calibration.task_model(calibration.sitting_maps(static), calibration.local_read_mbps(network))
    a.out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for jobs, gap_s, hot_share in a.candidates:
        name = f"{jobs}jobs-gap{gap_s:g}s-share{hot_share:g}"
        schedule = a.out / f"schedule-{name}.json"
        make_schedule(schedule, jobs, gap_s, hot_share)
        means = {}
        for arm in ARMS:
            runs = [Run.load(d) for d in simulate_spark_arm(
                arm, schedule, a.out / "sim" / name / arm, a.seeds, model=model, **config)]
            means[arm] = {k: statistics.fmean(r.metrics()[k] or 0.0 for r in runs)
                          for k in ("mean_response_s", "node_locality", "extra_storage_mean")}
        st, orc, dflt = (means[arm]["mean_response_s"] for arm in ARMS)
        rows[name] = {"arms": means, "oracle_gain": (st - orc) / st,
                      "captured": (st - dflt) / (st - orc) if st > orc else None}
    eligible = {k: r for k, r in rows.items() if r["oracle_gain"] >= MIN_ORACLE_GAIN and r["captured"] is not None}
    gaining = [k for k in eligible if eligible[k]["captured"] > 0]
    if gaining:
        choice = max(gaining, key=lambda k: eligible[k]["captured"])
    else:  # the default loses everywhere: test that where static's runs are quickest (and spread least)
        choice = min(eligible, key=lambda k: eligible[k]["arms"]["static"]["mean_response_s"], default=None)
    doc = {"command": f".venv/bin/python benchmarks/choose_spark_schedule.py --out {a.out} --fit "
                      + " ".join(map(str, a.fit)) + f" --seeds {a.seeds}"
                      + (" --contention" if a.contention else "")
                      + ("" if a.candidates == list(CANDIDATES) else
                         " --candidates " + " ".join(f"{j}x{g:g}x{h:g}" for j, g, h in a.candidates)),
           "task_model": model, "config": config,
           "candidates": rows, "choice": choice}
    (a.out / "choice.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"`{doc['command']}`", "", "| candidate | static s / node % | oracle s | default s / node % "
             "/ storage % | oracle gain | default's captured share |", "| --- | --- | --- | --- | --- | --- |"]
    for name, r in rows.items():
        s, o, d = (r["arms"][arm] for arm in ARMS)
        cap = "-" if r["captured"] is None else f"{100 * r['captured']:.0f}%"
        lines.append(f"| {name}{' (chosen)' if name == choice else ''} | {s['mean_response_s']:.1f} / "
                     f"{s['node_locality']:.1f} | {o['mean_response_s']:.1f} | {d['mean_response_s']:.1f} / "
                     f"{d['node_locality']:.1f} / {d['extra_storage_mean']:.1f} | "
                     f"{100 * r['oracle_gain']:.0f}% | {cap} |")
    (a.out / "choice.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
