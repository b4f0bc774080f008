"""Issue 68's live-demand variants against static and the default (``dsbra-hold``), paired by
seed: on the 20-node hot-spot setups from a run_sim_matrix.py result set (``--matrix DIR``,
made with the variants static, oracle, dsbra-hold and the demand ones), the captured share of
the oracle's response gain, response against static and the default, extra storage (every
variant of the matrix but static, the oracles and ``dsbra``); and on 6.11's schedule copied to
20 workers (the fitted simulator of benchmarks/sim_hold_cap.py, YARN binding, AM heartbeat
0.5 s), response and node locality against static. Writes OUT/demand.json and OUT/demand.md.

    python benchmarks/sim_demand_live.py --matrix benchmarks/results/sim-demand-live/hotspot \\
        --out benchmarks/results/sim-demand-live --seeds 10
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
from dsbra.sim.variants import VARIANTS
from dsbra.stats import t_interval

FIT = Path(__file__).resolve().parent / "results" / "bench-hotspot-long-grants" / "sim-vs-real.json"
BASE_WORKERS = 4
DEMAND_VARIANTS = tuple(v for v, spec in VARIANTS.items() if spec["policy"] == "dsbra-demand")
HOTSPOT_SETUPS = ("hotspot-stress", "hotspot-stress-long")
#: the matrix's variants that are not compared: the references and the earlier default
NOT_COMPARED = ("static", "oracle", "oracle-reactive", "dsbra")


def _ci(values: list[float], k: float = 1.0, digits: int = 1) -> str:
    m, lo, hi = t_interval(values)
    return f"{k * m:+.{digits}f} [{k * lo:+.{digits}f}, {k * hi:+.{digits}f}]"


def run_scaled(fit: dict, schedule: Path, seed: int, nodes: int, variant: str) -> dict:
    """``variant`` on the scaled schedule: static and dsbra-hold as the scale studies run them;
    a demand variant as static's cluster with the variant's policy, poll and ceiling."""
    arm = "dsbra-hold" if variant == "dsbra-hold" else "static"
    cfg = scaled_arm_config(fit, arm, seed, nodes, BUNDLED_AM_HEARTBEAT_S)
    if variant in DEMAND_VARIANTS:
        spec = VARIANTS[variant]
        cfg = dataclasses.replace(cfg, policy=spec["policy"], interval_s=spec["interval_s"],
                                  policy_params=spec.get("params", {}), **spec["cluster"])
    s = simulate(cfg, WorkloadSpec(source=f"schedule:{schedule}")).summary
    return {"variant": variant, "seed": seed, "nodes": nodes,
            "mean_response_s": s["mean_response_s"], "node_locality": 100 * s["node_locality"],
            "extra_storage_mean": 100 * s["extra_storage_mean"]}


def hotspot_lines(matrix: Path) -> list[str]:
    """The hot-spot setups' table from a run_sim_matrix.py result set, paired by seed."""
    rows = json.loads((matrix / "sim-matrix-runs.json").read_text())
    lines = ["| setup | variant | captured share % | response vs static % | "
             "response vs dsbra-hold % | node locality vs static, points | "
             "extra storage mean % (max) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for setup in HOTSPOT_SETUPS:
        by = {(r["variant"], r["seed"]): r["summary"] for r in rows if r["setup"] == setup}
        seeds = sorted({s for v, s in by if v == "static"})
        for v in dict.fromkeys(r["variant"] for r in rows):
            if v in NOT_COMPARED or (v, seeds[0]) not in by:
                continue
            x, st, o, h = ([by[(name, s)] for s in seeds] for name in (v, "static", "oracle",
                                                                        "dsbra-hold"))
            share = [(a["mean_response_s"] - b["mean_response_s"])
                     / (a["mean_response_s"] - c["mean_response_s"]) for a, b, c in zip(st, x, o)]
            vs_static = [b["mean_response_s"] / a["mean_response_s"] - 1 for a, b in zip(st, x)]
            vs_hold = [b["mean_response_s"] / a["mean_response_s"] - 1 for a, b in zip(h, x)]
            loc = [b["node_locality"] - a["node_locality"] for a, b in zip(st, x)]
            lines.append(
                f"| {setup} | {v} | {_ci(share, 100, 0)} | {_ci(vs_static, 100)} | "
                + ("-" if v == "dsbra-hold" else _ci(vs_hold, 100)) + f" | {_ci(loc, 100)} | "
                f"{statistics.fmean(r['extra_storage_mean'] for r in x) * 100:.1f} "
                f"({max(r['extra_storage_max'] for r in x) * 100:.1f}) |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matrix", type=Path, required=True,
                    help="a run_sim_matrix.py --results-dir with the hot-spot setups")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=20)
    a = ap.parse_args()
    if a.seeds < 2:
        ap.error(f"--seeds must be at least 2 (intervals are paired over seeds), got {a.seeds}")
    if a.workers < BASE_WORKERS or a.workers % BASE_WORKERS:
        ap.error(f"--workers must be a multiple of {BASE_WORKERS}, got {a.workers}")
    command = "python benchmarks/sim_demand_live.py " + " ".join(sys.argv[1:])
    lines = ["# Live demand (issue 68) against static and the default", "", f"`{command}`", "",
             "Paired by seed, mean [95% t-interval]. Captured share: (static - variant) / "
             "(static - oracle) of the mean response.", "", "## The 20-node hot-spot setups",
             ""] + hotspot_lines(a.matrix)
    fit = load_fit(FIT)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / f"schedule-{a.workers}w.json"
    write_schedule(path, scaled_schedule(load_schedule(fit["schedule"]), a.workers // BASE_WORKERS))
    runs = {v: [run_scaled(fit, path, s, a.workers, v) for s in range(a.seeds)]
            for v in ("static", "dsbra-hold") + DEMAND_VARIANTS}
    path.unlink()
    static = runs["static"]
    lines += ["", f"## 6.11's schedule copied to {a.workers} workers (seeds 0-{a.seeds - 1})", "",
              "| variant | response vs static, s | node locality vs static, points | "
              "extra storage mean % |", "| --- | --- | --- | --- |"]
    for v, got in runs.items():
        if v == "static":
            continue
        lines.append(
            f"| {v} | "
            + _ci([g["mean_response_s"] - s["mean_response_s"] for g, s in zip(got, static)], digits=2)
            + " | " + _ci([g["node_locality"] - s["node_locality"] for g, s in zip(got, static)])
            + f" | {statistics.fmean(g['extra_storage_mean'] for g in got):.1f} |")
    (a.out / "demand.json").write_text(json.dumps({"command": command, "runs": runs}, indent=1)
                                       + "\n")
    (a.out / "demand.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
