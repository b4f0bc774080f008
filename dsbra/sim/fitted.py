"""The simulator set up as the bundled cluster ran a real sitting (run_bench_matrix.py): 4 workers
on 2 racks, replication 2, 64 MiB blocks, D = 10 s, the daemon's 30 s rounds, and the task
model, slots, heartbeat and ApplicationMasters fitted on the sitting's static arm
(dsbra/sim/calibration.py, the fit benchmarks/compare_sim_real.py records in the sitting's
sim-vs-real.json: :func:`load_fit`); or, for a Spark sitting (`--engine spark --spark-mode
shared`), the replay's one long-running application under the Spark binding
(:func:`spark_arm_config`; compare_sim_spark.py, choose_spark_schedule.py). The scripts that predict real sittings in the simulator
(compare_sim_real.py, sim_candidates_fitted.py, sim_yarn_binding.py, choose_hotspot_schedule.py,
sim_churn.py) build their configurations here, so they simulate one cluster."""

from __future__ import annotations

import json
from pathlib import Path

from dsbra.policy.profiles import HOLD_PROFILE, PRE_HOLD_PROFILE, PROFILES, DsbraParams
from dsbra.sim.config import SimConfig, SparkSettings
from dsbra.sim.run import WorkloadSpec, simulate

#: a replay arm -> (policy, delay scheduling on)
ARM_POLICY = {"static": ("static", True), "static-nodelay": ("static", False),
              "dsbra": ("dsbra", True), "calibrated": ("dsbra", True),
              "paper-literal": ("dsbra", True), "scarlett": ("scarlett", True),
              "dare": ("dare", True), "oracle": ("oracle", True)}
#: the arms the simulator runs beyond the replays' (the calibration fits on ARM_POLICY's):
#: ``dsbra-hold``, the default from 2026-12-02 to 2026-12-07, and ``dsbra-popular``, the
#: default since (run_bench_matrix.py's arm of that name)
SIM_ARM_POLICY = {**ARM_POLICY, "dsbra-hold": ("dsbra", True), "dsbra-popular": ("dsbra", True)}
#: a DSBRA arm -> its profile (``dsbra``: the default the committed sittings ran, PRE_HOLD_PROFILE)
PROFILE = {"dsbra": PRE_HOLD_PROFILE, "dsbra-hold": HOLD_PROFILE, "dsbra-popular": "adaptive-popular",
           "calibrated": "calibrated", "paper-literal": "paper-literal"}
DELAY_S = 10.0
INTERVAL_S = 30.0  # the daemon arms' policy round (run_bench_matrix.py runs the daemon so)
#: the hot-spot schedules' data set: run_bench_matrix.py's one-block files, one of 16 hot
BLOCK = 64 << 20
HOT_FRACTION = 1 / 16


def scheduler_config(delay: bool, capacity_node_delay: int | None) -> dict:
    """The simulator's scheduler as the replays ran it: the Fair Scheduler with D = DELAY_S
    (time-based), or with ``capacity_node_delay`` the Capacity Scheduler (its count-based
    delays, several containers per node heartbeat as Hadoop's default; off: node delay -1 and
    additional rack delay 0, as run_bench_matrix.py brings it up)."""
    if capacity_node_delay is None:
        return {"delay_node_s": DELAY_S if delay else 0.0, "delay_rack_s": DELAY_S if delay else 0.0,
                "delay_threshold_s": DELAY_S}
    return {"scheduler": "capacity", "node_locality_delay": capacity_node_delay if delay else -1,
            "rack_locality_additional_delay": -1 if delay else 0, "assign_multiple": True}


def _ceiling(arm: str) -> int:
    """The most replicas ``arm``'s profile allows a block (the simulator's cap for the others)."""
    return (PROFILES[PROFILE[arm]].get("max_replication", DsbraParams.max_replication)
            if arm in PROFILE else SimConfig.max_replication)


