"""The experiments' designs checked in the simulator: how far each one's estimate is from the
policy's true total effect, and how often its 95% interval holds it (issue 45).

Per setup and seed, four simulated runs of one workload: ``static`` (no policy), ``full``
(the policy on all the time: what the operator deploys), ``switchback`` (the policy on and off
by period) and ``holdout`` (half of the files the policy raises held out). The true total
effect is full against static, over every job and map of the run: the effect on the cluster,
the other files' maps and the policy's copies included. The switchback's estimate is its on
periods against its off ones (dsbra.experiment.switchback); the holdout's, `dsbra impact`'s treated
files against held-out ones, over the maps of decided files (it has no job-level estimate);
``switchback_queue``, the switchback's response with the shared queue's bias taken out
(dsbra.experiment.queue_replay).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import tempfile
from pathlib import Path

import numpy as np

from dsbra.errors import InputError
from dsbra.experiment.config import ExperimentConfig
from dsbra.experiment.design import Switchback
from dsbra.experiment.impact import impact
from dsbra.experiment.switchback import (estimate, job_exposure, judge_finished_jobs, period_means,
                                         queue_adjusted, queue_adjusted_blocks)
from dsbra.policy.profiles import PRE_HOLD_PROFILE
from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.setups import setup
from dsbra.stats import mean_t_interval

#: (named setup, workload changes): a workload an hour long, so that a switchback of
#: 5-minute periods has six blocks; "uniform" is hotspot-stress without its hot spots
SETUPS: dict[str, tuple[str, dict]] = {
    "hotspot-stress": ("hotspot-stress", {"jobs": 1200}),
    "hotspot-stress-long": ("hotspot-stress-long", {"jobs": 1200}),
    "uniform": ("hotspot-stress", {"jobs": 1200, "hot_fraction": 0.0}),
}
#: the designs' read-outs: the switchback's, its queue-adjusted response, the file holdout's
DESIGNS = ("switchback", "switchback_queue", "holdout")
#: the metrics both designs estimate (the holdout has no job response)
METRICS = ("response", "node_locality", "delay_wait_s", "map_s")


def configs(name: str, seed: int, policy: str = "dsbra", jobs: int | None = None,
            copy_streams: int = 0, profile: str = PRE_HOLD_PROFILE,
            inter_arrival_s: float | None = None) -> tuple[SimConfig, WorkloadSpec]:
    """``jobs``: instead of the setup's (a longer run for longer periods); ``copy_streams``:
    copies as DataNode traffic (SimConfig.copy_streams; 0, the setups' own, costs nothing);
    ``profile``: DSBRA's (the adaptive profile by default, the default the design studies up
    to 2026-12-02 measured); ``inter_arrival_s``: the jobs' mean gap instead of the setup's
    3 s, with as many jobs as keep the workload an hour long (unless ``jobs`` says)."""
    base, changes = SETUPS[name]
    s = setup(base)
    params = {"profile": profile} if policy == "dsbra" else {}
    load = {} if inter_arrival_s is None else {"inter_arrival_s": inter_arrival_s,
                                               "jobs": int(round(3600 / inter_arrival_s))}
    return (SimConfig(**s["cluster"], policy=policy, policy_params=params, seed=seed,
                      copy_streams=copy_streams),
            WorkloadSpec(**{**s["workload"], **changes, **load, **({"jobs": jobs} if jobs else {})}))


def whole_run(result) -> dict[str, float]:
    """Mean job response and the per-map means of a run, over all of its jobs and maps."""
    t = result.tasks
    finish, launch = np.asarray(t["finish_s"], float), np.asarray(t["launch_s"], float)
    return {"response": float(np.mean(result.jobs["response_s"])),
            "node_locality": float(np.mean(np.asarray(t["locality"]) == 0)),
            "delay_wait_s": float(np.mean(t["delay_wait_s"])),
            "map_s": float(np.mean(finish - launch))}


def true_effect(full: dict[str, float], static: dict[str, float]) -> dict[str, float]:
    """Full against static: the response relative, the map metrics as differences."""
    return {m: (full[m] / static[m] - 1.0 if m == "response" else full[m] - static[m])
            for m in METRICS}


def switchback_read_out(result, sb: Switchback) -> dict:
    """The switchback run's estimate, from its jobs and maps as the daemon would record them."""
    t, j = result.tasks, result.jobs
    ms = lambda v: np.round(np.asarray(v, float) * 1000).astype(np.int64)  # noqa: E731
    finish, launch = np.asarray(t["finish_s"], float), np.asarray(t["launch_s"], float)
    table = period_means(sb, job_submit_ms=ms(j["submit_s"]), job_response_s=j["response_s"],
                         map_launch_ms=ms(launch),
                         map_node_local=(np.asarray(t["locality"]) == 0).astype(float),
                         map_delay_wait_s=t["delay_wait_s"], map_s=finish - launch,
                         job_exposure=job_exposure(sb, j["job_id"], t["job_id"], ms(launch)))
    return estimate(table)


