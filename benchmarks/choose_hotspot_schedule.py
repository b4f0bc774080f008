"""Choose the real benchmark's hot-spot schedule in the simulator, before any real run (issue 26).

A schedule is worth replaying against the real cluster only if replication *can* help there:
the reactive oracle (a block copied to every node the moment enough jobs ask for it) must
capture at least half of the oracle's gain on mean response while adding at most 10% storage.
Today's loaded schedule has mild hot spots (10% of the files hot), and on a 16-file data set
10% extra storage is about three extra replicas: the gain must sit on a file or two. And the
gain must be worth measuring: the oracle must gain at least MIN_ORACLE_GAIN of static's mean
response (on 2 cores a job's ApplicationMaster start-up is most of a small job's response).

Every candidate is a `dsbra bench schedule` (fb2009-bins, the hot files fixed for the whole
run) with its own data set size (1 or 2 GiB of 64 MiB one-block files), load (jobs and mean
gap) and ``hot_share`` (the share of maps reading the hot files, 1/16 of the data set); each
runs in the simulator as
compare_sim_real.py fitted it to the real cluster (``--fit``: its sim-vs-real.json: task model,
map slots per node, heartbeat, ApplicationMaster start-up), over ``--seeds`` placements, as
static, oracle, oracle-reactive with min_jobs k in REACTIVE_K, dsbra and scarlett. Per
candidate and arm: each seed's captured share of the oracle's gain, (static - arm) / (static -
oracle), paired by seed, with a 95% t-interval, and the mean extra storage. The chosen
candidate: among those where the oracle gains enough and a reactive oracle within the storage
bound captures at least CAPTURE_BAR, the one whose captured share's lower bound is highest;
OUT/choice.json, OUT/choice.md, OUT/<candidate>/schedule.json.

    .venv/bin/python benchmarks/choose_hotspot_schedule.py --out benchmarks/results/hotspot-choice \\
        --fit benchmarks/results/bench-fb2009-40-loaded/sim-vs-real.json --slots 20

``--size`` and ``--load JOBS:GAP`` (each repeatable) try other data set sizes and loads than
SIZES_GIB and LOADS, e.g. a longer schedule: ``--size 1 --load 40:6 --load 60:6``; there more
files reach k jobs, so ``--reactive-k`` should reach past REACTIVE_K (docs/benchmark.md 6.7).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

from dsbra.bench.data import DatasetPlan
from dsbra.bench.schedule import fb2009_bins
from dsbra.policy.profiles import PRE_HOLD_PROFILE
from dsbra.sim.fitted import BLOCK, HOT_FRACTION, fitted_config
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.stats import t_interval

SIZES_GIB = (1, 2)                      # run_bench_matrix.py's data set, and twice it
LOADS = ((40, 3.0), (20, 6.0))          # jobs, mean gap s: the loaded schedule, and half its jobs
HOT_SHARES = (0.5, 0.7, 0.9)
HOT_PERIOD_S = 1e6                      # longer than any run: the same files hot throughout
REACTIVE_K = (1, 2, 3, 5, 8)
STORAGE_BOUND, CAPTURE_BAR, MIN_ORACLE_GAIN = 0.10, 0.50, 0.10


def arms(reactive_k=REACTIVE_K) -> dict[str, tuple[str, dict | None]]:
    """The simulated arms: policy and parameters, a reactive oracle per min_jobs k."""
    return {"static": ("static", None), "oracle": ("oracle", None),
            "dsbra": ("dsbra", {"profile": PRE_HOLD_PROFILE}),
            "scarlett": ("scarlett", None),
            **{f"oracle-reactive{k}": ("oracle-reactive", {"min_jobs": k}) for k in reactive_k}}


def evaluate(schedule: Path, fit: dict, seeds: int, max_am_share: float | None = None,
             reactive_k=REACTIVE_K) -> dict:
    """Per arm: each seed's mean response and extra storage, and the captured shares."""
    per_arm = {}
    for arm, (policy, params) in arms(reactive_k).items():
        runs = [simulate(fitted_config(fit, policy, seed, params, max_am_share),
                         WorkloadSpec(source=f"schedule:{schedule}")).summary
                for seed in range(seeds)]
        per_arm[arm] = {"response_s": [r["mean_response_s"] for r in runs],
                        "node_locality": [r["node_locality"] for r in runs],
                        "extra_storage": [r["extra_storage_mean"] for r in runs]}
    static, oracle = per_arm["static"]["response_s"], per_arm["oracle"]["response_s"]
    gain = [s - o for s, o in zip(static, oracle)]
    for arm, row in per_arm.items():
        if arm in ("static", "oracle"):
            continue
        shares = [(s - a) / g for s, a, g in zip(static, row["response_s"], gain) if g > 0]
        row["captured"] = t_interval(shares) if shares else None
        row["extra_storage_mean"] = statistics.fmean(row["extra_storage"])
    per_arm["oracle_gain_s"] = t_interval(gain)
    per_arm["oracle_gain_share"] = statistics.fmean(g / s for g, s in zip(gain, static))
    return per_arm


