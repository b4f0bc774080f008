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
import json
import sys
from pathlib import Path

from dsbra.bench.churn import GAP_S, HOT_SHARE, JOBS, REACTIVE_K, evaluate

HOT_PERIODS_S = (1e6, 120.0, 60.0)  # fixed for the whole run (6.7's), and rotating


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