def queue_adjusted_read_out(result, sb: Switchback) -> dict:
    """The switchback run's queue-adjusted response (dsbra.experiment.queue_replay), from its jobs
    and maps as the daemon records them, the slots inferred from them as `dsbra impact` does."""
    t, j = result.tasks, result.jobs
    ms = lambda v: np.round(np.asarray(v, float) * 1000).astype(np.int64)  # noqa: E731
    launch, finish = np.asarray(t["launch_s"], float), np.asarray(t["finish_s"], float)
    values, info = queue_adjusted_blocks(
        sb, job_ids=j["job_id"], job_submit_ms=ms(j["submit_s"]), job_response_s=j["response_s"],
        map_job_ids=t["job_id"], map_launch_ms=ms(launch), map_s=finish - launch)
    return queue_adjusted(values) | info


def guard_fires_at(result, sb: Switchback, margin: float) -> float | None:
    """When the do-no-harm guard would have stopped the switchback run (simulated s), judged
    as the daemon does at each block's end on the jobs finished and the maps launched by then,
    of the blocks that ended a period before (dsbra.experiment.switchback.settled); None: never. The
    run up to that moment is the same whether the guard then acts or not."""
    finish = np.asarray(result.jobs["finish_s"], float)
    end = float(finish.max()) if len(finish) else 0.0
    for k in range(1, int(end // (2 * sb.period_s)) + 1):
        t = 2 * k * sb.period_s
        if judge_finished_jobs(sb, result.jobs["submit_s"], finish, t, margin,
                               result.tasks["launch_s"], result.tasks["finish_s"]) is not None:
            return t
    return None


def one(name: str, seed: int, period_s: float, burn_in_s: float, holdout: float,
        guard_margin: float = 0.05, jobs: int | None = None, copy_streams: int = 0,
        profile: str = PRE_HOLD_PROFILE, inter_arrival_s: float | None = None) -> dict:
    """The four runs of one setup and seed, and each design's estimate against the truth."""
    cfg, spec = configs(name, seed, jobs=jobs, copy_streams=copy_streams, profile=profile,
                        inter_arrival_s=inter_arrival_s)
    full = whole_run(simulate(cfg, spec))
    static = whole_run(simulate(dataclasses.replace(cfg, policy="static", policy_params={}), spec))
    truth = true_effect(full, static)
    sb_cfg = dataclasses.replace(cfg, experiment=ExperimentConfig(
        design="switchback", seed=seed, period_s=period_s, burn_in_s=burn_in_s))
    design = Switchback(period_s, seed, burn_in_s=burn_in_s)
    sb_run = simulate(sb_cfg, spec)
    sb = switchback_read_out(sb_run, design)
    queued = queue_adjusted_read_out(sb_run, design)
    guard_at = guard_fires_at(sb_run, design, guard_margin)
    with tempfile.TemporaryDirectory() as scratch:
        simulate(dataclasses.replace(cfg, experiment=ExperimentConfig(holdout=holdout, seed=seed)),
                 spec, out_dir=Path(scratch))
        try:
            ho = impact(Path(scratch))
        except InputError:  # the policy decided no file: nothing to compare
            ho = {"files": {"treated": 0, "control": 0}}
    return {"setup": name, "seed": seed, "static": static, "full": full, "true": truth,
            "switchback": {m: sb[m] for m in METRICS} | {"verdict": sb["verdict"],
                                                        "periods": sb["periods"]},
            "switchback_queue": {"response": queued},

            "guard": {"margin": guard_margin, "fires_at_s": guard_at},
            "holdout": {m: {"diff": ho[m]["diff"], "ci95": ho[m]["ci95"]}
                        for m in METRICS if m in ho} | {"files": ho["files"]}}


def coverage(rows: list[dict], design: str, metric: str) -> dict:
    """The design's estimates of ``metric`` over the seeds against the truth: the mean true
    effect (with its interval over seeds), the mean estimate, the bias (their difference) and
    in how many runs the 95% interval held the seed's own true effect and the mean one."""
    truths = [r["true"][metric] for r in rows]
    est = [(r[design][metric], r["true"][metric]) for r in rows if metric in r[design]]
    diffs = [(e["diff"], t) for e, t in est if e["diff"] is not None]
    with_ci = [(e["ci95"], t) for e, t in est if e.get("ci95")]
    mean_true = statistics.mean(truths)
    ti = mean_t_interval(truths)
    bias = [e - t for e, t in diffs]
    bi = mean_t_interval(bias)
    return {
        "seeds": len(rows), "estimates": len(diffs), "intervals": len(with_ci),
        "mean_true": _r(mean_true), "true_ci95": None if ti is None else [_r(ti[1]), _r(ti[2])],
        "mean_estimate": _r(statistics.mean(e for e, _ in diffs)) if diffs else None,
        "bias": _r(statistics.mean(bias)) if bias else None,
        "bias_ci95": None if bi is None else [_r(bi[1]), _r(bi[2])],
        "bias_over_true": (_r(statistics.mean(bias) / mean_true)
                           if bias and mean_true else None),
        "covers_own_truth": _share(sum(lo <= t <= hi for (lo, hi), t in with_ci), len(with_ci)),
        "covers_mean_truth": _share(sum(lo <= mean_true <= hi for (lo, hi), _ in with_ci),
                                    len(with_ci)),
    }


def summarize(rows: list[dict]) -> dict:
    out: dict = {}
    for name in sorted({r["setup"] for r in rows}):
        mine = [r for r in rows if r["setup"] == name]
        out[name] = {design: {m: coverage(mine, design, m) for m in METRICS
                              if any(m in r[design] for r in mine)}
                     for design in DESIGNS}
        out[name]["guard_fired"] = _share(sum(r["guard"]["fires_at_s"] is not None for r in mine),
                                          len(mine))
        contrasts = [r["switchback"]["response"]["contrast"] for r in mine
                     if r["switchback"]["response"].get("contrast") is not None]
        if contrasts:
            out[name]["contrast"] = _r(statistics.mean(contrasts))
    return out


def _share(k: int, n: int) -> dict:
    return {"runs": k, "of": n, "share": None if not n else round(k / n, 3)}


def _r(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 4)


#: a DSBRA made to harm (the guard's test): every block with a delayed read is hot, grows to
#: every node and goes back as soon as its demand falls, no hysteresis: its copies never stop
CHURNING_POLICY = {"profile": PRE_HOLD_PROFILE, "hot_factor": 0.0, "min_pressure": 0.0, "min_reads": 1,
                   "holder_share": 0.001, "budget_fraction": None}
#: the guard's power runs: 8 nodes whose copies are DataNode traffic (two streams a sender)
GUARD_CLUSTER = dict(nodes=8, slots_per_node=2, racks=2, replication=2, block_size_mb=64,
                     task_overhead_s=5.0, read_mbps_local=10.0, read_mbps_rack=5.0,
                     read_mbps_remote=2.5, interval_s=20.0, copy_mbps=10.0, copy_streams=2)


def no_hot_spots(jobs: int) -> WorkloadSpec:
    """The guard's workload: ``jobs`` jobs 8 s apart reading 20 GB uniformly."""
    return WorkloadSpec(jobs=jobs, inter_arrival_s=8.0, hot_fraction=0.0, dataset_gb=20.0,
                        bin_scale=0.05)


def guard_power_run(seed: int, jobs: int, period_s: float, margin: float) -> dict:
    """One seed of the churning policy on :func:`no_hot_spots`: static, the policy always on
    (the true harm), and a switchback with the guard at ``margin`` (where it stopped the
    policy, if it did)."""
    workload = no_hot_spots(jobs)
    base = dict(GUARD_CLUSTER, seed=seed)
    static = simulate(SimConfig(**base, policy="static"), workload).summary
    always = simulate(SimConfig(**base, policy="dsbra", policy_params=CHURNING_POLICY),
                      workload).summary
    guarded = simulate(SimConfig(**base, policy="dsbra", policy_params=CHURNING_POLICY,
                                 experiment=ExperimentConfig(
                                     design="switchback", seed=seed, period_s=period_s,
                                     burn_in_s=period_s / 6, guard=True, guard_margin=margin)),
                      workload).rounds
    paused = [r["time_s"] for r in guarded if r["paused"]]
    return {"seed": seed, "static_response_s": static["mean_response_s"],
            "always_response_s": always["mean_response_s"],
            "true_harm": always["mean_response_s"] / static["mean_response_s"] - 1,
            "guard_stopped_at_s": paused[0] if paused else None,
            "run_s": max(r["time_s"] for r in guarded)}
