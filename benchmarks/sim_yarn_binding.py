"""Two questions of issue 42 for the simulator's YARN binding, on 6.11's hot-spot schedule with the
parameters compare_sim_real.py fitted on its static arm (``--fit``, default
benchmarks/results/bench-hotspot-long-grants/sim-vs-real.json):

- **the ApplicationMaster's heartbeat**: 1000 ms (Hadoop's default), 500 (the bundled
  cluster's), 100: node locality, maps handed on and delay expired, mean response, for static
  and dsbra, each paired by seed with 500 ms;
- **scale**: the schedule copied to 4, 20, 100 and 600 workers (over 100: ``--large-seeds``
  placements) at the same load per slot (W / 4
  copies, each reading its own 16 files, arrivals interleaved; racks max(2, W // 30)), static,
  dsbra (the adaptive profile), dsbra-hold (adaptive-hold, the default from 2026-12-02 to
  2026-12-07) and the oracle: the share of maps handed on, each DSBRA arm's net effect on
  response and on node locality (its hot files' maps and the others'), paired by seed, and its
  captured share of the oracle's gain. Is the other files' loss a small-cluster effect (the hot
  file on every worker) or general? Does the default keep its gain on a larger cluster?

Writes OUT/heartbeat.json, OUT/scale.json, OUT/schedule-<W>w.json (the scaled schedules) and
OUT/sim-yarn-binding.md, and prints the command that reproduces them.

    python benchmarks/sim_yarn_binding.py --out benchmarks/results/sim-yarn-binding --seeds 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from dsbra.bench.schedule import (add_scale_study_arguments, format_interval, hot_files, scale_study_error,
                                  scale_study_seeds, seed_captured, seed_paired, write_scaled_schedule)
from dsbra.schedule_format import load_schedule
from dsbra.sim.config import BUNDLED_AM_HEARTBEAT_S
from dsbra.sim.fitted import load_fit, scaled_arm_config
from dsbra.sim.run import WorkloadSpec, simulate

RESULTS = Path(__file__).resolve().parent / "results"
FIT = RESULTS / "bench-hotspot-long-grants" / "sim-vs-real.json"
AM_HEARTBEATS_S = (1.0, 0.5, 0.1)
BASE_AM_HEARTBEAT_S = BUNDLED_AM_HEARTBEAT_S
WORKERS = (4, 20, 100, 600)
BASE_WORKERS = 4  # the bundled cluster the schedule was replayed on
SCALE_ARMS = ("static", "dsbra", "dsbra-hold", "oracle")


def run_one(fit: dict, arm: str, schedule_path: Path, hot: set[int], seed: int, nodes: int,
            am_heartbeat_s: float) -> dict:
    res = simulate(scaled_arm_config(fit, arm, seed, nodes, am_heartbeat_s),
                   WorkloadSpec(source=f"schedule:{schedule_path}"))
    s, t = res.summary, res.tasks
    local = np.asarray(t["locality"]) == 0
    on_hot = np.isin(np.asarray(t["block_id"]), list(hot))
    g = s["container_grants"]
    return {"arm": arm, "seed": seed, "nodes": nodes, "am_heartbeat_s": am_heartbeat_s,
            "maps": s["tasks"], "node_locality": 100 * s["node_locality"],
            "off_node_maps": int((~local).sum()), "handed_on": g["handed_on"],
            "delay_expired": g["delay_expired"], "containers_released": g["containers_released"],
            "hot_file_node_locality": 100 * float(local[on_hot].mean()),
            "other_files_node_locality": 100 * float(local[~on_hot].mean()),
            "mean_response_s": s["mean_response_s"], "extra_storage_mean": 100 * s["extra_storage_mean"]}


MEASURES = ("node_locality", "handed_on_pct", "delay_expired_pct", "mean_response_s",
            "hot_file_node_locality", "other_files_node_locality")


def with_shares(row: dict) -> dict:
    """The row with handed-on and delay-expired maps as percent of its maps (comparable across
    cluster sizes)."""
    return {**row, "handed_on_pct": 100 * row["handed_on"] / row["maps"],
            "delay_expired_pct": 100 * row["delay_expired"] / row["maps"]}


def _mean(rows: list[dict], key: str, **match) -> str:
    vals = [r[key] for r in rows if all(r[k] == v for k, v in match.items())]
    return f"{statistics.fmean(vals):.1f}" if vals else "-"


def markdown(command: str, fit: dict, hb_rows: list[dict], scale_rows: list[dict]) -> str:
    lines = ["# The YARN binding in the simulator: the AM heartbeat and the cluster's size", "",
             f"`{command}`", "",
             f"6.11's schedule with compare_sim_real.py's fit on its static arm ({fit['slots']} slots per "
             f"node, node heartbeat {fit['heartbeat_s']} s, AM start-up {fit['am']['am_startup_s']} s, "
             f"maxAMShare {fit['am']['max_am_share']}); seeds are placements, paired across settings. "
             "Handed on / delay expired: percent of all maps run off their data in a container granted "
             "NODE_LOCAL / RACK_LOCAL or OFF_SWITCH.", "",
             "## The ApplicationMaster's heartbeat (4 workers)", "",
             "| arm | AM heartbeat s | node locality % | handed on % | delay expired % | mean response s "
             "| node locality, points vs 0.5 s | handed on, points vs 0.5 s | response s vs 0.5 s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm in ("static", "dsbra"):
        base = {"arm": arm, "am_heartbeat_s": BASE_AM_HEARTBEAT_S}
        for hb in AM_HEARTBEATS_S:
            other = {"arm": arm, "am_heartbeat_s": hb}
            lines.append(f"| {arm} | {hb:g} | " + " | ".join(
                _mean(hb_rows, k, arm=arm, am_heartbeat_s=hb) for k in
                ("node_locality", "handed_on_pct", "delay_expired_pct", "mean_response_s")) + " | "
                + " | ".join("" if hb == BASE_AM_HEARTBEAT_S
                             else format_interval(seed_paired(hb_rows, k, base, other), 2)
                             for k in ("node_locality", "handed_on_pct", "mean_response_s")) + " |")
    lines += ["", "## Scale: the same load per slot on 4 to 600 workers (AM heartbeat 0.5 s)", "",
              "| workers | arm | node locality % | handed on % | delay expired % | mean response s | "
              "hot files' maps local % | other files' maps local % | extra storage mean % |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for w in sorted({r["nodes"] for r in scale_rows}):
        for arm in SCALE_ARMS:
            lines.append(f"| {w} | {arm} | " + " | ".join(
                _mean(scale_rows, k, arm=arm, nodes=w) for k in
                ("node_locality", "handed_on_pct", "delay_expired_pct", "mean_response_s",
                 "hot_file_node_locality", "other_files_node_locality", "extra_storage_mean")) + " |")
    for arm, base_arm in (("dsbra", "static"), ("dsbra-hold", "static"), ("dsbra-hold", "dsbra")):
        if not any(r["arm"] == arm for r in scale_rows):
            continue
        lines += ["", f"{arm} against {base_arm} on the same seed, mean [95% interval]:", "",
                  "| workers | response s | node locality, points | hot files' maps, points | other files' maps, "
                  "points | handed on, points | captured share of the oracle's response gain % |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for w in sorted({r["nodes"] for r in scale_rows}):
            diff = {k: seed_paired(scale_rows, k, {"nodes": w, "arm": base_arm}, {"nodes": w, "arm": arm})
                    for k in MEASURES}
            share = format_interval(seed_captured(scale_rows, arm, nodes=w), 0) if base_arm == "static" else ""
            cells = [format_interval(diff["mean_response_s"], 2)] + [
                format_interval(diff[k]) for k in ("node_locality", "hot_file_node_locality",
                                                   "other_files_node_locality", "handed_on_pct")]
            lines.append(f"| {w} | " + " | ".join(cells) + f" | {share} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--fit", type=Path, default=FIT, help="a compare_sim_real.py sim-vs-real.json")
    add_scale_study_arguments(ap, 10, list(WORKERS), BASE_WORKERS)
    a = ap.parse_args()
    if error := scale_study_error(a.seeds, a.large_seeds, a.workers, BASE_WORKERS):
        ap.error(error)
    if not a.fit.exists():
        ap.error(f"no fit at {a.fit} (run compare_sim_real.py on that result set first)")
    fit = load_fit(a.fit)
    command = "python benchmarks/sim_yarn_binding.py " + " ".join(sys.argv[1:])
    base = load_schedule(fit["schedule"])
    a.out.mkdir(parents=True, exist_ok=True)
    hot = hot_files(base, 1)
    hb_rows = [with_shares(run_one(fit, arm, fit["schedule"], hot, seed, BASE_WORKERS, hb))
               for arm in ("static", "dsbra") for hb in AM_HEARTBEATS_S for seed in range(a.seeds)]
    (a.out / "heartbeat.json").write_text(json.dumps({"command": command, "rows": hb_rows}, indent=1) + "\n")
    scale_rows = []
    for w in a.workers:
        path = write_scaled_schedule(a.out, base, w, BASE_WORKERS)
        hot = hot_files(base, w // BASE_WORKERS)
        for arm in SCALE_ARMS:
            for seed in range(scale_study_seeds(w, a.seeds, a.large_seeds)):
                scale_rows.append(with_shares(run_one(fit, arm, path, hot, seed, w, BASE_AM_HEARTBEAT_S)))
                print(f"{w} workers, {arm}, seed {seed}: node locality {scale_rows[-1]['node_locality']:.1f}%, "
                      f"handed on {scale_rows[-1]['handed_on_pct']:.1f}%", flush=True)
        (a.out / "scale.json").write_text(json.dumps({"command": command, "rows": scale_rows}, indent=1) + "\n")
    (a.out / "sim-yarn-binding.md").write_text(markdown(command, fit, hb_rows, scale_rows))
    print(markdown(command, fit, hb_rows, scale_rows))
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