def arm_config(arm: str, model: dict, slots: int, interval_s: float, heartbeat_s: float, am: dict,
               binding: dict, seed: int, capacity_node_delay: int | None = None, nodes: int = 4,
               racks: int = 2) -> SimConfig:
    """The simulator's cluster for ``arm`` as the replays ran it (the bundled cluster's 4
    workers on 2 racks unless ``nodes``/``racks`` say otherwise; a block on at most every node,
    or the ceiling the arm's profile sets: adaptive-hold's 512, every worker, as on a real
    cluster; the simulator's default cap for the others)."""
    policy, delay = SIM_ARM_POLICY[arm]
    ceiling = _ceiling(arm)
    return SimConfig(nodes=nodes, racks=racks, replication=2, block_size_mb=64.0,
                     max_replication=min(nodes, ceiling),
                     slots_per_node=slots, heartbeat_s=heartbeat_s, **binding,
                     **scheduler_config(delay, capacity_node_delay),
                     policy=policy, interval_s=interval_s,
                     signals="observed" if policy == "dsbra" else "scheduler",
                     policy_params={"profile": PROFILE[arm]} if arm in PROFILE else {},
                     seed=seed, **am, **{k: v for k, v in model.items() if k != "sources"})


def simulate_arm(arm: str, schedule_path: Path, model: dict, slots: int, seeds: int, out: Path,
                 interval_s: float, heartbeat_s: float, am: dict, binding: dict,
                 capacity_node_delay: int | None = None) -> list[Path]:
    """``arm`` on the sitting's schedule over ``seeds`` placements (:func:`arm_config`, seeds
    0..seeds-1): the runs' directories, ``out/sim/<arm>/seed<k>``."""
    dirs = []
    for seed in range(seeds):
        cfg = arm_config(arm, model, slots, interval_s, heartbeat_s, am, binding, seed,
                         capacity_node_delay)
        run_dir = out / "sim" / arm / f"seed{seed}"
        simulate(cfg, WorkloadSpec(source=f"schedule:{schedule_path}"), out_dir=run_dir)
        dirs.append(run_dir)
    return dirs


