"""One simulation end to end: workload + config + policy -> tables + summary (+ files)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dsbra.errors import InputError
from dsbra.sim import workload as workloads
from dsbra.sim.config import ORACLE, REACTIVE_ORACLE, SimConfig
from dsbra.sim.engine import Simulation
from dsbra.sim.metrics import build_tables, summarize, write_run
from dsbra.sim.policy_driver import PolicyDriver, policy_params


@dataclass
class WorkloadSpec:
    """How to build the schedule (see :mod:`dsbra.sim.workload`)."""

    source: str = "fb2009-bins"  # or "swim:PATH", "schedule:PATH"
    jobs: int | None = None
    inter_arrival_s: float | None = None
    arrivals: str = "exp"
    hot_fraction: float = 0.1
    hot_share: float = 0.5
    hot_period_s: float = 300.0
    dataset_gb: float = 100.0
    max_maps: int | None = None
    bin_scale: float | None = None


def build_workload(spec: WorkloadSpec, cfg: SimConfig) -> workloads.Workload:
    slots = cfg.nodes * cfg.slots_per_node
    if spec.source == "fb2009-bins":
        return workloads.fb2009_bins(
            total_slots=slots, block_size_mb=cfg.block_size_mb,
            jobs=100 if spec.jobs is None else spec.jobs,
            inter_arrival_s=14.0 if spec.inter_arrival_s is None else spec.inter_arrival_s,
            arrivals=spec.arrivals, hot_fraction=spec.hot_fraction, hot_share=spec.hot_share,
            hot_period_s=spec.hot_period_s, dataset_gb=spec.dataset_gb,
            bin_scale=spec.bin_scale, seed=cfg.seed)
    if spec.source.startswith("swim:"):
        path = spec.source[len("swim:"):]
        if not path:
            raise InputError("--workload swim:PATH needs a trace path")
        return workloads.swim(Path(path), total_slots=slots, block_size_mb=cfg.block_size_mb,
                              max_maps=spec.max_maps, jobs=spec.jobs,
                              inter_arrival_s=spec.inter_arrival_s,
                              hot_fraction=spec.hot_fraction, hot_share=spec.hot_share,
                              hot_period_s=spec.hot_period_s, dataset_gb=spec.dataset_gb,
                              seed=cfg.seed)
    if spec.source.startswith("schedule:"):
        path = spec.source[len("schedule:"):]
        if not path:
            raise InputError("--workload schedule:PATH needs a schedule file")
        return workloads.bench_schedule(Path(path))
    raise InputError(f"unknown workload {spec.source!r}; use fb2009-bins, swim:PATH or schedule:PATH")


@dataclass
class RunResult:
    summary: dict
    jobs: dict
    tasks: dict
    rounds: list


def simulate(cfg: SimConfig, spec: WorkloadSpec, out_dir: Path | None = None,
             progress: bool = False) -> RunResult:
    """Build, run, tabulate; write DIR/{jobs,tasks,rounds}.parquet and summary.json if asked."""
    cfg = cfg.validated()
    wl = build_workload(spec, cfg)
    sim = Simulation(cfg, wl)
    # the oracle needs no rounds to place anything: a static driver keeps the round records
    driven = "static" if cfg.policy in (ORACLE, REACTIVE_ORACLE) else cfg.policy
    params = policy_params(driven, delay_threshold_s=sim.D,
                           max_replication=min(cfg.max_replication, cfg.nodes),
                           block_bytes=int(cfg.block_size_mb * (1 << 20)), seed=cfg.seed,
                           overrides={} if driven != cfg.policy else cfg.policy_params)
    sim.policy_driver = PolicyDriver(driven, params, sim.topo, wl.dataset, sim.replicas,
                                     cfg.copy_mbps)
    raw = sim.run(progress=progress)
    if cfg.policy == ORACLE:
        for record in raw.rounds:
            record["extra_storage"] = cfg.oracle_extra_storage
    jobs, tasks = build_tables(wl, raw, sim.topo.node_names)
    config = {**cfg.as_dict(), "workload": spec.__dict__, "delay_threshold_s_used": sim.D,
              "policy_params_used": params}
    summary = summarize(wl, raw, jobs, tasks, config, raw.rounds)
    if out_dir is not None:
        write_run(Path(out_dir), jobs, tasks, summary, raw.rounds)
    return RunResult(summary=summary, jobs=jobs, tasks=tasks, rounds=raw.rounds)
