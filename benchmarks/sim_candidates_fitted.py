"""Issue 43's candidates on the setup fitted to a real sitting (compare_sim_real.py's fit).

Reads RESULTS/sim-vs-real.json (the fit compare_sim_real.py committed: task model, slots per
node, node heartbeat, the ApplicationMasters, the binding) and RESULTS/schedule.json (the
sitting's jobs), and runs static, the oracle, the reactive oracle, the current default and
each candidate there, as compare_sim_real.py runs its arms (D = 10 s, the daemon's 30 s
rounds, the observed signals for the dsbra arms), over --seeds placements. Writes
OUT/sim-matrix-runs.json in run_sim_matrix.py's row format (setup ``fitted:<sitting>``), for
benchmarks/sim_candidates_report.py OUT. Does not refit and writes nothing under RESULTS.

    .venv/bin/python benchmarks/sim_candidates_fitted.py \\
        benchmarks/results/bench-hotspot-long-oracle \\
        --out benchmarks/results/sim-policy-candidates/fitted --seeds 10
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from dsbra.sim.fitted import INTERVAL_S, arm_config
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.variants import VARIANTS

ARMS = ("static", "oracle", "oracle-reactive", "dsbra", "dsbra-hysteresis", "dsbra-capped",
        "dsbra-hysteresis-capped", "dsbra-confirm2of3", "dsbra-confirm-bypass4", "dsbra-hold2",
        "dsbra-hold3", "dsbra-hold5", "dsbra-cap0.25", "dsbra-near", "dsbra-away",
        "dsbra-capped-near", "dsbra-capped-away", "dsbra-coread0.5", "dsbra-capped-coread0.5",
        "dsbra-hold", "dsbra-hold-demand0.5", "dsbra-hold-demand1", "dsbra-hold-demand2",
        "dsbra-hold-minp1", "dsbra-hold-minp2", "dsbra-hold-reads2")


def config(fit: dict, variant: str, seed: int, copies: dict | None = None):
    """``copies``: SimConfig's copy_mbps / copy_streams over the fit's (free copies at 40 MB/s)."""
    v = VARIANTS[variant]
    base_arm = v["policy"] if v["policy"] in ("static", "oracle", "dsbra") else "static"
    model = {k: x for k, x in fit["task_model"].items() if k != "sources"}
    am = {k: fit["am"][k] for k in ("am_slots", "max_am_share", "am_startup_s")}
    cfg = arm_config(base_arm, model, fit["slots_per_node"], INTERVAL_S, fit["heartbeat_s"], am,
                     fit["binding"], seed)
    return dataclasses.replace(cfg, policy=v["policy"], policy_params=v.get("params", {}), **(copies or {}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--arms", nargs="*", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--copy-mbps", type=float, default=None,
                    help="a re-replication copy's MB/s (the bundled cluster's 40 Mbit/s links: the "
                         "fit's read_mbps_rack); default the simulator's 40")
    ap.add_argument("--copy-streams", type=int, default=0,
                    help="copies as DataNode traffic, at most N sent by a holder at once, sharing "
                         "its and the target's disk with the maps (Hadoop's max-streams is 2); 0: free")
    a = ap.parse_args()
    copies = {"copy_streams": a.copy_streams} | ({"copy_mbps": a.copy_mbps} if a.copy_mbps else {})
    fit = json.loads((a.results / "sim-vs-real.json").read_text())
    if fit.get("model") != "am" or fit.get("capacity_node_delay") is not None:
        ap.error("needs a fit of compare_sim_real.py --model am on the Fair Scheduler")
    schedule = a.results / "schedule.json"
    command = "python benchmarks/sim_candidates_fitted.py " + " ".join(sys.argv[1:])
    setup = f"fitted:{a.results.name}"
    rows = []
    for variant in a.arms:
        for seed in range(a.seeds):
            t0 = time.perf_counter()
            res = simulate(config(fit, variant, seed, copies), WorkloadSpec(source=f"schedule:{schedule}"))
            rows.append({"setup": setup, "variant": variant, "seed": seed, "command": command,
                         "wall_s": time.perf_counter() - t0, "summary": res.summary})
            s = res.summary
            print(f"{variant}/seed{seed}: node locality {s['node_locality']:.3f}, mean response "
                  f"{s['mean_response_s']:.1f} s, extra storage "
                  f"{100 * s['extra_storage_mean']:.1f}%", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "sim-matrix-runs.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
