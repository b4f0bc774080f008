"""Does the default raise cold files on Spark, and does ``read_factor`` stop it? (issue 69)

In the Spark sitting of docs/benchmark.md 6.17 the default daemon raised the hot file within
its first round, and then 4-7 cold files a run whose one or two tasks had waited: a block
read twice with both tasks waiting weighs as much delay pressure as the hot block read ten
times with two waiting. Each copy is 64 MiB on a 40 Mbit/s link beside the remote reads, and
the jobs were likely slower than static's. ``read_factor`` f raises only a block read at least
f times as often as the window's average read block.

This runs each real Spark sitting's schedule (``SCHEDULE...``) under the Spark binding as
compare_sim_spark.py validated it (the contended task model fitted on ``--fit``'s static arm,
the executors' warm-up, 2 streams a node), with the copies on their holders' links (as the
cluster pays them) and free (the simulator's default), over ``--seeds`` placements: static,
the oracle, the default (``dsbra-hold``) and the default with each ``--read-factors`` value.
Per arm: the mean response, its difference from static's and from the default's paired by
seed (mean [95% t-interval]), the captured share of the oracle's gain (over the seeds where the
oracle gains), node locality, the extra storage, and the files raised a run: all, and other
than the run's most read one (the cold raises). OUT/read-factor.md, OUT/read-factor.json,
OUT/sim/.

    .venv/bin/python benchmarks/sim_spark_read_factor.py \\
        benchmarks/results/bench-spark-hotspot/schedule.json \\
        benchmarks/results/bench-spark-hotspot-long/schedule.json \\
        --fit benchmarks/results/bench-spark-hotspot/static --out benchmarks/results/sim-spark-read-factor
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from dsbra.report.runs import Run, find_runs
from dsbra.sim import calibration
from dsbra.sim.fitted import simulate_spark_arm
from dsbra.stats import captured_share, t_interval

RESULTS = Path(__file__).resolve().parent / "results"
EXECUTORS, WAIT_S = 7, 3.0
DEFAULT = "dsbra-hold"


def raised_files(run_dir: Path) -> tuple[int, int]:
    """(blocks raised in the run, those other than its most read block): the sitting's files
    are one block each, so blocks are files."""
    raised = set()
    for blocks in pq.read_table(run_dir / "rounds.parquet", columns=["raised_blocks"]).column(0).to_pylist():
        raised.update(blocks)
    read = pq.read_table(run_dir / "tasks.parquet", columns=["block_id"]).column(0).to_numpy()
    hottest = int(np.bincount(read).argmax())
    return len(raised), len(raised - {hottest})


def arm_rows(runs: dict[str, list[Path]]) -> list[dict]:
    """Each arm's row, paired by seed with static, the oracle and the default."""
    metrics = {arm: [Run.load(d).metrics() for d in dirs] for arm, dirs in runs.items()}
    response = {arm: [m["mean_response_s"] for m in got] for arm, got in metrics.items()}
    rows = []
    for arm, got in metrics.items():
        shares = [captured_share(s, o, x) for s, o, x in
                  zip(response["static"], response["oracle"], response[arm]) if o < s]
        raised = [raised_files(d) for d in runs[arm]]
        rows.append({
            "arm": arm, "response_s": statistics.fmean(response[arm]),
            "minus_static_s": t_interval([x - s for x, s in zip(response[arm], response["static"])]),
            "minus_default_s": t_interval([x - s for x, s in zip(response[arm], response[DEFAULT])]),
            "captured": t_interval([x for x in shares if x is not None]),
            "node_locality": statistics.fmean(m["node_locality"] for m in got),
            "extra_storage": statistics.fmean(m["extra_storage_mean"] or 0.0 for m in got),
            "files_raised": statistics.fmean(r[0] for r in raised),
            "cold_files_raised": statistics.fmean(r[1] for r in raised)})
    return rows


def _ci(c, k: float = 1.0, digits: int = 1) -> str:
    return "-" if c is None else f"{k * c[0]:+.{digits}f} [{k * c[1]:+.{digits}f}, {k * c[2]:+.{digits}f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("schedules", type=Path, nargs="+", metavar="SCHEDULE")
    ap.add_argument("--fit", type=Path, required=True, help="a shared Spark sitting's static arm")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--read-factors", type=float, nargs="+", default=[1.5, 2.0, 3.0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--heartbeat-s", type=float, default=0.5,
                    help="the NodeManagers' heartbeat as compare_sim_spark.py fitted it")
    a = ap.parse_args()
    if a.seeds < 2:
        ap.error("--seeds must be at least 2 (the interval)")
    if any(f <= 0 for f in a.read_factors):
        ap.error("--read-factors must be positive")
    for schedule in a.schedules:
        if not schedule.is_file():
            ap.error(f"{schedule}: no such schedule")
    static = [r for runs in find_runs([a.fit]).values() for r in runs]
    if not static:
        ap.error(f"{a.fit}: no real runs to fit on")
    network = json.loads((RESULTS / "network.json").read_text())
    spark = calibration.contended_spark_config(static, network, EXECUTORS)
    base = {"model": spark.model, "executors": EXECUTORS, "heartbeat_s": a.heartbeat_s, "wait_s": WAIT_S,
            **spark.contention}
    arms = [("static", {}), ("oracle", {}), (DEFAULT, {})] + [
        (f"{DEFAULT}-reads{f:g}", {"read_factor": f}) for f in a.read_factors]
    cases = [("copies on links", spark.copies),
             ("copies free", {})]
    tables = []
    for schedule in a.schedules:
        for case, copies in cases:
            out = a.out / "sim" / schedule.parent.name / case.replace(" ", "-")
            runs = {name: simulate_spark_arm(name if not params else DEFAULT, schedule, out / name,
                                             a.seeds, params=params, **base, **copies)
                    for name, params in arms}
            tables.append({"schedule": str(schedule), "case": case, "arms": arm_rows(runs)})
            print(f"{schedule.parent.name}, {case}: done", flush=True)
    command = (f".venv/bin/python benchmarks/sim_spark_read_factor.py {' '.join(map(str, a.schedules))} "
               f"--fit {a.fit} --out {a.out} --read-factors {' '.join(f'{f:g}' for f in a.read_factors)} "
               f"--seeds {a.seeds} --heartbeat-s {a.heartbeat_s:g}")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "read-factor.json").write_text(json.dumps({"command": command, "tables": tables}, indent=1) + "\n")
    lines = [f"`{command}`", "", f"{a.seeds} seeds; paired by seed, mean [95% t-interval]; captured share over "
             "the seeds where the oracle is faster than static."]
    for t in tables:
        lines += ["", f"## {t['schedule']}, {t['case']}", "",
                  "| arm | response s | - static, s | - default, s | captured share % | node locality % "
                  "| extra storage % | files raised a run | cold files raised a run |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in t["arms"]:
            lines.append(f"| {r['arm']} | {r['response_s']:.2f} | {_ci(r['minus_static_s'], digits=2)} "
                         f"| {_ci(r['minus_default_s'], digits=2)} | {_ci(r['captured'], 100, 0)} "
                         f"| {r['node_locality']:.1f} | {r['extra_storage']:.1f} "
                         f"| {r['files_raised']:.1f} | {r['cold_files_raised']:.1f} |")
    (a.out / "read-factor.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
