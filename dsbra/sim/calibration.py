"""The simulator's calibration to the real cluster: from a real sitting's results set to the
parameters :mod:`dsbra.sim.fitted` sets the simulator up with (issue 11 item 6; one fit since
issue 66).

A sitting is a results set of benchmarks/run_bench_matrix.py: ``<arm>/rep<k>/`` real replays
(``tasks.parquet``, ``jobs.parquet``) and the ``schedule.json`` they ran. Three fits:

- the task model (:func:`task_model`): a map costs ``task_overhead_s`` + MB / the read rate of
  its locality (no per-MB cost beyond the read: ``cpu_s_per_mb`` 0). The overhead is the median
  node-local map (launch to finish) less its read at the node-local rate benchmarks/bench_network.py
  measured (``network.json``, :func:`local_read_mbps`); the rack and off-rack rates are the
  median rack-local and off-switch maps' MB over their time beyond the overhead (a level whose
  maps are not slower than the overhead reads at the level below's rate; no off-rack map: as
  a rack-local one). A sitting's every map reads one 64 MiB block (:func:`sitting_maps`);
- the ApplicationMasters' start-up (:func:`first_job_gap_s`): the median over the delay-on runs
  of their first job's gap from submission to its first map request (no other AM held it up);
- slots per node, node heartbeat and, if asked, the AM start-up (:func:`fit_static`): the point
  of a grid whose simulated static arm is nearest the real one (response and mean map wait,
  relative errors summed). The other arms are then predictions, not fits.

benchmarks/compare_sim_real.py runs them and records the fit in the sitting's
``sim-vs-real.json`` (``task_model``, ``slots_per_node``, ``heartbeat_s``, ``am``), which
:func:`dsbra.sim.fitted.load_fit` reads. benchmarks/fit_task_model.py applies :func:`task_model`
to the maps benchmarks/validate_attribution.py recorded (:func:`recorded_maps`, inputs of
several sizes) and reports what it leaves unexplained (:func:`task_model_report`): the spread of map
times, which the simulator does not model (its maps of one size all last the same).
"""

from __future__ import annotations

import gzip
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dsbra.report.runs import Run, find_runs
from dsbra.sim.fitted import ARM_POLICY, simulate_arm
from dsbra.stats import mean_or_none

#: a sitting's maps each read one block of run_bench_matrix.py's 64 MiB
SITTING_MAP_MB = 64.0
#: the locality levels, 0 node-local, 1 rack-local, 2 off-rack: the sittings' names and the
#: recorded maps' (MapReduce's)
LEVELS = ("node", "rack", "off")
LOCALITIES = ("NODE_LOCAL", "RACK_LOCAL", "OFF_SWITCH")
READ_KEYS = ("read_mbps_local", "read_mbps_rack", "read_mbps_remote")
MB = 1 << 20
#: dfs.namenode.replication.max-streams, Hadoop's default (the bundled cluster keeps it): the
#: copies a DataNode sends at once
HDFS_REPLICATION_STREAMS = 2

#: the static arm's grid: node heartbeats, slots per node without AMs (``--model shifted``) and
#: with them (a node must hold one AM and at least one map)
HEARTBEATS = (0.5, 1.0, 2.0, 3.0, 4.0)
SLOTS = (1, 2, 3, 4, 5)
AM_SLOTS = (2, 3, 4, 5)
#: AM start-up (AM start -> its maps pending) tried in the fit besides the measured first-job gap:
#: under load the AMs start slower than the first one did on a quiet cluster
AM_STARTUP_S = (10.0, 20.0, 30.0, 45.0, 60.0, 90.0)
MAX_AM_SHARE = 0.5  # the bundled queues' maxAMShare (dsbra/cluster/confdir.py)


@dataclass(frozen=True)
class Maps:
    """Finished maps by locality level (0 node-local, 1 rack-local, 2 off-rack): each one's
    seconds from launch to finish and the MB it read."""

    seconds: dict[int, list[float]]
    mb: dict[int, list[float]]


def sitting_runs(results: Path, suffix: str = "") -> dict[str, list[Run]]:
    """A sitting's real runs by arm: the runs under ``results/<arm><suffix>/`` for every arm
    of :data:`dsbra.sim.fitted.ARM_POLICY` the sitting ran (``suffix``: run_bench_matrix.py
    --max-am-share X's ``-amshareX``), named without the suffix."""
    dirs = [results / (arm + suffix) for arm in ARM_POLICY if (results / (arm + suffix)).is_dir()]
    return {arm.removesuffix(suffix): runs for arm, runs in find_runs(dirs).items()}