def scaled_arm_config(fit: dict, arm: str, seed: int, nodes: int,
                      am_heartbeat_s: float) -> SimConfig:
    """:func:`arm_config` with :func:`load_fit`'s ``fit`` on ``nodes`` workers, YARN binding:
    the cluster of the scale studies (benchmarks/sim_yarn_binding.py, sim_hold_cap.py), with a
    rack per 30 workers, at least 2."""
    return arm_config(arm, fit["model"], fit["slots"], INTERVAL_S, fit["heartbeat_s"], fit["am"],
                      {"binding": "yarn-mr", "am_heartbeat_s": am_heartbeat_s}, seed,
                      nodes=nodes, racks=max(2, nodes // 30))


def fitted_config(fit: dict, policy: str, seed: int, params: dict | None = None,
                  max_am_share: float | None = None) -> SimConfig:
    """The simulator as the calibration fitted it to the real cluster (``fit``: the
    sim-vs-real.json compare_sim_real.py wrote; ``max_am_share``: the queues' maxAMShare instead
    of the fitted cluster's), running ``policy`` with ``params``."""
    model = {k: v for k, v in fit["task_model"].items() if k != "sources"}
    am = {k: fit["am"][k] for k in ("am_slots", "max_am_share", "am_startup_s")}
    if max_am_share is not None:
        am["max_am_share"] = max_am_share
    return SimConfig(nodes=4, racks=2, replication=2, block_size_mb=BLOCK / (1 << 20), max_replication=4,
                     slots_per_node=fit["slots_per_node"], heartbeat_s=fit["heartbeat_s"],
                     delay_node_s=DELAY_S, delay_rack_s=DELAY_S, delay_threshold_s=DELAY_S,
                     policy=policy, interval_s=INTERVAL_S,
                     signals="observed" if policy == "dsbra" else "scheduler",
                     policy_params=params or {}, seed=seed, **am, **model)


def load_fit(fit_path: Path) -> dict:
    """The calibration's fit on a sitting's static arm (dsbra/sim/calibration.py; the
    sim-vs-real.json compare_sim_real.py wrote) as :func:`arm_config` takes it: task model,
    slots, node heartbeat, AMs, and the sitting's schedule."""
    doc = json.loads(fit_path.read_text())
    return {"model": doc["task_model"], "slots": doc["slots_per_node"], "heartbeat_s": doc["heartbeat_s"],
            "am": {k: doc["am"][k] for k in ("am_slots", "max_am_share", "am_startup_s")},
            "schedule": fit_path.parent / "schedule.json"}


#: the bundled cluster's task slots a worker under the Spark binding: two one-core executors fit
#: a NodeManager (dsbra/bench/spark_replay.py)
SPARK_SLOTS = 2


def spark_arm_config(arm: str, model: dict, executors: int, heartbeat_s: float, wait_s: float,
                     seed: int, host_cores: int = 0, share_links: bool = False,
                     warmup_s: float = 0.0, copy_mbps: float = SimConfig.copy_mbps,
                     copy_streams: int = SimConfig.copy_streams,
                     params: dict | None = None) -> SimConfig:
    """The bundled cluster running ``arm`` (its profile with ``params`` on top, for a DSBRA
    arm) with the Spark replay's shared application: its
    ApplicationMaster a slot, ``executors`` one-core executors held from the start, a Fair pool
    per job, spark.locality.wait ``wait_s`` (also D, DSBRA's normaliser), the daemon's rounds;
    the task model ``model`` (calibration.task_model of the sitting's static tasks, or
    calibration.contended_task_model with the contention ``host_cores``, ``share_links`` and an
    executor's first-task ``warmup_s``), the policies' copies at ``copy_mbps`` with
    ``copy_streams``. The DSBRA arms read the scheduler's own accounting (the observed rule is
    MapReduce's)."""
    policy, _ = SIM_ARM_POLICY[arm]
    ceiling = _ceiling(arm)
    return SimConfig(nodes=4, racks=2, replication=2, block_size_mb=BLOCK / (1 << 20),
                     max_replication=min(4, ceiling), slots_per_node=SPARK_SLOTS,
                     heartbeat_s=heartbeat_s, binding="spark",
                     host_cores=host_cores, share_links=share_links, copy_mbps=copy_mbps,
                     copy_streams=copy_streams,
                     spark=SparkSettings(app="shared", executors=executors, locality_wait_s=wait_s,
                                         executor_warmup_s=warmup_s),
                     am_slots=1.0, delay_threshold_s=wait_s, policy=policy, interval_s=INTERVAL_S,
                     signals="scheduler",
                     policy_params=({"profile": PROFILE[arm], **(params or {})}
                                    if arm in PROFILE else {}),
                     seed=seed, **{k: v for k, v in model.items() if k != "sources"})


def simulate_spark_arm(arm: str, schedule: Path, out: Path, seeds: int, **config) -> list[Path]:
    """``arm`` on ``schedule`` over ``seeds`` placements (:func:`spark_arm_config` with
    ``config``): the runs' directories ``out/seed<k>``, a run already there kept if it ran
    this configuration."""
    dirs = []
    for seed in range(seeds):
        run_dir = out / f"seed{seed}"
        cfg = spark_arm_config(arm, seed=seed, **config)
        if not _ran(run_dir, cfg):
            simulate(cfg, WorkloadSpec(source=f"schedule:{schedule}"), out_dir=run_dir)
        dirs.append(run_dir)
    return dirs


def _ran(run_dir: Path, cfg: SimConfig) -> bool:
    """Whether ``run_dir`` holds a run of ``cfg`` (its summary's configuration has every field
    of ``cfg`` at the same value)."""
    summary = run_dir / "summary.json"
    if not summary.exists():
        return False
    ran = json.loads(summary.read_text())["config"]
    return all(ran.get(k) == v for k, v in json.loads(json.dumps(cfg.as_dict())).items())