def best_reactive(result: dict) -> tuple[str, tuple] | None:
    """The reactive oracle variant within the storage bound that captures the most."""
    within = [(arm, result[arm]["captured"]) for arm in result if arm.startswith("oracle-reactive")
              and result[arm]["captured"] and result[arm]["extra_storage_mean"] <= STORAGE_BOUND]
    return max(within, key=lambda x: x[1][0]) if within else None


def load(text: str) -> tuple[int, float]:
    """``JOBS:GAP``, e.g. ``40:6``: a schedule of 40 jobs arriving a mean 6 s apart."""
    try:
        jobs, gap = text.split(":")
        parsed = int(jobs), float(gap)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not JOBS:GAP, e.g. 40:6") from None
    if parsed[0] < 1 or not parsed[1] > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: jobs must be >= 1 and the gap > 0 s")
    return parsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--fit", type=Path, required=True, help="a compare_sim_real.py sim-vs-real.json")
    ap.add_argument("--slots", type=int, required=True,
                    help="the schedule's --slots: the map slots the real ResourceManager reports")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--size", dest="sizes", type=int, action="append", metavar="GIB",
                    help="a data set size to try, GiB of 64 MiB files (repeatable; default "
                         + " ".join(map(str, SIZES_GIB)) + ")")
    ap.add_argument("--load", dest="loads", type=load, action="append", metavar="JOBS:GAP",
                    help="a load to try, jobs and mean gap in seconds (repeatable; default "
                         + " ".join(f"{j}:{g:g}" for j, g in LOADS) + ")")
    ap.add_argument("--reactive-k", type=int, nargs="+", default=list(REACTIVE_K), metavar="K",
                    help="the reactive oracle's min_jobs values to try (default %(default)s); a "
                         "longer schedule brings more files to k jobs, so more storage at each k")
    ap.add_argument("--max-am-share", type=float, default=None,
                    help="the queues' maxAMShare (run_bench_matrix.py --max-am-share) instead of "
                         "the fitted cluster's: more AMs at once leave fewer map containers")
    a = ap.parse_args()
    fit = json.loads(a.fit.read_text())
    if a.seeds < 2:
        ap.error("--seeds must be at least 2 (the intervals need a spread)")
    if min(a.reactive_k) < 1:
        ap.error("--reactive-k values must be at least 1")
    if any(gib < 1 for gib in a.sizes or ()):
        ap.error("--size must be at least 1 GiB")
    rows = {}
    for gib, (jobs, gap), hs in itertools.product(a.sizes or SIZES_GIB, a.loads or LOADS, HOT_SHARES):
        name = f"{gib}g-{jobs}jobs-gap{gap:g}s-share{hs:g}"
        plan = DatasetPlan(total_bytes=gib << 30, block_bytes=BLOCK, seed=0)
        doc = fb2009_bins(plan, slots=a.slots, jobs=jobs, inter_arrival_s=gap, hot_fraction=HOT_FRACTION,
                          hot_share=hs, hot_period_s=HOT_PERIOD_S, seed=0)
        path = a.out / name / "schedule.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        rows[name] = {"params": doc["params"], "size_gib": gib, **evaluate(path, fit, a.seeds, a.max_am_share, a.reactive_k)}
        best = best_reactive(rows[name])
        print(f"{name}: oracle gain {rows[name]['oracle_gain_s'][0]:.1f} s "
              f"({100 * rows[name]['oracle_gain_share']:.0f}%); best reactive within "
              f"{STORAGE_BOUND:.0%}: {best[0] + ' %.0f%%' % (100 * best[1][0]) if best else 'none'}",
              file=sys.stderr, flush=True)
    reaching = {n: best_reactive(r) for n, r in rows.items() if r["oracle_gain_share"] >= MIN_ORACLE_GAIN}
    reaching = {n: b for n, b in reaching.items() if b and b[1][0] >= CAPTURE_BAR}
    chosen = max(reaching, key=lambda n: reaching[n][1][1]) if reaching else None
    doc = {"command": "python benchmarks/choose_hotspot_schedule.py " + " ".join(sys.argv[1:]),
           "fit": str(a.fit), "max_am_share": a.max_am_share or fit["am"]["max_am_share"],
           "storage_bound": STORAGE_BOUND, "capture_bar": CAPTURE_BAR,
           "min_oracle_gain": MIN_ORACLE_GAIN,
           "chosen": chosen, "candidates": rows}
    (a.out / "choice.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.out / "choice.md").write_text(render(doc))
    print(f"chosen: {chosen}" if chosen else "no candidate reaches the bar", flush=True)


def render(doc: dict) -> str:
    def ci(x) -> str:
        return f"{100 * x[0]:.0f}% [{100 * x[1]:.0f}, {100 * x[2]:.0f}]" if x else "-"

    lines = ["# The hot-spot schedule, chosen in the simulator", "", f"`{doc['command']}`", "",
             f"Simulator fitted by compare_sim_real.py ({doc['fit']}), the queues' maxAMShare "
             f"{doc.get('max_am_share', 'as fitted')}. Captured: (static - arm) / "
             f"(static - oracle) on mean response, per placement seed, 95% t-interval. The bar: a "
             f"reactive oracle within {doc['storage_bound']:.0%} mean extra storage captures >= "
             f"{doc['capture_bar']:.0%}, where the oracle gains at least {doc['min_oracle_gain']:.0%} of "
             f"static's mean response. Chosen: **{doc['chosen'] or 'none'}**.", "",
             "| candidate | static s | oracle gain s (% of static) | best reactive within bound (storage) | dsbra (storage) "
             "| scarlett (storage) |", "| --- | --- | --- | --- | --- | --- |"]
    for name, r in doc["candidates"].items():
        best = best_reactive(r)
        reactive = f"{best[0]}: {ci(best[1])} ({100 * r[best[0]]['extra_storage_mean']:.1f}%)" if best else "none"
        lines.append(f"| {name} | {statistics.fmean(r['static']['response_s']):.1f} | "
                     f"{r['oracle_gain_s'][0]:.1f} [{r['oracle_gain_s'][1]:.1f}, {r['oracle_gain_s'][2]:.1f}] "
                     f"({100 * r['oracle_gain_share']:.0f}%) | "
                     f"{reactive} | {ci(r['dsbra']['captured'])} ({100 * r['dsbra']['extra_storage_mean']:.1f}%) | "
                     f"{ci(r['scarlett']['captured'])} ({100 * r['scarlett']['extra_storage_mean']:.1f}%) |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
