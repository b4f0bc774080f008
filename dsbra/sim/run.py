"""One simulation end to end: workload + config + policy -> tables + summary (+ files)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dsbra.errors import InputError
from dsbra.experiment.design import Holdout, Switchback
from dsbra.sim import workload as workloads
from dsbra.sim.config import ORACLE, REACTIVE_ORACLE, SimConfig
from dsbra.sim.engine import Simulation
from dsbra.sim.metrics import build_tables, summarize, write_run
from dsbra.sim.policy_driver import PolicyDriver, policy_params
from dsbra.sim.spark import SparkSimulation


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
    #: file path -> (group, first raise decision s) of every file the policy decided to raise
    decided: dict
    maps: object  #: pyarrow Table of every map as the daemon records it, or None (not kept)
    #: (rounds x nodes) each node's share of each round's window of block reads
    #: (PolicyDriver.node_reads)
    node_reads: np.ndarray
    copies_received: np.ndarray  #: per node, the copies started to it (PolicyDriver)


def simulate(cfg: SimConfig, spec: WorkloadSpec, out_dir: Path | None = None,
             progress: bool = False, keep_maps: bool = False) -> RunResult:
    """Build, run, tabulate; write DIR/{jobs,tasks,rounds}.parquet and summary.json if asked
    (and, with a holdout, what ``dsbra impact`` reads). ``keep_maps``: the result carries the
    maps as the daemon records them, as it always does with a holdout."""
    cfg = cfg.validated()
    wl = build_workload(spec, cfg)
    sim = (SparkSimulation if cfg.binding == "spark" else Simulation)(cfg, wl)
    # the oracle needs no rounds to place anything: a static driver keeps the round records
    driven = "static" if cfg.policy in (ORACLE, REACTIVE_ORACLE) else cfg.policy
    params = policy_params(driven, delay_threshold_s=sim.D,
                           max_replication=min(cfg.max_replication, cfg.nodes),
                           block_bytes=int(cfg.block_size_mb * (1 << 20)), seed=cfg.seed,
                           overrides={} if driven != cfg.policy else cfg.policy_params)
    e = cfg.experiment
    switchback = Switchback(e.period_s, e.seed, burn_in_s=e.burn_in_s) if e.switchback else None
    sim.policy_driver = PolicyDriver(driven, params, sim.topo, wl.dataset, sim.replicas,
                                     cfg.copy_mbps, Holdout(e.holdout, e.seed),
                                     cfg.placement, np.random.default_rng([cfg.seed, 11]),
                                     switchback=switchback)
    sim.policy_driver.guard_margin = e.guard_margin if e.guard else None
    sim.policy_driver.job_submit_s = wl.submit_s
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
    driver = sim.policy_driver
    paths = wl.dataset.file_paths
    decided = {str(paths[f]): (g, at_s) for f, (g, at_s, _) in driver.assignments.items()}
    maps = map_records_of_tasks(tasks, paths[wl.dataset.block_file]) if e.holdout or keep_maps else None
    if out_dir is not None and e.holdout:
        write_experiment(Path(out_dir), driver, maps)
    node_reads = np.array(driver.node_reads).reshape(len(driver.node_reads), cfg.nodes)
    return RunResult(summary=summary, jobs=jobs, tasks=tasks, rounds=raw.rounds,
                     decided=decided, maps=maps, node_reads=node_reads,
                     copies_received=driver.copies_received)


def map_records_of_tasks(tasks: dict, block_paths):
    """The run's maps as the daemon records them (dsbra.experiment.records), times in ms of
    simulated time; ``block_paths``: each block's file."""
    import pyarrow as pa

    from dsbra.experiment.records import MAP_RECORD_SCHEMA
    from dsbra.results_schema import LOCALITY_NAMES

    block = np.asarray(tasks["block_id"], np.int64)
    ms = lambda name: np.round(np.asarray(tasks[name], float) * 1000).astype(np.int64)  # noqa: E731
    locality = np.asarray(tasks["locality"], np.int64)
    finish = ms("finish_s")
    return pa.table({
        "window_end_ms": np.full(len(block), int(finish.max()) if len(block) else 0, np.int64),
        "job_id": [str(j) for j in tasks["job_id"]],
        "attempt_id": [f"{j}_m_{t}" for j, t in zip(tasks["job_id"], tasks["task_id"])],
        "file": np.asarray(block_paths)[block].astype(str),
        "block_id": block,
        "node": [str(n) for n in tasks["node"]],
        "scheduler_locality": [LOCALITY_NAMES[k] for k in locality.tolist()],
        "split_local": locality == 0,
        "replica_local": locality == 0,  # the simulated maps read where they were counted
        "delayed": np.asarray(tasks["delayed"], bool),
        "delay_wait_s": np.asarray(tasks["delay_wait_s"], float),
        "scheduled_ms": ms("scheduled_s"), "launch_ms": ms("launch_s"), "finish_ms": finish,
        "period": pa.nulls(len(block), pa.int64()),
    }, schema=MAP_RECORD_SCHEMA)


def write_experiment(out_dir: Path, driver: PolicyDriver, maps) -> None:
    """What the daemon keeps for ``dsbra impact``, from the simulated run: each decided file's
    group (``experiment.jsonl``) and every map (``maps/``)."""
    from dsbra.experiment.assignment import ASSIGNMENTS_FILE, Assignments
    from dsbra.experiment.records import MAPS_DIR, RecordStore

    paths = driver.dataset.file_paths
    book = Assignments(out_dir / ASSIGNMENTS_FILE)
    book.path.unlink(missing_ok=True)
    for f, (group, at_s, round_) in sorted(driver.assignments.items(), key=lambda kv: kv[1][1:]):
        book.record([(str(paths[f]), group)], driver.holdout, round_=round_,
                    at_ms=int(round(at_s * 1000)))
    end_ms = int(maps.column("window_end_ms")[0].as_py()) if maps.num_rows else 0
    RecordStore(out_dir / MAPS_DIR, float("inf"), 1 << 62).write(maps, end_ms)
