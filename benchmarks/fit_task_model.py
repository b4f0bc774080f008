"""The simulator's task model on the real bundled cluster's recorded maps, and the spread it leaves.

Source: every map observation of the committed recorded runs
(benchmarks/results/validate_attribution-*.raw.json.gz, ``obs``: launch_ms, finish_ms, locality,
length bytes), whose inputs, unlike a sitting's one-block maps, are of several sizes. The model
is the one compare_sim_real.py fits on a sitting (dsbra/sim/calibration.py's ``task_model``:
``task_overhead_s + MB / read MB/s of the locality``, from the median map of each locality and
the node-local rate in ``network.json``), fitted here on these maps; the report is what it leaves
unexplained: per locality the maps' times (median, quartiles, mean), their inputs' range, and
the residuals |real - modelled seconds| (median and 90th percentile), a spread the simulator
does not model.

    .venv/bin/python benchmarks/fit_task_model.py [--out benchmarks/results/task-model-fit.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dsbra.sim import calibration

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="*", type=Path,
                    default=sorted(RESULTS.glob("validate_attribution-*.raw.json.gz")))
    ap.add_argument("--out", type=Path, default=RESULTS / "task-model-fit.json")
    args = ap.parse_args()
    if not args.runs:
        sys.exit("fit_task_model: no recorded runs (benchmarks/results/validate_attribution-*)")
    maps = calibration.recorded_maps(args.runs)
    network = json.loads((RESULTS / "network.json").read_text())
    model = calibration.task_model(maps, calibration.local_read_mbps(network))
    res = {"task_model": model} | calibration.task_model_report(maps, model)
    res["runs"] = [p.name for p in args.runs]
    res["command"] = "python benchmarks/fit_task_model.py " + " ".join(sys.argv[1:])
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{res['maps']} maps from {len(args.runs)} runs; task model: overhead {model['task_overhead_s']} s, "
          f"reads {model['read_mbps_local']} / {model['read_mbps_rack']} / {model['read_mbps_remote']} MB/s "
          "node / rack / off-rack")
    for name, r in res["by_locality"].items():
        print(f"{name:11s} n={r['maps']:5d} median {r['median_s']:.2f} s IQR "
              f"{r['iqr_s'][0]:.2f}-{r['iqr_s'][1]:.2f} s residual MAD {r['residual_mad_s']:.2f} s "
              f"p90 {r['residual_p90_abs_s']:.2f} s")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
