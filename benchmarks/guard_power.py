"""Does the do-no-harm guard stop a policy that does harm? In the simulator, with copies as
DataNode traffic (issue 45): a DSBRA made to churn (dsbra.bench.designs.CHURNING_POLICY:
every block with a delayed read raised to every node, lowered as soon as its demand falls) on a
workload without hot spots, per seed: static, the policy always on (the true harm), and a
switchback with the guard (where it stopped the policy, if it did).

    python benchmarks/guard_power.py --seeds 10 --jobs 300 --out benchmarks/results/guard-power

Writes OUT/guard-power.json (every seed) and prints one line per seed and the summary.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dsbra.bench.designs import guard_power_run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=300, help="jobs 8 s apart")
    ap.add_argument("--period-s", type=float, default=120.0)
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for seed in range(args.seeds):
        row = guard_power_run(seed, args.jobs, args.period_s, args.margin)
        rows.append(row)
        print(f"seed {seed}: static {row['static_response_s']:.0f} s, always on "
              f"{row['always_response_s']:.0f} s ({row['true_harm']:+.0%}); guard "
              + (f"stopped it at {row['guard_stopped_at_s']:.0f} s of {row['run_s']:.0f}"
                 if row["guard_stopped_at_s"] is not None else "never fired"))
    stopped = sum(r["guard_stopped_at_s"] is not None for r in rows)
    harmed = sum(r["true_harm"] > args.margin for r in rows)
    print(f"harm beyond the margin in {harmed} of {len(rows)} seeds; the guard stopped the "
          f"policy in {stopped} of {len(rows)}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "guard-power.json").write_text(json.dumps(
            {"args": {k: str(v) for k, v in vars(args).items()}, "seeds": rows}, indent=1))


if __name__ == "__main__":
    main()
