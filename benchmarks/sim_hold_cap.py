"""The default profile's replica bounds on larger copies of 6.11's schedule (issue 43): the
fitted simulator of benchmarks/sim_yarn_binding.py (its scaled schedules, YARN binding, AM
heartbeat 0.5 s), ``dsbra-hold`` with ``replica_cap_fraction`` at 0.75 (the profile's) and lower,
and the simulator's ``dsbra-hold-*`` variants (their parameters over the profile's), each paired
by seed with static: does a tighter bound remove the other files' loss that 3/4 of the workers
brings? Writes OUT/cap.json and OUT/cap.md.

    python benchmarks/sim_hold_cap.py --out benchmarks/results/sim-hold-cap --seeds 10 \
        --variants dsbra-hold-demand0.5 dsbra-hold-demand1 dsbra-hold-demand2 \
        dsbra-hold-minp1 dsbra-hold-minp2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

from dsbra.bench.schedule import scaled_schedule
from dsbra.schedule_format import load_schedule, write_schedule
from dsbra.sim.config import BUNDLED_AM_HEARTBEAT_S
from dsbra.sim.fitted import load_fit, scaled_arm_config
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.variants import HOLD_VARIANTS, VARIANTS
from dsbra.stats import t_interval

FIT = Path(__file__).resolve().parent / "results" / "bench-hotspot-long-grants" / "sim-vs-real.json"
BASE_WORKERS = 4


def variant_params(variant: str) -> dict:
    """A variant's parameters over the profile's (its simulator ``cluster``
    ceiling is for the 20-node setups; here the profile's own ceiling holds)."""
    return {k: v for k, v in VARIANTS[variant]["params"].items() if k != "profile"}


def run(fit: dict, arm: str, schedule: Path, seed: int, nodes: int, cap: float | None,
        variant: str | None = None) -> dict:
    cfg = scaled_arm_config(fit, arm, seed, nodes, BUNDLED_AM_HEARTBEAT_S)
    params = {"replica_cap_fraction": cap} if cap is not None else {}
    if variant is not None:
        params.update(variant_params(variant))
    if params:
        cfg = dataclasses.replace(cfg, policy_params={**cfg.policy_params, **params})
    s = simulate(cfg, WorkloadSpec(source=f"schedule:{schedule}")).summary
    return {"arm": arm, "cap": cap, "variant": variant, "seed": seed, "nodes": nodes,
            "mean_response_s": s["mean_response_s"], "node_locality": 100 * s["node_locality"],
            "extra_storage_mean": 100 * s["extra_storage_mean"]}


def _ci(values: list[float], digits: int) -> str:
    m, lo, hi = t_interval(values)
    return f"{m:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--workers", type=int, nargs="+", default=[20, 100])
    ap.add_argument("--caps", type=float, nargs="+", default=[0.75, 0.25, 0.1])
    ap.add_argument("--variants", nargs="*", default=[], choices=HOLD_VARIANTS,
                    help="the default's variants to run beside the caps, at the profile's cap")
    a = ap.parse_args()
    if a.seeds < 2:
        ap.error(f"--seeds must be at least 2 (intervals are paired over seeds), got {a.seeds}")
    bad = [w for w in a.workers if w < BASE_WORKERS or w % BASE_WORKERS]
    if bad:
        ap.error(f"--workers must be multiples of {BASE_WORKERS}, got {bad[0]}")
    bad = [c for c in a.caps if not 0 < c <= 1]
    if bad:
        ap.error(f"--caps must be in (0, 1], got {bad[0]}")
    fit = load_fit(FIT)
    command = "python benchmarks/sim_hold_cap.py " + " ".join(sys.argv[1:])
    a.out.mkdir(parents=True, exist_ok=True)
    base = load_schedule(fit["schedule"])
    rows = []
    lines = ["# The default's replica cap on larger copies of 6.11's schedule", "", f"`{command}`", "",
             "Against static on the same seed: mean [95% t-interval]. A hot block's cap is "
             "max(ceil(cap x live nodes), racks, base + 1). A variant is the profile (cap 0.75) "
             "with its parameters (dsbra/sim/variants.py).", "",
             "| workers | cap or variant | response s | node locality, points | "
             "extra storage mean % |",
             "| --- | --- | --- | --- | --- |"]
    for w in a.workers:
        path = a.out / f"schedule-{w}w.json"
        write_schedule(path, scaled_schedule(base, w // BASE_WORKERS))
        static = [run(fit, "static", path, s, w, None) for s in range(a.seeds)]
        rows += static
        runs = [(f"{cap:g}", cap, None) for cap in a.caps] + [(v, None, v) for v in a.variants]
        for label, cap, variant in runs:
            held = [run(fit, "dsbra-hold", path, s, w, cap, variant) for s in range(a.seeds)]
            rows += held
            lines.append(f"| {w} | {label} | "
                         + _ci([h["mean_response_s"] - s["mean_response_s"] for h, s in zip(held, static)], 2)
                         + " | " + _ci([h["node_locality"] - s["node_locality"] for h, s in zip(held, static)], 1)
                         + f" | {statistics.fmean(h['extra_storage_mean'] for h in held):.1f} |")
            print(lines[-1], flush=True)
        path.unlink()
    (a.out / "cap.json").write_text(json.dumps({"command": command, "rows": rows}, indent=1) + "\n")
    (a.out / "cap.md").write_text("\n".join(lines) + "\n")
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
