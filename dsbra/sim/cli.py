"""``dsbra sim``: run the discrete-event simulator and write per-job/per-task Parquet plus
summary.json."""

from __future__ import annotations

import logging
import sys
from dataclasses import fields
from pathlib import Path

import click

from dsbra.errors import InputError
from dsbra.experiment.config import ExperimentConfig
from dsbra.policy.profiles import parse_assignments
from dsbra.sim.config import (BINDINGS, DELAY_MODES, HADOOP_AM_HEARTBEAT_S, ORACLE, PLACEMENTS,
                              REACTIVE_ORACLE, SCHEDULERS, SIGNALS, SPARK_APPS,
                              SPARK_SCHEDULING_MODES, SimConfig, SparkSettings)
from dsbra.sim.workload import ARRIVALS

log = logging.getLogger(__name__)


@click.command("sim", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--nodes", type=int, default=20, show_default=True, help="Worker nodes M.")
@click.option("--slots-per-node", type=int, default=2, show_default=True,
              help="Map slots per node L.")
@click.option("--racks", type=int, default=2, show_default=True, help="Racks K.")
@click.option("--replication", type=int, default=2, show_default=True,
              help="HDFS base replication R.")
@click.option("--block-size-mb", type=float, default=64.0, show_default=True)
@click.option("--max-replication", type=int, default=10, show_default=True,
              help="Most replicas a block may get from the policy.")
@click.option("--workload", "workload", default="fb2009-bins", show_default=True,
              help="fb2009-bins (Table 3 bins), swim:PATH (a SWIM TSV trace) or schedule:PATH "
                   "(a `dsbra bench schedule` file: the jobs a real-cluster replay runs).")
@click.option("--jobs", type=int, default=None,
              help="Jobs (fb2009-bins: default 100; swim: first N of the trace).")
@click.option("--inter-arrival-s", type=float, default=None,
              help="Mean gap between jobs (fb2009-bins: default 14; swim: rescale the trace's "
                   "submit times to this mean gap).")
@click.option("--arrivals", type=click.Choice(ARRIVALS), default="exp",
              show_default=True, help="fb2009-bins gaps: exponential or fixed.")
@click.option("--hot-fraction", type=float, default=0.1, show_default=True,
              help="Fraction of the data set's blocks made hot at a time (traces without paths).")
@click.option("--hot-share", type=float, default=0.5, show_default=True,
              help="Probability that a map reads a hot block.")
@click.option("--hot-period-s", type=float, default=300.0, show_default=True,
              help="Re-draw the hot blocks this often.")
@click.option("--dataset-gb", type=float, default=100.0, show_default=True,
              help="Shared data set size (at least 2x the largest job's blocks).")
@click.option("--max-maps", type=int, default=None,
              help="swim: cap on maps per job (default: nodes x slots).")
@click.option("--bin-scale", type=float, default=None,
              help="fb2009-bins: factor for bins 3-9 (default min(1, slots/400)).")
@click.option("--scheduler", type=click.Choice(SCHEDULERS), default="fair",
              show_default=True)
@click.option("--binding", type=click.Choice(BINDINGS), default="yarn-mr", show_default=True,
              help="yarn-mr: containers granted against each job's asks and bound to maps by its "
                   "MapReduce ApplicationMaster at its heartbeats (YARN); task: a free slot goes "
                   "straight to a waiting map (Hadoop 1's JobTracker); spark: executors from "
                   "YARN, tasks bound by the Spark driver (the --spark-* options).")
@click.option("--spark-app", type=click.Choice(SPARK_APPS), default=SparkSettings.app,
              show_default=True,
              help="spark: one shared application (a Thrift server holding its executors, the "
                   "jobs in its pools) or one application per job.")
@click.option("--spark-executors", type=int, default=SparkSettings.executors, show_default=True,
              help="spark: spark.executor.instances (with --spark-dynamic the initial number).")
@click.option("--spark-executor-cores", type=int, default=SparkSettings.executor_cores,
              show_default=True, help="spark: spark.executor.cores, each one of a node's slots.")
@click.option("--spark-executor-startup-s", type=float,
              default=SparkSettings.executor_startup_s, show_default=True,
              help="spark: from YARN's grant of an executor's container to its registration.")
@click.option("--spark-executor-warmup-s", type=float,
              default=SparkSettings.executor_warmup_s, show_default=True,
              help="spark: the work an executor's first task costs beyond the task model (its "
                   "JVM warming up).")
@click.option("--spark-locality-wait-s", type=float, default=SparkSettings.locality_wait_s,
              show_default=True, help="spark: spark.locality.wait.")
@click.option("--spark-locality-wait-node-s", type=float, default=None,
              help="spark: spark.locality.wait.node (default: --spark-locality-wait-s).")
@click.option("--spark-locality-wait-rack-s", type=float, default=None,
              help="spark: spark.locality.wait.rack (default: --spark-locality-wait-s).")
@click.option("--spark-legacy-reset/--no-spark-legacy-reset", default=False, show_default=True,
              help="spark: reset the locality timer on every local launch, as before Spark 3.1 "
                   "(spark.locality.wait.legacyResetOnTaskLaunch).")
@click.option("--spark-revive-s", type=float, default=SparkSettings.revive_s, show_default=True,
              help="spark: spark.scheduler.revive.interval.")
@click.option("--spark-scheduling-mode", type=click.Choice(SPARK_SCHEDULING_MODES),
              default=SparkSettings.scheduling_mode, show_default=True,
              help="spark: spark.scheduler.mode of the shared application.")
@click.option("--spark-pools", type=int, default=SparkSettings.pools, show_default=True,
              help="spark: fair pools of the shared application, job j in pool j mod N "
                   "(0: a pool per job).")
@click.option("--spark-pool-min-share", type=int, default=SparkSettings.pool_min_share,
              show_default=True, help="spark: each pool's minShare.")
@click.option("--spark-dynamic/--no-spark-dynamic", default=False, show_default=True,
              help="spark: dynamic allocation (spark.dynamicAllocation.enabled, shuffle "
                   "tracking).")
@click.option("--spark-min-executors", type=int, default=SparkSettings.min_executors,
              show_default=True, help="spark: spark.dynamicAllocation.minExecutors.")
@click.option("--spark-max-executors", type=int, default=None,
              help="spark: spark.dynamicAllocation.maxExecutors (default: no bound).")
@click.option("--spark-idle-timeout-s", type=float, default=SparkSettings.idle_timeout_s,
              show_default=True, help="spark: spark.dynamicAllocation.executorIdleTimeout.")
@click.option("--am-heartbeat-s", type=float, default=HADOOP_AM_HEARTBEAT_S, show_default=True,
              help="yarn-mr: the ApplicationMasters' heartbeat to the ResourceManager "
                   "(yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms; the bundled cluster "
                   "sets 0.5).")
@click.option("--delay-mode", type=click.Choice(DELAY_MODES), default="hfs",
              show_default=True,
              help="hfs: waits W1/W2 in seconds (the paper's HFS under --binding task; the Fair "
                   "Scheduler's continuous-scheduling rule under yarn-mr); yarn: FairScheduler "
                   "opportunity counts (--yarn-threshold-node/rack).")
@click.option("--delay-node-s", type=float, default=5.0, show_default=True,
              help="W1: node-locality wait (hfs). 0 with --delay-rack-s 0 = no delay scheduling.")
@click.option("--delay-rack-s", type=float, default=5.0, show_default=True,
              help="W2: further rack-locality wait (hfs).")
@click.option("--yarn-threshold-node", type=float, default=SimConfig.yarn_threshold_node, show_default=True,
              help="yarn: locality.threshold.node (fraction of nodes within 0..1; -1 disables).")
@click.option("--yarn-threshold-rack", type=float, default=SimConfig.yarn_threshold_rack, show_default=True,
              help="yarn: locality.threshold.rack.")
@click.option("--node-locality-delay", type=int, default=SimConfig.node_locality_delay, show_default=True,
              help="capacity: missed scheduling opportunities before a rack-local map (capped by "
                   "--nodes; -1: no delay).")
@click.option("--rack-locality-additional-delay", type=int,
              default=SimConfig.rack_locality_additional_delay, show_default=True,
              help="capacity: further missed opportunities before an off-switch map (-1: the "
                   "locality wait factor).")
@click.option("--heartbeat-s", type=float, default=1.0, show_default=True,
              help="NodeManager heartbeat interval.")
@click.option("--assign-multiple/--no-assign-multiple", default=False, show_default=True,
              help="Fill all free slots of a node per heartbeat.")
@click.option("--am-slots", type=float, default=0.0, show_default=True,
              help="Map slots an ApplicationMaster holds on one node while its job runs "
                   "(0: no AMs, maps pending at submission; 1.25 = a 640 MB AM beside 512 MB maps).")
@click.option("--am-startup-s", type=float, default=0.0, show_default=True,
              help="From an AM's start to its maps' requests.")
@click.option("--max-am-share", type=float, default=1.0, show_default=True,
              help="Share of the cluster's slots AMs may hold at once (Fair Scheduler maxAMShare; "
                   "-1: no limit).")
@click.option("--task-overhead-s", type=float, default=2.0, show_default=True)
@click.option("--cpu-s-per-mb", type=float, default=0.02, show_default=True)
@click.option("--read-mbps", nargs=3, type=float, default=(40.0, 20.0, 10.0),
              show_default=True, help="Read bandwidth local, rack, remote (MB/s).")
@click.option("--copy-mbps", type=float, default=40.0, show_default=True,
              help="Re-replication copy bandwidth per block (MB/s).")
@click.option("--copy-streams", type=click.IntRange(min=0), default=0, show_default=True,
              help="Copies a DataNode sends at once (dfs.namenode.replication.max-streams; "
                   "Hadoop's default is 2); a running copy slows the maps reading on its source "
                   "and its target. 0: copies cost the maps nothing.")
@click.option("--host-cores", type=click.IntRange(min=0), default=0, show_default=True,
              help="Every node's node-local maps share one host of this many CPUs, by processor "
                   "sharing (the bundled cluster's workers are one machine's). 0: no sharing.")
@click.option("--share-links/--no-share-links", default=False, show_default=True,
              help="A remote read shares its holder's link with the remote reads it serves at "
                   "once, by processor sharing; with --copy-streams, so does each copy it sends.")
@click.option("--policy", default="static", show_default=True,
              help="static, dsbra, dsbra-literal, scarlett, dare, oracle (every block on "
                   "every node from the start: the limit of what replication can do), or "
                   "oracle-reactive (a block on every node, instantly, once a job asks for it: "
                   "the limit of a policy that reacts).")
@click.option("--policy-param", "policy_param", multiple=True, metavar="KEY=VALUE",
              help="Policy parameter override (JSON value), repeatable.")
@click.option("--interval-s", type=float, default=60.0, show_default=True,
              help="Policy period.")
@click.option("--delay-threshold-s", type=float, default=None,
              help="D (cap on a task's delay wait; DSBRA's normaliser). Default: W1.")
@click.option("--placement", type=click.Choice(PLACEMENTS), default="heat", show_default=True,
              help="Who picks the nodes of the policy's new and removed replicas: heat = the "
                   "policy (a NameNode with the placement plugin); default = the stock "
                   "NameNode's BlockPlacementPolicyDefault (random nodes, its rack and "
                   "deletion rules).")
@click.option("--signals", type=click.Choice(SIGNALS), default="scheduler",
              show_default=True,
              help="Window signals M/DT from the scheduler's own accounting, or from the rule "
                   "the daemon applies on a real cluster (dsbra.signals.attribution).")
@click.option("--observed-grace-s", type=float, default=2.5, show_default=True,
              help="observed: a map's own allocation round trip.")
@click.option("--observed-settle-s", type=float, default=2.5, show_default=True,
              help="observed: how long a node must sit idle to count as declined.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--holdout", type=float, default=0.0, show_default=True,
              help="Hold out this share of the files the policy raises, as the daemon's "
                   "experiment.holdout does; writes experiment.jsonl and maps/ for dsbra impact.")
@click.option("--holdout-seed", type=int, default=0, show_default=True,
              help="With a file's path, decides its group (the daemon's experiment.seed).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              required=True, help="Output directory (jobs/tasks/rounds Parquet, summary.json).")
@click.option("--setup", "setup_name", default=None,
              help="Start from a named setup of dsbra.sim.setups (paper, paper-h1, fb2010, "
                   "fb2010-calibrated, ...); flags given on the command line override it.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: when stderr is a terminal).")
def sim(**kw) -> None:
    """Simulate a Hadoop cluster (HDFS placement, Fair Scheduler with delay scheduling or FIFO,
    YARN's container grants and the MapReduce ApplicationMaster's binding, or Spark's executors
    and driver with --binding spark) running a job schedule under a replication policy, calling the same policy code as the daemon every
    --interval-s. Deterministic for a given --seed."""
    from dsbra.policy.registry import POLICY_NAMES
    from dsbra.sim.run import WorkloadSpec, simulate

    known = (*POLICY_NAMES, ORACLE, REACTIVE_ORACLE)
    if kw["policy"] not in known:
        raise InputError(f"unknown policy {kw['policy']!r}; known: {', '.join(known)}")
    if kw["setup_name"]:
        _apply_setup(kw, kw["setup_name"])
    local, rack, remote = kw["read_mbps"]
    cfg = SimConfig(
        nodes=kw["nodes"], slots_per_node=kw["slots_per_node"], racks=kw["racks"],
        replication=kw["replication"], block_size_mb=kw["block_size_mb"],
        max_replication=kw["max_replication"], scheduler=kw["scheduler"],
        delay_mode=kw["delay_mode"], delay_node_s=kw["delay_node_s"],
        delay_rack_s=kw["delay_rack_s"], yarn_threshold_node=kw["yarn_threshold_node"],
        yarn_threshold_rack=kw["yarn_threshold_rack"], heartbeat_s=kw["heartbeat_s"],
        node_locality_delay=kw["node_locality_delay"],
        rack_locality_additional_delay=kw["rack_locality_additional_delay"],
        assign_multiple=kw["assign_multiple"], binding=kw["binding"],
        am_heartbeat_s=kw["am_heartbeat_s"], am_slots=kw["am_slots"],
        am_startup_s=kw["am_startup_s"], max_am_share=kw["max_am_share"],
        task_overhead_s=kw["task_overhead_s"],
        cpu_s_per_mb=kw["cpu_s_per_mb"], read_mbps_local=local, read_mbps_rack=rack,
        read_mbps_remote=remote, copy_mbps=kw["copy_mbps"],
        copy_streams=kw["copy_streams"], host_cores=kw["host_cores"],
        share_links=kw["share_links"], policy=kw["policy"],
        policy_params=parse_assignments(kw["policy_param"], "--policy-param"), interval_s=kw["interval_s"],
        delay_threshold_s=kw["delay_threshold_s"], placement=kw["placement"],
        signals=kw["signals"],
        observed_grace_s=kw["observed_grace_s"], observed_settle_s=kw["observed_settle_s"],
        seed=kw["seed"],
        experiment=ExperimentConfig(holdout=kw["holdout"], seed=kw["holdout_seed"]),
        spark=SparkSettings(**{f.name: kw[f"spark_{f.name}"] for f in fields(SparkSettings)
                               if f"spark_{f.name}" in kw})).validated()
    spec = WorkloadSpec(source=kw["workload"], jobs=kw["jobs"],
                        inter_arrival_s=kw["inter_arrival_s"], arrivals=kw["arrivals"],
                        hot_fraction=kw["hot_fraction"], hot_share=kw["hot_share"],
                        hot_period_s=kw["hot_period_s"], dataset_gb=kw["dataset_gb"],
                        max_maps=kw["max_maps"], bin_scale=kw["bin_scale"])
    progress = kw["progress"] if kw["progress"] is not None else sys.stderr.isatty()
    result = simulate(cfg, spec, out_dir=kw["out_dir"], progress=progress)
    s = result.summary
    click.echo(f"{s['jobs']} jobs, {s['tasks']} maps: node locality {s['node_locality']:.3f}, "
               f"rack {s['rack_locality']:.3f}, mean response {s['mean_response_s']:.1f} s, "
               f"extra storage mean {100 * s['extra_storage_mean']:.1f}% "
               f"max {100 * s['extra_storage_max']:.1f}%; {s['events']} events in "
               f"{s['wall_s']:.1f} s -> {kw['out_dir']}")


def _apply_setup(kw: dict, name: str) -> None:
    """Fill ``kw`` from the named setup wherever the user left a flag at its default."""
    from dsbra.sim.setups import setup

    ctx = click.get_current_context()
    given = {k for k in kw if ctx.get_parameter_source(k) != click.core.ParameterSource.DEFAULT}
    s = setup(name)
    values = {**s["cluster"], **s["workload"]}
    if "source" in values:
        values["workload"] = values.pop("source")
    read = [values.pop(f"read_mbps_{k}", None) for k in ("local", "rack", "remote")]
    if any(r is not None for r in read) and "read_mbps" not in given:
        kw["read_mbps"] = tuple(r if r is not None else d for r, d in zip(read, kw["read_mbps"]))
    for key, value in values.items():
        if key not in kw:
            raise InputError(f"setup {name!r}: {key} has no dsbra sim flag")
        if key not in given:
            kw[key] = value
