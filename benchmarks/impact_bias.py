"""How far the held-out A/B estimate (`dsbra impact`) is from the policy's true gain (issue 21).

On each hot-spot setup and seed, three simulated runs of one workload:

- ``static``: no policy;
- ``full``: the policy on every file (what the operator deploys after the experiment);
- ``holdout``: the policy with ``--holdout 0.5``: half of the files it raises held out.

The *true gain* per map is measured on the files the full run decided to raise, over their
maps launched after the file's first decision: full minus static (same workload, same seed, so
the same maps). The *estimate* is what `dsbra impact` reads from the holdout run: treated
minus control. Their difference is the estimator's bias: spillover (treated files' new
replicas free the slots control maps then use, and the other way round) and half a deployment
relieving the cluster less than a full one.

    python benchmarks/impact_bias.py --out benchmarks/results/impact-bias
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
from pathlib import Path

from dsbra.experiment.config import ExperimentConfig
from dsbra.experiment.design import TREATMENT
from dsbra.experiment.impact import METRICS, impact, per_file_sums
from dsbra.policy.profiles import PRE_HOLD_PROFILE
from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.setups import setup

SETUPS = ("hotspot-stress", "hotspot-stress-long")


def configs(name: str, seed: int) -> tuple[SimConfig, WorkloadSpec]:
    s = setup(name)
    cluster = dict(s["cluster"])
    cfg = SimConfig(**cluster, policy="dsbra", policy_params={"profile": PRE_HOLD_PROFILE},
                    seed=seed)
    workload = dict(s["workload"])
    return cfg, WorkloadSpec(**workload)


def true_gain(full, static) -> dict[str, float | None]:
    """Per metric, full minus static over the maps of the files the full run decided to raise,
    launched after each file's first decision."""
    decided = {f: (TREATMENT, int(round(at_s * 1000))) for f, (_, at_s) in full.decided.items()}
    out = {}
    for metric in METRICS:
        a = per_file_sums(full.maps, decided, TREATMENT).rate(metric)
        b = per_file_sums(static.maps, decided, TREATMENT).rate(metric)
        out[metric] = None if a is None or b is None else a - b
    return out


def one(name: str, seed: int, holdout: float, scratch: Path) -> dict:
    cfg, spec = configs(name, seed)
    full = simulate(cfg, spec, keep_maps=True)
    static = simulate(dataclasses.replace(cfg, policy="static"), spec, keep_maps=True)
    out_dir = scratch / f"{name}-seed{seed}"
    simulate(dataclasses.replace(cfg, experiment=ExperimentConfig(holdout=holdout, seed=seed)), spec,
             out_dir=out_dir)
    est = impact(out_dir)
    truth = true_gain(full, static)
    row = {"setup": name, "seed": seed, "decided_files_full": len(full.decided),
           "files": est["files"], "maps": est["maps"]}
    for metric in METRICS:
        e, t = est[metric]["diff"], truth[metric]
        row[metric] = {"estimate": e, "ci95": est[metric]["ci95"], "true": _r(t),
                       "bias": _r(None if e is None or t is None else e - t)}
    return row


def _r(v):
    return None if v is None else round(v, 4)


def summarize(rows: list[dict]) -> dict:
    out = {}
    for name in sorted({r["setup"] for r in rows}):
        mine = [r for r in rows if r["setup"] == name]
        out[name] = {}
        for metric in METRICS:
            pairs = [(r[metric]["estimate"], r[metric]["true"]) for r in mine
                     if r[metric]["bias"] is not None]
            bias = [e - t for e, t in pairs]
            covered = sum(1 for r in mine if r[metric]["ci95"] and r[metric]["true"] is not None
                          and r[metric]["ci95"][0] <= r[metric]["true"] <= r[metric]["ci95"][1])
            out[name][metric] = {
                "runs": len(pairs),
                "mean_estimate": _r(statistics.mean(e for e, _ in pairs)) if pairs else None,
                "mean_true": _r(statistics.mean(t for _, t in pairs)) if pairs else None,
                "mean_bias": _r(statistics.mean(bias)) if bias else None,
                "bias_sd": _r(statistics.stdev(bias)) if len(bias) > 1 else None,
                "true_inside_ci95": covered}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--setups", nargs="+", default=list(SETUPS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--holdout", type=float, default=0.5)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in a.setups:
            for seed in range(a.seeds):
                row = one(name, seed, a.holdout, Path(scratch))
                rows.append(row)
                print(json.dumps(row), flush=True)
    result = {"command": f"python benchmarks/impact_bias.py --out {a.out} --setups "
                         f"{' '.join(a.setups)} --seeds {a.seeds} --holdout {a.holdout}",
              "runs": rows, "summary": summarize(rows)}
    (a.out / "impact-bias.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
