"""Does DSBRA take back copies it gave back? The simulator, on schedules whose hot file rotates.

The committed real runs (docs/benchmark.md 6.10, ``replication_changes.py``) lowered most files
after their schedule had ended, so they cannot show churn mid-schedule, and their hot file never
changed. Here the same schedule shape as 6.7's (1 GiB of 16 one-block files, 60 jobs a mean 6 s
apart, 90% of the maps on the hot file) gets a fresh hot file every ``--hot-period-s`` (a file
may come back), over ``--schedules`` schedule seeds, each run in the simulator as
compare_sim_real.py fitted it (``--fit``) over ``--seeds`` placements as static, oracle, the
reactive oracle (a block copied everywhere at its k-th job, for each ``--reactive-k``: the
yardstick of a policy that reacts to what it sees) and dsbra. Per hot period: dsbra's copies
started, replicas removed, copies started for a block that lost a replica earlier
(``raised_after_lowering``), removals with a job reading the block still to be submitted, and
dsbra's and each reactive oracle's captured share of the oracle's gain ((static - arm) /
(static - oracle), paired by run, 95% t-interval) with their extra storage. OUT/churn.json,
OUT/churn.md.

    python benchmarks/sim_churn.py --out benchmarks/results/sim-churn \\
        --fit benchmarks/results/bench-fb2009-40-quiet/sim-vs-real.json --max-am-share 0.75
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, also when imported

from choose_hotspot_schedule import BLOCK, HOT_FRACTION, sim_config  # noqa: E402

from dsbra.bench.data import DatasetPlan  # noqa: E402
from dsbra.bench.schedule import fb2009_bins  # noqa: E402
from dsbra.report import t_interval  # noqa: E402
from dsbra.sim.run import WorkloadSpec, simulate  # noqa: E402

HOT_PERIODS_S = (1e6, 120.0, 60.0)  # fixed for the whole run (6.7's), and rotating
JOBS, GAP_S, HOT_SHARE, SLOTS = 60, 6.0, 0.9, 20
REACTIVE_K = (8, 24)  # 24: the k that kept 6.7's reactive oracle within 10% extra storage


def schedule(seed: int, hot_period_s: float) -> dict:
    plan = DatasetPlan(total_bytes=1 << 30, block_bytes=BLOCK, seed=0)
    return fb2009_bins(plan, slots=SLOTS, jobs=JOBS, inter_arrival_s=GAP_S,
                       hot_fraction=HOT_FRACTION, hot_share=HOT_SHARE,
                       hot_period_s=hot_period_s, seed=seed)


def lowered_with_later_readers(result) -> int:
    """Replicas removed from a block that a job submitted after the round reads (the run's own
    job and map tables: which job read which block, and when it was submitted)."""
    submitted = dict(zip(result.jobs["job_id"].tolist(), result.jobs["submit_s"].tolist()))
    submits: dict[int, list[float]] = collections.defaultdict(list)
    for job, blk in zip(result.tasks["job_id"].tolist(), result.tasks["block_id"].tolist()):
        submits[blk].append(submitted[job])
    return sum(any(t > r["time_s"] for t in submits[blk])
               for r in result.rounds for blk in r["lowered_blocks"])


def evaluate(fit: dict, hot_period_s: float, schedules: int, seeds: int, max_am_share,
             out: Path, reactive_k=REACTIVE_K) -> dict:
    rows = {k: [] for k in ("captured", "added", "removed", "raised_after_lowering",
                            "lowered_with_later_readers", "extra_storage")}
    reactive = {k: {"captured": [], "extra_storage": []} for k in reactive_k}
    arms = {"static": ("static", None), "oracle": ("oracle", None), "dsbra": ("dsbra", None),
            **{k: ("oracle-reactive", {"min_jobs": k}) for k in reactive_k}}
    for s in range(schedules):
        path = out / f"schedule-period{hot_period_s:g}-seed{s}.json"
        path.write_text(json.dumps(schedule(s, hot_period_s), indent=1) + "\n")
        for seed in range(seeds):
            run = {arm: simulate(sim_config(fit, policy, seed, params, max_am_share),
                                 WorkloadSpec(source=f"schedule:{path}"))
                   for arm, (policy, params) in arms.items()}
            static = run["static"].summary["mean_response_s"]
            gain = static - run["oracle"].summary["mean_response_s"]
            ds = run["dsbra"].summary
            if gain > 0:
                rows["captured"].append((static - ds["mean_response_s"]) / gain)
            for k, row in reactive.items():
                if gain > 0:
                    row["captured"].append((static - run[k].summary["mean_response_s"]) / gain)
                row["extra_storage"].append(run[k].summary["extra_storage_mean"])
            rows["added"].append(ds["replicas_added"])
            rows["removed"].append(ds["replicas_removed"])
            rows["raised_after_lowering"].append(ds["raised_after_lowering"])
            rows["lowered_with_later_readers"].append(lowered_with_later_readers(run["dsbra"]))
            rows["extra_storage"].append(ds["extra_storage_mean"])
        path.unlink()  # deterministic from its seed: schedule() rebuilds it

    def interval(xs):
        return t_interval(xs) if len(xs) > 1 else None

    return {"runs": len(rows["added"]), "captured": interval(rows["captured"]),
            "reactive": {str(k): {"captured": interval(r["captured"]),
                                  "extra_storage_mean": statistics.fmean(r["extra_storage"])}
                         for k, r in reactive.items()},
            **{k: sum(rows[k]) for k in ("added", "removed", "raised_after_lowering",
                                          "lowered_with_later_readers")},
            "extra_storage_mean": statistics.fmean(rows["extra_storage"])}


def render(doc: dict) -> str:
    lines = ["# Does DSBRA take back copies it gave back? (simulator)", "", f"`{doc['command']}`", "",
             f"{JOBS} jobs a mean {GAP_S:g} s apart over 16 one-block files, {HOT_SHARE:.0%} of the "
             f"maps on the hot file; {doc['schedules']} schedule seeds x {doc['seeds']} placements per "
             f"hot period; simulator fitted by compare_sim_real.py ({doc['fit']}), maxAMShare "
             f"{doc['max_am_share']}; reactive oracle k: a block copied everywhere at its k-th "
             "job.", "",
             "| hot file changes every | runs | dsbra copies started | replicas removed | "
             "copies started for a block lowered earlier | removals with a reader still to come "
             "| dsbra: captured share [95% CI] (extra storage) | "
             + " | ".join(f"reactive oracle k={k}" for k in doc["reactive_k"]) + " |",
             "| --- | --- | --- | --- | --- | --- | --- |" + " --- |" * len(doc["reactive_k"])]

    def share(c) -> str:
        return f"{100 * c[0]:.0f}% [{100 * c[1]:.0f}, {100 * c[2]:.0f}]" if c else "-"

    for period, r in doc["periods"].items():
        label = "never (fixed)" if float(period) >= 1e6 else f"{float(period):g} s"
        lines.append(f"| {label} | {r['runs']} | {r['added']} | {r['removed']} | "
                     f"{r['raised_after_lowering']} | {r['lowered_with_later_readers']} of "
                     f"{r['removed']} | {share(r['captured'])} "
                     f"({100 * r['extra_storage_mean']:.1f}%) | "
                     + " | ".join(f"{share(x['captured'])} ({100 * x['extra_storage_mean']:.1f}%)"
                                  for x in r["reactive"].values()) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--fit", type=Path, required=True, help="a compare_sim_real.py sim-vs-real.json")
    ap.add_argument("--hot-period-s", type=float, nargs="+", default=list(HOT_PERIODS_S))
    ap.add_argument("--schedules", type=int, default=5, help="schedule seeds per hot period")
    ap.add_argument("--seeds", type=int, default=3, help="placement seeds per schedule")
    ap.add_argument("--reactive-k", type=int, nargs="+", default=list(REACTIVE_K), metavar="K",
                    help="reactive oracles: a block copied everywhere at its k-th job "
                         "(default %(default)s)")
    ap.add_argument("--max-am-share", type=float, default=None,
                    help="the queues' maxAMShare instead of the fitted cluster's")
    a = ap.parse_args()
    if not a.fit.is_file():
        ap.error(f"--fit {a.fit}: no such file")
    if a.schedules * a.seeds < 2:
        ap.error("--schedules x --seeds must be at least 2 (the interval needs a spread)")
    if min(a.reactive_k) < 1:
        ap.error("--reactive-k must be at least 1")
    if min(a.hot_period_s) <= 0:
        ap.error("--hot-period-s values must be > 0")
    fit = json.loads(a.fit.read_text())
    a.out.mkdir(parents=True, exist_ok=True)
    periods = {}
    for period in a.hot_period_s:
        periods[f"{period:g}"] = evaluate(fit, period, a.schedules, a.seeds, a.max_am_share, a.out,
                                          a.reactive_k)
        print(f"hot period {period:g} s: {periods[f'{period:g}']}", file=sys.stderr, flush=True)
    doc = {"command": "python benchmarks/sim_churn.py " + " ".join(sys.argv[1:]), "fit": str(a.fit),
           "max_am_share": a.max_am_share or fit["am"]["max_am_share"], "schedules": a.schedules,
           "seeds": a.seeds, "reactive_k": a.reactive_k, "periods": periods}
    (a.out / "churn.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.out / "churn.md").write_text(render(doc))
    print(render(doc))


if __name__ == "__main__":
    main()