def sitting_maps(runs, map_mb: float = SITTING_MAP_MB) -> Maps:
    """The maps of a sitting's real runs (:class:`dsbra.report.runs.Run`), each reading ``map_mb``."""
    secs: dict[int, list[float]] = {0: [], 1: [], 2: []}
    for run in runs:
        t = run.tasks
        for loc, a, b in zip(t["locality"], t["launch_s"], t["finish_s"]):
            secs[int(loc)].append(b - a)
    return Maps(secs, {k: [map_mb] * len(v) for k, v in secs.items()})


def recorded_maps(paths: list[Path]) -> Maps:
    """Every finished map of benchmarks/validate_attribution.py's recorded runs
    (``*.raw.json.gz``, ``obs``: launch_ms, finish_ms, locality, length bytes)."""
    secs: dict[int, list[float]] = {0: [], 1: [], 2: []}
    mbs: dict[int, list[float]] = {0: [], 1: [], 2: []}
    for p in paths:
        with gzip.open(p) as f:
            obs = json.load(f)["obs"]
        for o in obs:
            if o.get("finish_ms") and o.get("launch_ms") and o.get("locality") in LOCALITIES:
                level = LOCALITIES.index(o["locality"])
                secs[level].append((o["finish_ms"] - o["launch_ms"]) / 1000)
                mbs[level].append(o["length"] / MB)
    return Maps(secs, mbs)


def local_read_mbps(network: dict) -> float:
    """The node-local 64 MiB read rate benchmarks/bench_network.py measured (its median), from
    its ``network.json``."""
    return float(network["levels"]["node_local"]["median_mb_s"])


def task_model(maps: Maps, local_mbps: float) -> dict:
    """The task model (the module's first fit) as :class:`dsbra.sim.config.SimConfig` fields,
    rounded to 0.01, with its ``sources``: the median map's seconds and the maps per level."""
    med = {k: statistics.median(v) if v else None for k, v in maps.seconds.items()}
    med_mb = {k: statistics.median(v) if v else None for k, v in maps.mb.items()}
    # a task's fixed cost cannot be negative: a Spark task (an executor already running) can be
    # quicker than the local read network.json measured through a new client
    overhead = max(0.0, med[0] - med_mb[0] / local_mbps)

    def rate(level: int, fallback: float) -> float:
        """The median map's MB over its time beyond the overhead; ``fallback`` without such maps."""
        seconds = med[level]
        return med_mb[level] / (seconds - overhead) if seconds is not None and seconds > overhead else fallback

    rack = rate(1, local_mbps)
    rates = [local_mbps, rack, rate(2, rack)]
    return {"task_overhead_s": round(overhead, 2), "cpu_s_per_mb": 0.0,
            "read_mbps_local": round(rates[0], 2), "read_mbps_rack": round(rates[1], 2),
            "read_mbps_remote": round(rates[2], 2),
            "sources": {"median_map_s": {n: (round(v, 2) if v is not None else None)
                                         for n, v in zip(LEVELS, med.values())},
                        "maps": {n: len(v) for n, v in zip(LEVELS, maps.seconds.values())},
                        "local_read_mbps": round(local_mbps, 1)}}


def shared_work_s(run, host_cores: int) -> np.ndarray:
    """Each task of a real ``run``: the seconds of work it did at the simulator's contention
    rules (SimConfig.host_cores, share_links), its time integrated at its share: a node-local
    task at min(1, host_cores / the node-local tasks running), a remote one at 1 / the remote
    tasks running on its link. The real runs do not record which holder a remote task read
    from; its reader's node stands for it: on the bundled cluster (2 workers a rack, a block on
    both racks) a worker's rack-local reads all come from its one rack-mate."""
    t = run.tasks
    launch, finish = np.asarray(t["launch_s"], float), np.asarray(t["finish_s"], float)
    local = np.asarray(t["locality"]) == 0
    node = np.asarray(t["node"])
    times = np.unique(np.concatenate([launch, finish]))
    mid, dt = (times[:-1] + times[1:]) / 2, np.diff(times)
    running = (launch[:, None] <= mid) & (finish[:, None] > mid)  # task x interval
    share = np.empty(running.shape)
    share[local] = np.minimum(1.0, host_cores / np.maximum(running[local].sum(0), 1))
    for n in np.unique(node[~local]):
        on_link = ~local & (node == n)
        share[on_link] = 1.0 / np.maximum(running[on_link].sum(0), 1)
    return (running * share * dt).sum(1)


