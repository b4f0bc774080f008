"""Benchmark: one policy round over 10 million blocks on 1,000 DataNodes, on one core.

    .venv/bin/python benchmarks/bench_policy.py            # full size, writes results/policy.json
    .venv/bin/python benchmarks/bench_policy.py --blocks 1000000 --repeats 3   # quicker

What is measured, in one run:
- the vectorised DSBRA round (``DsbraPolicy.decide``: validation, X, RF, Y/n, GAvg, DNAvg,
  dereplication, placement, new state), repeated on the same input and state;
- the same round as a straightforward per-block Python loop (dsbra.policy.reference), on a
  random subsample
  of the blocks (same nodes), repeated, and scaled linearly to the full size; the loop's
  decisions are checked equal to the vectorised ones on that subsample;
- the other policies (paper-literal profile, static, scarlett, dare) on the full input;
- bytes per block: of the persisted per-block state arrays, of the round input arrays, and the
  peak of transient numpy allocations during one round (tracemalloc).
The process is pinned to one CPU (sched_setaffinity) unless --no-pin. Other processes share
the machine, so every timing is reported as min / median / max over the repeats, in wall-clock
seconds and, for the round and the loop, in CPU seconds of this process; the load average
before and after is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from tqdm import tqdm

from dsbra.bench.synthetic import DELAY_S, synthetic_round
from dsbra.policy.api import BlockState, RoundInput
from dsbra.policy.reference import as_python_blocks, loop_round
from dsbra.policy.registry import make_policy

def subsample(ri: RoundInput, st: BlockState, k: int, seed: int = 2):
    rows = np.sort(np.random.default_rng(seed).choice(len(ri), size=k, replace=False))
    rc = ri.replica_count()[rows]
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum(rc, out=indptr[1:])
    starts = ri.replica_indptr[rows]
    pos = np.arange(indptr[-1]) + np.repeat(starts - indptr[:-1], rc)
    sub = RoundInput(block_ids=ri.block_ids[rows], file_index=np.arange(k),
                     tasks=ri.tasks[rows], delayed_tasks=ri.delayed_tasks[rows],
                     delay_s=ri.delay_s[rows], nonlocal_tasks=ri.nonlocal_tasks[rows],
                     peak_readers=ri.peak_readers[rows], replica_indptr=indptr,
                     replica_nodes=ri.replica_nodes[pos],
                     base_replication=ri.base_replication[rows], node_names=ri.node_names)
    sub_st = BlockState(block_ids=sub.block_ids, y=st.y[rows], n=st.n[rows],
                        base_replication=st.base_replication[rows], file_index=np.arange(k),
                        idle_rounds=st.idle_rounds[rows])
    return sub, sub_st


CPU_SECONDS: dict[str, list[float]] = {}


def timed(fn, repeats: int, label: str) -> list[float]:
    """Wall-clock seconds per call; the process's CPU seconds go to CPU_SECONDS[label] (less
    sensitive to other jobs taking the core away)."""
    out, cpu = [], CPU_SECONDS.setdefault(label, [])
    for _ in tqdm(range(repeats), desc=label, leave=False):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return out


def spread(samples: list[float]) -> dict:
    return {"min": min(samples), "median": statistics.median(samples), "max": max(samples),
            "samples": samples}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=10_000_000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--loop-blocks", type=int, default=100_000,
                    help="subsample size for the per-block Python loop (scaled linearly)")
    ap.add_argument("--loop-repeats", type=int, default=3)
    ap.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    ap.add_argument("--output", default=str(Path(__file__).parent / "results" / "policy.json"))
    args = ap.parse_args(argv)
    if not args.no_pin:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    ri, st = synthetic_round(args.blocks, args.nodes)
    gen_s = time.perf_counter() - t0
    # the calibrated profile: the one the per-block reference loop implements
    dsbra = make_policy("dsbra", profile="calibrated", delay_threshold_s=DELAY_S)

    decision, new_state = dsbra.decide(ri, st)  # warm-up; also the reported decision
    vec = timed(lambda: dsbra.decide(ri, st), args.repeats, "dsbra round")

    sub, sub_st = subsample(ri, st, args.loop_blocks)
    py_blocks = as_python_blocks(sub, sub_st)
    names, params = list(sub.node_names), dsbra.params.as_dict()
    loop = timed(lambda: loop_round(py_blocks, names, params), args.loop_repeats, "python loop")
    vec_sub = timed(lambda: dsbra.decide(sub, sub_st), args.repeats, "dsbra on subsample")
    # the loop and the vectorised round agree on the subsample
    rfs, ys, gavg, _, rep, derep = loop_round(py_blocks, names, params)
    d_sub, s_sub = dsbra.decide(sub, sub_st)
    agree = (np.allclose(rfs, d_sub.rf, rtol=1e-12, atol=1e-15)
             and np.allclose(ys, s_sub.y, rtol=1e-12, atol=1e-15)
             and abs(gavg - d_sub.gavg) < 1e-12
             and rep == {int(b): d_sub.replicate_nodes[d_sub.replicate_indptr[k]:
                                                       d_sub.replicate_indptr[k + 1]].tolist()
                         for k, b in enumerate(d_sub.replicate_block)}
             and derep == dict(zip(d_sub.dereplicate_block.tolist(),
                                   d_sub.dereplicate_node.tolist())))
    scale = len(ri) / len(sub)
    loop_scaled = [s * scale for s in loop]

    others = {}
    for name, params in [("dsbra", {"delay_threshold_s": DELAY_S}),  # the default profile
                         ("dsbra-literal", {"delay_threshold_s": DELAY_S}), ("static", {}),
                         ("scarlett", {}), ("dare", {"p": 0.3})]:
        pol = make_policy(name, **params)
        pol.decide(ri, st)
        others[name] = spread(timed(lambda pol=pol: pol.decide(ri, st),
                                    max(3, args.repeats // 2), name))

    tracemalloc.start()
    dsbra.decide(ri, st)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    input_bytes = sum(getattr(ri, f).nbytes for f in (
        "block_ids", "file_index", "tasks", "delayed_tasks", "delay_s", "nonlocal_tasks",
        "peak_readers", "replica_indptr", "replica_nodes", "base_replication"))
    med_vec, med_loop = statistics.median(vec), statistics.median(loop_scaled)
    result = {
        "command": " ".join(["python", sys.argv[0], *(sys.argv[1:] if argv is None else argv)]),
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "cpu": platform.processor() or platform.machine(),
                    "cpus_used": sorted(os.sched_getaffinity(0)), "os_cpu_count": os.cpu_count()},
        "blocks": len(ri), "nodes": ri.n_nodes, "replicas": int(len(ri.replica_nodes)),
        "input_generation_s": gen_s,
        "load_average_1_5_15_min": {"before": load_before, "after": os.getloadavg()},
        "round": {
            "policy": "dsbra (calibrated)",
            "seconds": spread(vec),
            "cpu_seconds": spread(CPU_SECONDS["dsbra round"]),
            "target_seconds": 2.0,
            "meets_target": med_vec <= 2.0,
            "decisions": {"replicate_blocks": int(len(decision.replicate_block)),
                          "replicas_added": int(len(decision.replicate_nodes)),
                          "dereplicate_blocks": int(len(decision.dereplicate_block)),
                          "gavg": decision.gavg},
        },
        "python_loop": {
            "subsample_blocks": len(sub), "scale_factor": scale,
            "seconds_on_subsample": spread(loop),
            "cpu_seconds_on_subsample": spread(CPU_SECONDS["python loop"]),
            "seconds_scaled_to_full": spread(loop_scaled),
            "vectorised_seconds_on_subsample": spread(vec_sub),
            "decisions_agree_on_subsample": bool(agree),
        },
        "speedup_vs_loop": {
            "full_scaled_median": med_loop / med_vec,
            "full_scaled_min_ratio": min(loop_scaled) / max(vec),
            "full_scaled_max_ratio": max(loop_scaled) / min(vec),
            "same_subsample_median": statistics.median(loop) / statistics.median(vec_sub),
            "cpu_full_scaled_median": statistics.median(CPU_SECONDS["python loop"]) * scale
            / statistics.median(CPU_SECONDS["dsbra round"]),
        },
        "other_policies_seconds": others,
        "memory": {
            "state_bytes_per_block": new_state.nbytes / len(ri),
            "state_target_bytes_per_block": 64,
            "state_fields": {f: str(getattr(new_state, f).dtype) for f in (
                "block_ids", "y", "n", "base_replication", "file_index", "idle_rounds")},
            "round_input_bytes_per_block": input_bytes / len(ri),
            "round_peak_transient_bytes_per_block": peak / len(ri),
        },
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("round", "speedup_vs_loop", "memory")}, indent=2))
    print(f"loop/vectorised decisions agree on subsample: {agree}; written {out}")
    return result


if __name__ == "__main__":
    main()
