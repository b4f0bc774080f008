"""Where the oracle's gain comes from, and which part a reactive replication policy can reach.

For a setup of run_sim_matrix.py and a seed: (1) how popular blocks get within one hot period
of the workload (a policy can only replicate what it has seen read), and (2) for static, the
default DSBRA profile and the oracle, the non-local reads and mean waits of maps on blocks read
often over the run ("hot") and of the rest.

    .venv/bin/python benchmarks/headroom_analysis.py --setup hotspot-stress-long --seed 0
"""

from __future__ import annotations

import argparse

import numpy as np

from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, build_workload, simulate
from dsbra.sim.setups import SETUPS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setup", default="hotspot-stress-long", choices=list(SETUPS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hot-reads", type=int, default=20,
                    help="a block read at least this often over the run counts as hot")
    args = ap.parse_args()
    s = SETUPS[args.setup]
    spec = WorkloadSpec(**s["workload"])
    base = dict(**s["cluster"], delay_node_s=5.0, delay_rack_s=5.0, delay_threshold_s=5.0,
                seed=args.seed)
    wl = build_workload(spec, SimConfig(**base))
    period = (wl.submit_s[np.repeat(np.arange(wl.n_jobs), wl.maps)] // spec.hot_period_s)
    _, per_period = np.unique(period.astype(np.int64) * wl.dataset.n_blocks + wl.task_block,
                              return_counts=True)
    print(f"{args.setup}, seed {args.seed}: {wl.n_tasks} maps on {wl.dataset.n_blocks} blocks; "
          f"most reads of one block within one {spec.hot_period_s:.0f} s hot period: "
          f"{per_period.max()}; share of maps on blocks read >= 5 / >= 20 times in their "
          f"period: {per_period[per_period >= 5].sum() / wl.n_tasks:.2f} / "
          f"{per_period[per_period >= 20].sum() / wl.n_tasks:.2f}")
    for policy in ("static", "dsbra", "oracle"):
        res = simulate(SimConfig(**base, policy=policy), spec)
        t = res.tasks
        hot = np.bincount(t["block_id"])[t["block_id"]] >= args.hot_reads
        parts = []
        for name, m in (("hot", hot), ("other", ~hot)):
            wait = t["wait_s"][m].mean() if m.any() else float("nan")
            parts.append(f"{name} maps {int(m.sum())}: non-local "
                         f"{int((t['locality'][m] != 0).sum())}, mean wait {wait:.1f} s")
        print(f"  {policy:7s} mean response {res.summary['mean_response_s']:.1f} s; "
              + "; ".join(parts))


if __name__ == "__main__":
    main()
