"""Issue 69's question at scale: what the Spark binding, as compare_sim_spark.py validated it on a
real sitting, says of static, the default and the oracle on 20, 100 and 600 workers.

The sitting's schedule is copied to W workers at the same load per slot
(dsbra.bench.schedule.scaled_schedule: W / 4 copies, each reading its own files, arrivals
interleaved; racks max(2, W // 30)); one shared application holds 7 executors per 4 workers (the
sitting's 7 on its 4), a Fair pool per job. Everything else is the validated fit (``--fit``, the
sim-vs-real-spark.json compare_sim_spark.py wrote): the task model, the executors' warm-up, the
remote reads and the policies' copies sharing their holder's link at its fitted rate, the
node-local tasks sharing the host's CPUs. Those CPUs are the one thing the bundled cluster cannot
say at scale (its 4 workers share the machine's 2 cores), so each cluster size runs at
``--cpus-per-worker`` settings: 0.5 is the bundled cluster copied; 2 is a core per executor
slot. Arms: static, ``dsbra-popular`` (the default, adaptive-popular) and the oracle (every block
on every worker). Per setting and size: each arm's node locality and mean response, the
default against static paired by seed, its captured share of the oracle's gain and its storage.

Writes OUT/scale.json, OUT/schedule-<W>w.json and OUT/sim-spark-scale.md, and prints the command.

    python benchmarks/sim_spark_scale.py --out benchmarks/results/sim-spark-scale \\
        --cpus-per-worker 0.75 1 --workers 4 20 100 600 --seeds 10 --large-seeds 3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from dsbra.bench.schedule import (add_scale_study_arguments, format_interval, hot_files, scale_study_error,
                                  scale_study_seeds, seed_captured_ratio, seed_paired, write_scaled_schedule)
from dsbra.schedule_format import load_schedule
from dsbra.sim.fitted import spark_arm_config
from dsbra.sim.run import WorkloadSpec, simulate

RESULTS = Path(__file__).resolve().parent / "results"
FIT = RESULTS / "bench-spark-popular-oracle" / "sim-vs-real-spark.json"
BASE_WORKERS = 4  # the bundled cluster the sitting ran on
ARMS = ("static", "dsbra-popular", "oracle")
COLLAPSED = 5  # a run collapsed: its mean response over this many times the oracle's
MEASURES = ("mean_response_s", "node_locality", "hot_file_node_locality", "other_files_node_locality",
            "extra_storage_mean")


def load_fit(path: Path) -> dict:
    """compare_sim_spark.py's fit: the spark_arm_config keyword arguments for the sitting's 4
    workers (model, executors, heartbeat, wait, contention, copies), and its schedule."""
    doc = json.loads(path.read_text())
    return {"config": {"model": doc["task_model"], "executors": doc["executors"],
                       "heartbeat_s": doc["heartbeat_s"], "wait_s": doc["locality_wait_s"],
                       **doc["contention"], **(doc["copies"] or {})},
            "schedule": path.parent / "schedule.json", "command": doc["command"]}


def host_cores(cpus_per_worker: float, workers: int) -> int:
    cores = cpus_per_worker * workers
    if cores != int(cores) or cores < 1:
        raise ValueError(f"--cpus-per-worker {cpus_per_worker:g} on {workers} workers is not a whole "
                         f"number of CPUs ({cores:g})")
    return int(cores)


def run_one(fit: dict, arm: str, schedule: Path, hot: set[int], seed: int, workers: int,
            cpus_per_worker: float, legacy_reset: bool = False) -> dict:
    copies = workers // BASE_WORKERS
    cfg = spark_arm_config(arm, seed=seed, **{**fit["config"], "executors": fit["config"]["executors"] * copies,
                                              "host_cores": host_cores(cpus_per_worker, workers)})
    cfg = dataclasses.replace(cfg, nodes=workers, racks=max(2, workers // 30),
                              spark=dataclasses.replace(cfg.spark, legacy_reset=legacy_reset))
    res = simulate(cfg, WorkloadSpec(source=f"schedule:{schedule}"))
    s, t = res.summary, res.tasks
    local = np.asarray(t["locality"]) == 0
    on_hot = np.isin(np.asarray(t["block_id"]), list(hot))
    return {"arm": arm, "seed": seed, "nodes": workers, "cpus_per_worker": cpus_per_worker,
            "host_cores": cfg.host_cores, "tasks": s["tasks"], "node_locality": 100 * s["node_locality"],
            "hot_file_node_locality": 100 * float(local[on_hot].mean()),
            "other_files_node_locality": 100 * float(local[~on_hot].mean()),
            "mean_response_s": s["mean_response_s"], "extra_storage_mean": 100 * s["extra_storage_mean"],
            "wall_s": round(s["wall_s"], 1)}


def _mean(rows: list[dict], key: str, **match) -> str:
    vals = [r[key] for r in rows if all(r[k] == v for k, v in match.items())]
    return f"{statistics.fmean(vals):.1f}" if vals else "-"


def markdown(command: str, fit: dict, rows: list[dict]) -> str:
    c = fit["config"]
    rule = ("the legacy timer reset (spark.locality.wait.legacyResetOnTaskLaunch)" if fit.get("legacy_reset")
            else "Spark's timer reset since 3.1")
    lines = ["# The Spark binding at scale: static, the default and the oracle on 4 to 600 workers", "",
             f"`{command}`", "",
             f"The fit `{fit['command']}`: {c['executors']} executors per 4 workers in one shared application, "
             f"spark.locality.wait {c['wait_s']:g} s, {rule}, node heartbeat {c['heartbeat_s']:g} s, reads "
             f"{c['model']['read_mbps_local']:g} / {c['model']['read_mbps_rack']:g} MB/s (node / remote) at a "
             f"full share, remote reads and copies sharing their holder's link, an executor's first task "
             f"{c['warmup_s']:g} s more; the node-local tasks share `host_cores` = CPUs per worker x workers. "
             "Seeds are block placements, paired across arms. The hot file: the file most of the schedule's "
             "jobs read, one per copy.", "",
             f"Collapsed: runs whose mean response is over {COLLAPSED}x the oracle's mean on that setting.", "",
             "| CPUs per worker | workers | seeds | arm | collapsed | node locality % | mean response s | hot file's "
             "tasks local % | other files' tasks local % | extra storage mean % |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    settings = sorted({(r["cpus_per_worker"], r["nodes"]) for r in rows})
    for cpus, w in settings:
        for arm in ARMS:
            runs = [r for r in rows if r["arm"] == arm and r["nodes"] == w and r["cpus_per_worker"] == cpus]
            oracle = statistics.fmean(r["mean_response_s"] for r in rows if r["arm"] == "oracle"
                                      and r["nodes"] == w and r["cpus_per_worker"] == cpus)
            collapsed = sum(r["mean_response_s"] > COLLAPSED * oracle for r in runs)
            lines.append(f"| {cpus:g} | {w} | {len(runs)} | {arm} | {collapsed} | " + " | ".join(
                _mean(rows, k, arm=arm, nodes=w, cpus_per_worker=cpus) for k in
                ("node_locality", "mean_response_s", "hot_file_node_locality", "other_files_node_locality",
                 "extra_storage_mean")) + " |")
    lines += ["", "Against static on the same seed, mean [95% interval]: the oracle's gain, and the default's "
              "effect and captured share of the oracle's response gain (mean(static - default) / mean(static - "
              "oracle), 95% Fieller interval, as `dsbra report` takes it on the real sittings):", "",
              "| CPUs per worker | workers | oracle: response s | oracle: node locality, points | default: response s "
              "| default: node locality, points | default: other files' tasks, points | default: captured share % "
              "| default: storage, points |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for cpus, w in settings:
        match = {"nodes": w, "cpus_per_worker": cpus}
        d = {arm: {k: seed_paired(rows, k, {**match, "arm": "static"}, {**match, "arm": arm}) for k in MEASURES}
             for arm in ("oracle", "dsbra-popular")}
        oracle, default = d["oracle"], d["dsbra-popular"]
        cells = [format_interval(oracle["mean_response_s"], 2), format_interval(oracle["node_locality"]),
                 format_interval(default["mean_response_s"], 2), format_interval(default["node_locality"]),
                 format_interval(default["other_files_node_locality"]),
                 format_interval(seed_captured_ratio(rows, "dsbra-popular", **match), 0),
                 format_interval(default["extra_storage_mean"])]
        lines.append(f"| {cpus:g} | {w} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--fit", type=Path, default=FIT, help="a compare_sim_spark.py sim-vs-real-spark.json")
    add_scale_study_arguments(ap, 10, [4, 20, 100, 600], BASE_WORKERS)
    ap.add_argument("--cpus-per-worker", type=float, nargs="+", default=[0.75, 1.0],
                    help="the CPUs the node-local tasks share, per worker (0.5: the bundled cluster's)")
    ap.add_argument("--locality-wait-s", type=float,
                    help="spark.locality.wait (and DSBRA's D) instead of the fit's")
    ap.add_argument("--legacy-reset", action="store_true",
                    help="the delay-scheduling timer reset on every launch, as before Spark 3.1 "
                         "(spark.locality.wait.legacyResetOnTaskLaunch)")
    a = ap.parse_args()
    if error := scale_study_error(a.seeds, a.large_seeds, a.workers, BASE_WORKERS):
        ap.error(error)
    try:
        for cpus in a.cpus_per_worker:
            for w in a.workers:
                host_cores(cpus, w)
    except ValueError as e:
        ap.error(str(e))
    if not a.fit.exists():
        ap.error(f"no fit at {a.fit} (run compare_sim_spark.py on that sitting first)")
    if a.locality_wait_s is not None and a.locality_wait_s < 0:
        ap.error(f"--locality-wait-s must be at least 0, got {a.locality_wait_s:g}")
    fit = load_fit(a.fit)
    if a.locality_wait_s is not None:
        fit["config"]["wait_s"] = a.locality_wait_s
    fit["legacy_reset"] = a.legacy_reset
    command = "python benchmarks/sim_spark_scale.py " + " ".join(sys.argv[1:])
    base = load_schedule(fit["schedule"])
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for w in a.workers:
        path = write_scaled_schedule(a.out, base, w, BASE_WORKERS)
        hot = hot_files(base, w // BASE_WORKERS)
        for cpus in a.cpus_per_worker:
            for arm in ARMS:
                for seed in range(scale_study_seeds(w, a.seeds, a.large_seeds)):
                    rows.append(run_one(fit, arm, path, hot, seed, w, cpus, a.legacy_reset))
                    r = rows[-1]
                    print(f"{w} workers, {cpus:g} CPUs each, {arm}, seed {seed}: node locality "
                          f"{r['node_locality']:.1f}%, mean response {r['mean_response_s']:.1f} s "
                          f"({r['wall_s']} s)", flush=True)
            (a.out / "scale.json").write_text(json.dumps({"command": command, "rows": rows}, indent=1) + "\n")
    (a.out / "sim-spark-scale.md").write_text(markdown(command, fit, rows))
    print(markdown(command, fit, rows))
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