def contended_task_model(runs, local_mbps: float, host_cores: int, executors: int,
                         map_mb: float = SITTING_MAP_MB) -> tuple[dict, float]:
    """The task model under contention (:func:`task_model`'s fields) and the executors'
    warm-up, from a Spark sitting's real ``runs`` (each of ``executors`` one-core executors
    held from the start) by :func:`shared_work_s`: a node-local task's work is the median
    node-local task's (its overhead: that less the read at ``local_mbps``, or none and the read
    faster when the task is quicker than that read); a remote level's rate, ``map_mb`` over the
    median remote task's work beyond the overhead (no off-rack task: the rack-local rate); the
    warm-up, the median extra work of the executors' first tasks (each run's first
    ``executors`` launched) over a warm node-local task."""
    work: dict[int, list[float]] = {0: [], 1: [], 2: []}
    first: list[float] = []
    for run in runs:
        w = shared_work_s(run, host_cores)
        loc = np.asarray(run.tasks["locality"])
        cold = np.zeros(len(w), bool)
        cold[np.argsort(np.asarray(run.tasks["launch_s"]), kind="stable")[:executors]] = True
        first += w[cold & (loc == 0)].tolist()
        for level in work:
            work[level] += w[~cold & (loc == level)].tolist()
    med = {k: statistics.median(v) if v else None for k, v in work.items()}
    overhead = max(0.0, med[0] - map_mb / local_mbps)
    local = local_mbps if overhead > 0 else map_mb / med[0]

    def rate(level: int, fallback: float) -> float:
        seconds = med[level]
        return map_mb / (seconds - overhead) if seconds is not None and seconds > overhead else fallback

    rack = rate(1, local)
    warmup = max(0.0, statistics.median(first) - med[0]) if first else 0.0
    model = {"task_overhead_s": round(overhead, 2), "cpu_s_per_mb": 0.0,
             "read_mbps_local": round(local, 2), "read_mbps_rack": round(rack, 2),
             "read_mbps_remote": round(rate(2, rack), 2),
             "sources": {"median_work_s": {n: (round(v, 2) if v is not None else None)
                                           for n, v in zip(LEVELS, med.values())},
                         "maps": {n: len(v) for n, v in zip(LEVELS, work.values())},
                         "first_tasks": len(first), "host_cores": host_cores,
                         "local_read_mbps": round(local_mbps, 1)}}
    return model, round(warmup, 2)


class ContendedSpark(NamedTuple):
    """:func:`contended_spark_config`'s answer, in the parts the scripts pass on separately:
    the task model, the machine's contention (the host's CPUs, the shared links, the executors'
    warm-up) and the policies' copies (on their source's link at the fitted rate,
    HDFS_REPLICATION_STREAMS a node), the last two keyword arguments of
    :func:`dsbra.sim.fitted.spark_arm_config`."""
    model: dict
    contention: dict
    copies: dict


def contended_spark_config(runs, network: dict, executors: int) -> ContendedSpark:
    """The Spark binding as benchmarks/compare_sim_spark.py validated it on a shared sitting
    (docs/benchmark.md 6.16): the task model fitted on the sitting's static ``runs`` under
    contention (:func:`contended_task_model`, ``network`` the bundled cluster's network.json),
    the contention and the copies."""
    model, warmup = contended_task_model(runs, local_read_mbps(network), network["cpus"], executors)
    return ContendedSpark(model, {"host_cores": network["cpus"], "share_links": True, "warmup_s": warmup},
                          {"copy_mbps": model["read_mbps_rack"], "copy_streams": HDFS_REPLICATION_STREAMS})


def map_cost_s(model: dict, mb: np.ndarray, level: int) -> np.ndarray:
    """A map's seconds in the simulator under ``model`` (:func:`task_model`'s): overhead +
    MB x (cpu s/MB + 1 / the level's read rate)."""
    return model["task_overhead_s"] + mb * (model["cpu_s_per_mb"] + 1 / model[READ_KEYS[level]])


