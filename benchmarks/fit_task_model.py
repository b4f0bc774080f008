"""Fit the simulator's per-map cost model to the real bundled cluster's measured map times.

Source: every map observation of the committed recorded runs
(benchmarks/results/validate_attribution-*.raw.json.gz, ``obs``: launch_ms, finish_ms, locality,
length bytes). The simulator's model is ``task_overhead_s + MB x (cpu_s_per_mb + 1 / read MB/s
of the locality)``; least squares per locality gives the overhead (intercept) and the per-MB
cost where the input lengths vary enough to identify a slope, and the residuals say how much of
a map's time the model leaves unexplained.

    .venv/bin/python benchmarks/fit_task_model.py [--out benchmarks/results/task-model-fit.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
LOCALITIES = ("NODE_LOCAL", "RACK_LOCAL", "OFF_SWITCH")
MB = 1 << 20


def load(paths: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seconds launch->finish, MB read, locality index) of every finished map."""
    secs, mbs, loc = [], [], []
    for p in paths:
        for o in json.load(gzip.open(p))["obs"]:
            if o.get("finish_ms") and o.get("launch_ms") and o.get("locality") in LOCALITIES:
                secs.append((o["finish_ms"] - o["launch_ms"]) / 1000)
                mbs.append(o["length"] / MB)
                loc.append(LOCALITIES.index(o["locality"]))
    return np.array(secs), np.array(mbs), np.array(loc)


def fit(secs: np.ndarray, mbs: np.ndarray, loc: np.ndarray) -> dict:
    out: dict = {"maps": int(len(secs)), "by_locality": {}}
    for i, name in enumerate(LOCALITIES):
        s, m = secs[loc == i], mbs[loc == i]
        if not len(s):
            continue
        q1, med, q3 = np.percentile(s, [25, 50, 75])
        row = {"maps": int(len(s)), "median_s": med, "iqr_s": [q1, q3],
               "mean_s": float(s.mean()), "input_mb_range": [float(m.min()), float(m.max())]}
        if np.ptp(m) > 1e-6:  # a slope is identifiable only if the inputs differ in size
            slope, icpt = np.polyfit(m, s, 1)
            row.update(overhead_s=float(icpt), s_per_mb=float(slope))
            resid = s - (icpt + slope * m)
        else:
            row.update(overhead_s=float(med), s_per_mb=None)
            resid = s - med
        row["residual_mad_s"] = float(np.median(np.abs(resid)))
        row["residual_p90_abs_s"] = float(np.percentile(np.abs(resid), 90))
        out["by_locality"][name] = {k: (float(v) if isinstance(v, np.floating) else v)
                                    for k, v in row.items()}
    node = out["by_locality"].get("NODE_LOCAL")
    if node:
        out["task_overhead_s"] = node["overhead_s"]
        out["nonlocal_extra_s"] = {
            name: r["median_s"] - node["median_s"]
            for name, r in out["by_locality"].items() if name != "NODE_LOCAL"}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="*", type=Path,
                    default=sorted(RESULTS.glob("validate_attribution-*.raw.json.gz")))
    ap.add_argument("--out", type=Path, default=RESULTS / "task-model-fit.json")
    args = ap.parse_args()
    if not args.runs:
        sys.exit("fit_task_model: no recorded runs (benchmarks/results/validate_attribution-*)")
    res = fit(*load(args.runs))
    res["runs"] = [p.name for p in args.runs]
    res["command"] = "python benchmarks/fit_task_model.py " + " ".join(sys.argv[1:])
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{res['maps']} maps from {len(args.runs)} runs")
    for name, r in res["by_locality"].items():
        print(f"{name:11s} n={r['maps']:5d} median {r['median_s']:.2f} s IQR "
              f"{r['iqr_s'][0]:.2f}-{r['iqr_s'][1]:.2f} s overhead {r['overhead_s']:.2f} s "
              f"s/MB {r['s_per_mb']} residual MAD {r['residual_mad_s']:.2f} s")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
