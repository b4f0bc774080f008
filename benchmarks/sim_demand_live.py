"""Issue 68's live-demand variants against static and the default (``dsbra-hold``), paired by
seed: on the 20-node hot-spot setups from a run_sim_matrix.py result set (``--matrix DIR``,
made with the variants static, oracle, dsbra-hold and the demand ones), the captured share of
the oracle's response gain, response against static and the default, extra storage (every
variant of the matrix but static, the oracles and ``dsbra``); and on 6.11's schedule copied to
``--workers`` (the fitted simulator of benchmarks/sim_hold_cap.py, YARN binding, AM heartbeat
0.5 s; racks max(2, W // 30); ``--large-seeds`` over 100 workers, as
benchmarks/sim_yarn_binding.py scales it), response and node locality against static. Writes
OUT/demand.json and OUT/demand.md.

With ``--setups-matrix DIR`` (a run_sim_matrix.py result set of the paper, bundled and
fb2009-day setups with static, dsbra-hold and the demand variants) it writes instead
OUT/setups.json and OUT/setups.md: issue 68's targets for a new default (not worse than static
on every scale of 6.11 and every setup, extra storage within 5 points), per setup or scale and
variant (dsbra.bench.demand_targets).

    python benchmarks/sim_demand_live.py --matrix benchmarks/results/sim-demand-live/hotspot \\
        --out benchmarks/results/sim-demand-live --seeds 10
    python benchmarks/sim_demand_live.py --setups-matrix benchmarks/results/sim-demand-live/setups \\
        --out benchmarks/results/sim-demand-live --workers 4 20 100 600 --seeds 10 --large-seeds 3 \\
        --variants dsbra-demand dsbra-demand0.1
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

from dsbra.bench.schedule import (LARGE_SCALE_WORKERS, add_scale_study_arguments, scale_study_error,
                                  scale_study_seeds, write_scaled_schedule)
from dsbra.bench.demand_targets import (STORAGE_TARGET_PCT, markdown_table, matrix_rows, target_rows,
                                        verdicts)
from dsbra.schedule_format import load_schedule
from dsbra.sim.config import BUNDLED_AM_HEARTBEAT_S
from dsbra.sim.fitted import load_fit, scaled_arm_config
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.variants import HOLD_VARIANTS, VARIANTS
from dsbra.stats import t_interval

FIT = Path(__file__).resolve().parent / "results" / "bench-hotspot-long-grants" / "sim-vs-real.json"
BASE_WORKERS = 4
MATRIX_SETUPS = ("paper", "bundled", "fb2009-day")
DEMAND_VARIANTS = tuple(v for v, spec in VARIANTS.items() if spec["policy"] == "dsbra-demand")
HOTSPOT_SETUPS = ("hotspot-stress", "hotspot-stress-long")
#: the matrix's variants that are not compared: the references and the earlier default
NOT_COMPARED = ("static", "oracle", "oracle-reactive", "dsbra")


def _ci(values: list[float], k: float = 1.0, digits: int = 1) -> str:
    m, lo, hi = t_interval(values)
    return f"{k * m:+.{digits}f} [{k * lo:+.{digits}f}, {k * hi:+.{digits}f}]"


def run_scaled(fit: dict, schedule: Path, seed: int, nodes: int, variant: str) -> dict:
    """``variant`` on the scaled schedule: static and dsbra-hold as the scale studies run them;
    a demand variant as static's cluster with the variant's policy, poll and ceiling; a variant
    of the default (HOLD_VARIANTS) as dsbra-hold's with the variant's parameters and cluster."""
    arm = "dsbra-hold" if variant == "dsbra-hold" or variant in HOLD_VARIANTS else "static"
    cfg = scaled_arm_config(fit, arm, seed, nodes, BUNDLED_AM_HEARTBEAT_S)
    if variant in DEMAND_VARIANTS or variant in HOLD_VARIANTS:
        spec = VARIANTS[variant]
        cfg = dataclasses.replace(cfg, policy=spec["policy"],
                                  interval_s=spec.get("interval_s", cfg.interval_s),
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


def scale_runs(fit: dict, out: Path, workers: list[int], seeds: int, large_seeds: int,
               variants: tuple[str, ...]) -> dict[str, list[dict]]:
    """Per variant (static, dsbra-hold and ``variants``) its runs on 6.11's schedule copied to
    each of ``workers``, seeds 0.. (``large_seeds`` of them over LARGE_SCALE_WORKERS)."""
    runs: dict[str, list[dict]] = {v: [] for v in ("static", "dsbra-hold") + variants}
    for w in workers:
        path = write_scaled_schedule(out, load_schedule(fit["schedule"]), w, BASE_WORKERS)
        for v, got in runs.items():
            for seed in range(scale_study_seeds(w, seeds, large_seeds)):
                got.append(run_scaled(fit, path, seed, w, v))
                print(f"{w} workers, {v}, seed {seed}: mean response "
                      f"{got[-1]['mean_response_s']:.2f} s", flush=True)
        path.unlink()
    return runs


def scale_lines(runs: dict[str, list[dict]], workers: int) -> list[str]:
    """The table of 6.11's schedule copied to ``workers``: each variant against static, paired
    by seed."""
    at = {v: [g for g in got if g["nodes"] == workers] for v, got in runs.items()}
    static = at["static"]
    lines = ["", f"## 6.11's schedule copied to {workers} workers (seeds 0-{len(static) - 1})", "",
             "| variant | response vs static, s | node locality vs static, points | "
             "extra storage mean % |", "| --- | --- | --- | --- |"]
    for v, got in at.items():
        if v == "static":
            continue
        lines.append(
            f"| {v} | "
            + _ci([g["mean_response_s"] - s["mean_response_s"] for g, s in zip(got, static)], digits=2)
            + " | " + _ci([g["node_locality"] - s["node_locality"] for g, s in zip(got, static)])
            + f" | {statistics.fmean(g['extra_storage_mean'] for g in got):.1f} |")
    return lines


def setups_lines(command: str, table: list[dict]) -> list[str]:
    """setups.md: the target table and each variant's verdict."""
    lines = ["# Live demand (issue 68): the targets for a new default across scales and setups",
             "", f"`{command}` on the result set of `run_sim_matrix.py` (commands.md)", "",
             "6.11's schedule copied to W workers (W / 4 copies, racks max(2, W // 30), the "
             "fitted simulator, YARN binding, AM heartbeat 0.5 s; seeds 0..); the paper, bundled "
             "and fb2009-day setups of run_sim_matrix.py (YARN binding, seeds 100..). Paired by "
             "seed, mean [95% t-interval]; response in percent of the paired run's. Not worse "
             "than static: the response interval does not lie above zero. Storage: the mean "
             f"extra storage at most {STORAGE_TARGET_PCT:g}% of the data set.", ""]
    lines += markdown_table(table) + [""]
    for v, verdict in verdicts(table).items():
        if verdict["meets_every_target"]:
            lines.append(f"- {v}: meets every target.")
        else:
            lines.append(f"- {v}: worse than static on "
                         + ("; ".join(verdict["worse_than_static_on"]) or "none")
                         + f"; storage over {STORAGE_TARGET_PCT:g}% on "
                         + ("; ".join(verdict["storage_over_target_on"]) or "none") + ".")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    inputs = ap.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--matrix", type=Path,
                        help="a run_sim_matrix.py --results-dir with the hot-spot setups")
    inputs.add_argument("--setups-matrix", type=Path,
                        help="a run_sim_matrix.py --results-dir with " + ", ".join(MATRIX_SETUPS))
    ap.add_argument("--out", type=Path, required=True)
    add_scale_study_arguments(ap, 5, [20], BASE_WORKERS, " for 6.11's schedule")
    ap.add_argument("--variants", nargs="+", default=list(DEMAND_VARIANTS),
                    choices=DEMAND_VARIANTS + HOLD_VARIANTS,
                    help="the demand variants (or the default's) run beside static and dsbra-hold")
    a = ap.parse_args()
    if error := scale_study_error(a.seeds, a.large_seeds, a.workers, BASE_WORKERS):
        ap.error(error)
    command = "python benchmarks/sim_demand_live.py " + " ".join(sys.argv[1:])
    a.out.mkdir(parents=True, exist_ok=True)
    runs = scale_runs(load_fit(FIT), a.out, a.workers, a.seeds, a.large_seeds, tuple(a.variants))
    if a.setups_matrix:
        rows = [{**r, "setup": f"6.11 at {r['nodes']} workers"} for got in runs.values() for r in got]
        rows.sort(key=lambda r: r["nodes"])  # the scales in order, each's variants as run
        rows += matrix_rows(json.loads((a.setups_matrix / "sim-matrix-runs.json").read_text()),
                            MATRIX_SETUPS)
        table = target_rows(rows)
        (a.out / "setups.json").write_text(json.dumps(
            {"command": command, "rows": rows, "targets": table, "verdicts": verdicts(table)},
            indent=1) + "\n")
        lines = setups_lines(command, table)
        (a.out / "setups.md").write_text("\n".join(lines) + "\n")
    else:
        lines = ["# Live demand (issue 68) against static and the default", "", f"`{command}`", "",
                 "Paired by seed, mean [95% t-interval]. Captured share: (static - variant) / "
                 "(static - oracle) of the mean response.", "", "## The 20-node hot-spot setups",
                 ""] + hotspot_lines(a.matrix)
        for w in a.workers:
            lines += scale_lines(runs, w)
        (a.out / "demand.json").write_text(json.dumps({"command": command, "runs": runs}, indent=1)
                                           + "\n")
        (a.out / "demand.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
