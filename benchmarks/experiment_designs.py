"""The switchback's and the holdout's estimates against the policy's true total effect, in the
simulator (issue 45): bias and the coverage of each design's 95% interval over many seeds.

    python benchmarks/experiment_designs.py --out benchmarks/results/experiment-designs \\
        --seeds 50 --workers 2

Writes OUT/designs.json (every seed's runs and the summary) and OUT/designs.md (the table).
dsbra/bench/designs.py says what each run is and what "true" means.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from dsbra.bench.designs import METRICS, SETUPS, one, summarize
from dsbra.experiment.switchback import MIN_CONTRAST
from dsbra.policy.profiles import PRE_HOLD_PROFILE


def table(summary: dict, command: str) -> str:
    lines = ["# The experiments' designs against the true total effect", "",
             f"`{command}`", "",
             "True: the policy always on against static, same seeds (mean over seeds, 95% "
             "interval over seeds). Response as a relative difference, locality as a share, "
             "waits and map times in seconds. Coverage: the runs whose 95% interval held the "
             "seed's own true effect / the mean true effect, of the runs with an interval. "
             "switchback_queue: the switchback's response with the bias of the queue its "
             "periods share taken out (dsbra.experiment.queue_replay, docs/daemon.md \"The queue "
             "adjustment\").", "",
             "| setup | design | metric | true | estimate | bias | bias / true | intervals | "
             "covers own | covers mean |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, designs in summary.items():
        for design, metrics in designs.items():
            if design in ("guard_fired", "contrast"):
                continue
            for m, c in metrics.items():
                lines.append(
                    f"| {name} | {design} | {m} | {c['mean_true']} {c['true_ci95']} | "
                    f"{c['mean_estimate']} | {c['bias']} {c['bias_ci95']} | {c['bias_over_true']} | "
                    f"{c['intervals']}/{c['seeds']} | {c['covers_own_truth']['share']} | "
                    f"{c['covers_mean_truth']['share']} |")
    lines += ["", "The do-no-harm guard (margin 5%: the 99% interval of the mean response or of the "
              "mean map time beyond it, judged at each block's end on the jobs finished and the "
              "maps launched by then): the switchback runs in which it would have stopped the "
              "policy.",
              "", "| setup | fired |", "|---|---|"]
    lines += [f"| {name} | {d['guard_fired']['runs']} of {d['guard_fired']['of']} |"
              for name, d in summary.items()]
    if any("contrast" in d for d in summary.values()):
        lines += ["", "The switchback's contrast (mean over runs): its on periods' jobs' share of maps "
                  "launched with the policy on, minus its off periods' jobs' (dsbra.experiment.switchback; "
                  f"below {MIN_CONTRAST} `dsbra impact` says the periods are short for the jobs).", "",
                  "| setup | contrast |", "|---|---|"]
        lines += [f"| {name} | {d['contrast']} |" for name, d in summary.items() if "contrast" in d]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--period-s", type=float, default=300.0)
    ap.add_argument("--burn-in-s", type=float, default=60.0)
    ap.add_argument("--holdout", type=float, default=0.5)
    ap.add_argument("--jobs", type=int, default=None,
                    help="Jobs per run instead of the setup's 1200 (3 s apart: an hour).")
    ap.add_argument("--copy-streams", type=int, default=0,
                    help="copies as DataNode traffic, at most N from a holder at once (dsbra sim "
                         "--copy-streams); 0, the default, costs the maps nothing")
    ap.add_argument("--profile", default=PRE_HOLD_PROFILE,
                    help="DSBRA's profile (adaptive, which the committed runs up to 2026-12-02 "
                         "measured, by default; adaptive-popular is the daemon's default)")
    ap.add_argument("--inter-arrival-s", type=float, default=None,
                    help="the jobs' mean gap instead of the setups' 3 s, as many jobs as keep an hour")
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    if a.seeds < 2:
        ap.error("--seeds must be >= 2: coverage is a share over seeds")
    a.out.mkdir(parents=True, exist_ok=True)
    command = (f"python benchmarks/experiment_designs.py --out {a.out} --setups "
               f"{' '.join(a.setups)} --seeds {a.seeds} --period-s {a.period_s:g} "
               f"--burn-in-s {a.burn_in_s:g} --holdout {a.holdout:g} --workers {a.workers}"
               + (f" --jobs {a.jobs}" if a.jobs else "")
               + (f" --copy-streams {a.copy_streams}" if a.copy_streams else "")
               + (f" --profile {a.profile}" if a.profile != PRE_HOLD_PROFILE else "")
               + (f" --inter-arrival-s {a.inter_arrival_s:g}" if a.inter_arrival_s else ""))
    runs = [(name, seed) for name in a.setups for seed in range(a.seeds)]
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=a.workers) as pool:
        futures = [pool.submit(one, name, seed, a.period_s, a.burn_in_s, a.holdout, jobs=a.jobs,
                               copy_streams=a.copy_streams, profile=a.profile,
                               inter_arrival_s=a.inter_arrival_s)
                   for name, seed in runs]
        rows = []
        for k, f in enumerate(futures, 1):
            rows.append(f.result())
            r = rows[-1]
            print(f"[{k}/{len(runs)} {time.monotonic() - t0:.0f}s] {r['setup']} seed {r['seed']}: "
                  f"true response {100 * r['true']['response']:+.1f}%, switchback "
                  f"{r['switchback']['verdict']}", flush=True)
    summary = summarize(rows)
    doc = {"command": command, "metrics": list(METRICS), "wall_s": round(time.monotonic() - t0),
           "runs": rows, "summary": summary}
    (a.out / "designs.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.out / "designs.md").write_text(table(summary, command))
    print(table(summary, command))


if __name__ == "__main__":
    main()