def task_model_report(maps: Maps, model: dict) -> dict:
    """Per locality, the maps' times (median, quartiles, mean), their inputs' range, and what
    ``model`` leaves unexplained: the median and 90th percentile of |real - modelled seconds|;
    and how much longer than the node-local median map a non-local one took (median against
    median)."""
    out: dict = {"maps": sum(len(v) for v in maps.seconds.values()), "by_locality": {}}
    for level, name in enumerate(LOCALITIES):
        s, m = np.array(maps.seconds[level]), np.array(maps.mb[level])
        if not len(s):
            continue
        q1, med, q3 = np.percentile(s, [25, 50, 75])
        resid = np.abs(s - map_cost_s(model, m, level))
        out["by_locality"][name] = {
            "maps": int(len(s)), "median_s": float(med), "iqr_s": [float(q1), float(q3)],
            "mean_s": float(s.mean()), "input_mb_range": [float(m.min()), float(m.max())],
            "residual_mad_s": float(np.median(resid)),
            "residual_p90_abs_s": float(np.percentile(resid, 90))}
    node = out["by_locality"].get("NODE_LOCAL")
    if node:
        out["nonlocal_extra_s"] = {name: r["median_s"] - node["median_s"]
                                   for name, r in out["by_locality"].items() if name != "NODE_LOCAL"}
    return out


def map_phase(run) -> tuple[dict[str, float], dict[str, float]]:
    """Per job: when its maps became pending (first scheduled_s) and its map-phase response."""
    t = run.tasks
    pending: dict[str, float] = {}
    for job, s in zip(t["job_id"], t["scheduled_s"]):
        pending[job] = min(pending.get(job, s), s)
    j = run.jobs
    response = {job: fin - pending[job] for job, fin in zip(j["job_id"], j["finish_s"]) if job in pending}
    return pending, response


def am_startup_s(runs) -> float:
    """Median over ``runs`` of their first-submitted job's gap from submission to its first
    map request: the AM's start-up when no other AM holds it up."""
    gaps = []
    for run in runs:
        pending, _ = map_phase(run)
        j = run.jobs
        first = int(np.argmin(j["submit_s"]))
        gaps.append(pending[j["job_id"][first]] - j["submit_s"][first])
    return statistics.median(gaps)


def first_job_gap_s(real: dict[str, list]) -> float:
    """The AM start-up of a sitting's real runs by arm (the module's second fit): :func:`am_startup_s`
    over the arms that ran with delay scheduling, to 0.01 s."""
    return round(am_startup_s([r for arm, runs in real.items() if ARM_POLICY[arm][1] for r in runs]), 2)


def mean_wait(runs) -> float:
    """The maps' mean wait from pending to launch over ``runs``."""
    return statistics.fmean(w for run in runs for w in run.tasks["wait_s"])


def fit_static(schedule: Path, model: dict, am: dict, real_response_s: float, real_wait_s: float,
               slot_grid, startup_grid, seeds: int, out: Path, interval_s: float, binding: dict,
               capacity_node_delay: int | None = None) -> dict[tuple, tuple[float, float, float]]:
    """The module's third fit: the static arm simulated over ``seeds`` placements (runs under
    ``out/<point>/sim/static/seed<k>``) at every point (slots, heartbeat, AM start-up) of ``slot_grid`` x
    :data:`HEARTBEATS` x ``startup_grid`` (an AM start-up of None: ``am`` as it is), each
    point's (error, mean response, mean map wait), the error being the relative errors of
    response and wait against the real static arm's, summed. :func:`best` picks the point."""
    fit = {}
    for slots in slot_grid:
        for hb in HEARTBEATS:
            for startup in startup_grid:
                trial = am | ({"am_startup_s": startup} if startup is not None else {})
                name = f"s{slots}-hb{hb:g}" + (f"-am{startup:g}" if startup is not None else "")
                runs = [Run.load(d) for d in simulate_arm(
                    "static", schedule, model, slots, seeds, out / name, interval_s, hb, trial, binding,
                    capacity_node_delay)]
                resp = statistics.fmean(mean_or_none(r.jobs["response_s"]) for r in runs)
                wait = mean_wait(runs)
                fit[(slots, hb, startup)] = (abs(resp / real_response_s - 1) + abs(wait / real_wait_s - 1),
                                             resp, wait)
    return fit


def best(fit: dict[tuple, tuple[float, float, float]]) -> tuple:
    """The (slots, heartbeat, AM start-up) of :func:`fit_static`'s grid with the least error
    (the first such in the grid's order)."""
    return min(fit, key=lambda k: fit[k][0])
