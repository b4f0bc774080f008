"""Heat-aware placement against the stock NameNode's, in the simulator (issue 24).

The daemon changes a file's replication through WebHDFS SETREPLICATION. With the placement
plugin the NameNode puts new replicas where the policy chose and deletes the replica it chose
(``--placement heat``, the simulator's default); without it, BlockPlacementPolicyDefault picks
(``--placement default``: random non-holders with its rack rule, the deleted replica from a
rack holding two on the fullest node). Each policy runs both ways on the same workload and
seed, so the differences are paired.

Measured per run, besides node locality, mean response and extra storage:

- read-demand spread: each round's window of block reads split over each block's holders
  (a map reading a block counts 1 / replicas on every holder: the load those replicas put on
  the nodes), summed per node; max / mean over the nodes, over the whole run and its last
  third (``RunResult.node_reads``);
- local-read spread: node-local maps launched per node (each read its block from that node's
  disk), max / mean, whole run and last third;
- where the new replicas went: how many nodes received a copy, and the most one node received.

    python benchmarks/sim_placement.py --out benchmarks/results/sim-placement --workers 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from dsbra.policy.profiles import PRE_HOLD_PROFILE
from dsbra.sim.config import PLACEMENTS, SimConfig
from dsbra.sim.replicas import Topology
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.setups import setup
from dsbra.stats import T95

# (setup, workload overrides, seeds, policies). FB-2010's first 3,000 jobs: real input-path
# popularity on 600 nodes, about 8 s of CPU a run (the full 12 h takes 60-100 s).
CASES = (
    ("hotspot-stress", {}, 20, ("static", "dsbra", "dsbra-20s-tuned", "scarlett")),
    ("hotspot-stress-long", {}, 20, ("static", "dsbra", "dsbra-20s-tuned", "scarlett")),
    ("fb2010", {"jobs": 3000}, 5, ("static", "dsbra", "scarlett")),
)
# the policy variants as benchmarks/run_sim_matrix.py runs them
POLICIES = {
    "static": dict(policy="static"),
    "dsbra": dict(policy="dsbra", policy_params={"profile": PRE_HOLD_PROFILE}),
    "dsbra-20s-tuned": dict(policy="dsbra", interval_s=20.0,
                            policy_params={"profile": "adaptive-20s"}),
    "scarlett": dict(policy="scarlett"),
}
SEED_BASE = 100  # the policies were tuned on seeds 0-2
LAST = 1 / 3  # "the last part of the run": its last third of simulated time
METRICS = ("node_locality", "mean_response_s", "extra_storage_mean", "replicas_added",
           "read_spread_all", "read_spread_last", "local_spread_all", "local_spread_last",
           "copy_target_nodes", "copies_to_busiest_node")


def spread(per_node: np.ndarray) -> float:
    """max / mean over the nodes: 1 when every node carries the same load."""
    mean = per_node.mean()
    return float(per_node.max() / mean) if mean else 1.0


def run_one(name: str, workload: dict, policy: str, placement: str, seed: int) -> dict:
    s = setup(name)
    cfg = SimConfig(**s["cluster"], **POLICIES[policy], placement=placement, seed=seed)
    t0 = time.process_time()
    res = simulate(cfg, WorkloadSpec(**{**s["workload"], **workload}))
    cpu_s = time.process_time() - t0
    tasks = res.tasks
    cut = (1 - LAST) * float(np.max(tasks["finish_s"]))
    late_rounds = np.array([r["time_s"] for r in res.rounds]) > cut
    names = Topology(cfg.nodes, cfg.racks).node_names.astype(str)
    node = np.searchsorted(names, tasks["node"].astype(str))
    local = np.asarray(tasks["locality"]) == 0
    late = np.asarray(tasks["launch_s"]) > cut
    s = res.summary
    return {
        "setup": name, "policy": policy, "placement": placement, "seed": seed,
        "node_locality": s["node_locality"], "mean_response_s": s["mean_response_s"],
        "extra_storage_mean": s["extra_storage_mean"], "replicas_added": s["replicas_added"],
        "read_spread_all": spread(res.node_reads.sum(axis=0)),
        "read_spread_last": spread(res.node_reads[late_rounds].sum(axis=0)),
        "local_spread_all": spread(np.bincount(node[local], minlength=cfg.nodes)),
        "local_spread_last": spread(np.bincount(node[local & late], minlength=cfg.nodes)),
        "copy_target_nodes": int(np.count_nonzero(res.copies_received)),
        "copies_to_busiest_node": int(res.copies_received.max()),
        "cpu_s": round(cpu_s, 2),
    }


def mean_ci(values: list[float]) -> dict:
    """Mean, the half-width of its 95% t-interval over seeds, min and max."""
    n = len(values)
    half = (T95[min(n - 1, len(T95)) - 1] * statistics.stdev(values) / n ** 0.5) if n > 1 else 0.0
    return {"mean": statistics.fmean(values), "ci95": half, "min": min(values),
            "max": max(values), "n": n}


def summarize(rows: list[dict]) -> dict:
    """Per setup and policy: each placement's metrics over seeds, and default minus heat paired
    by seed."""
    out: dict = {}
    for row in rows:
        out.setdefault(row["setup"], {}).setdefault(row["policy"], {})
    for name, policies in out.items():
        for policy in policies:
            mine = [r for r in rows if r["setup"] == name and r["policy"] == policy]
            by = {p: {r["seed"]: r for r in mine if r["placement"] == p} for p in PLACEMENTS}
            entry = {p: {m: mean_ci([r[m] for r in by[p].values()]) for m in METRICS}
                     for p in PLACEMENTS if by[p]}
            paired = sorted(set(by["heat"]) & set(by["default"]))
            if paired and policy != "static":
                entry["default_minus_heat"] = {
                    m: mean_ci([by["default"][k][m] - by["heat"][k][m] for k in paired])
                    for m in METRICS}
            policies[policy] = entry
    return out


def _cell(stat: dict, scale: float = 1.0, digits: int = 2) -> str:
    return f"{scale * stat['mean']:.{digits}f} ± {scale * stat['ci95']:.{digits}f}"


COLUMNS = (("node locality %", "node_locality", 100, 1),
           ("mean response s", "mean_response_s", 1, 2),
           ("extra storage mean %", "extra_storage_mean", 100, 2),
           ("replicas added", "replicas_added", 1, 0),
           ("read spread, whole", "read_spread_all", 1, 3),
           ("read spread, last third", "read_spread_last", 1, 3),
           ("local-read spread, whole", "local_spread_all", 1, 3),
           ("local-read spread, last third", "local_spread_last", 1, 3),
           ("nodes receiving copies", "copy_target_nodes", 1, 0),
           ("copies to the busiest node", "copies_to_busiest_node", 1, 0))


def setup_label(name: str) -> str:
    workload = next(w for n, w, _, _ in CASES if n == name)
    return f"{name}, first {workload['jobs']:,} jobs" if "jobs" in workload else name


def markdown(result: dict) -> str:
    head = "| setup | policy | placement | " + " | ".join(c[0] for c in COLUMNS) + " |"
    rule = "| --- " * (3 + len(COLUMNS)) + "|"

    def row(name: str, policy: str, label: str, stats: dict) -> str:
        return (f"| {setup_label(name)} | {policy} | {label} | "
                + " | ".join(_cell(stats[m], k, d) for _, m, k, d in COLUMNS) + " |")

    lines = ["# Placement: the policy's nodes (heat) against the stock NameNode's (default)", "",
             f"`{result['command']}` ({result['date']}, {result['cpu_s']:.0f} s of CPU over "
             f"{len(result['runs'])} runs). Values: mean ± half-width of the 95% t-interval "
             "over seeds (per-seed values, min and max in sim-placement.json). Seeds from "
             f"{SEED_BASE}; each placement runs the same workload and seed. Read spread: "
             "max / mean over nodes of the block reads split over each block's holders; "
             "local-read spread: max / mean of node-local maps per node; 'last third': of "
             "simulated time. Nodes receiving copies / copies to the busiest node: where the "
             "run's new replicas went. Static changes no replica, so its placement is moot "
             "(`-`).", "", head, rule]
    for name, policies in result["summary"].items():
        for policy, entry in policies.items():
            lines += [row(name, policy, "-" if policy == "static" else p, entry[p])
                      for p in PLACEMENTS if p in entry]
    lines += ["", "Paired by seed, default minus heat:", "", head, rule]
    for name, policies in result["summary"].items():
        for policy, entry in policies.items():
            if "default_minus_heat" in entry:
                lines.append(row(name, policy, "default - heat", entry["default_minus_heat"]))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--setups", nargs="+", default=[c[0] for c in CASES],
                    choices=[c[0] for c in CASES])
    ap.add_argument("--seeds", type=int, default=None, help="override the seeds per setup")
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    jobs = [(name, workload, policy, placement, SEED_BASE + k)
            for name, workload, seeds, policies in CASES if name in a.setups
            for policy in policies
            for placement in (("heat",) if policy == "static" else PLACEMENTS)
            for k in range(a.seeds or seeds)]
    with ProcessPoolExecutor(max_workers=a.workers) as pool:
        rows = list(pool.map(run_one, *zip(*jobs)))
    result = {"command": "python benchmarks/sim_placement.py " + " ".join(sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d", time.gmtime()),
              "cpu_s": sum(r["cpu_s"] for r in rows), "runs": rows, "summary": summarize(rows)}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "sim-placement.json").write_text(json.dumps(result, indent=1) + "\n")
    (a.out / "sim-placement.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
