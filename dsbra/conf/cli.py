"""`dsbra conf delay | render | check`."""

from __future__ import annotations

import json
from pathlib import Path

import click
import requests

from dsbra.cli_options import secure_sessions, security_options
from dsbra.cluster.values import load_values
from dsbra.conf.advice import advise
from dsbra.conf.check import compare, notes, read_live, read_rendered, readiness
from dsbra.conf.delay import size_capacity_delay, size_delay, size_spark_delay
from dsbra.conf.render import render_values, write_rendered
from dsbra.conf.spark_check import check_app, read_app
from dsbra.errors import InputError


@click.group("conf")
def conf() -> None:
    """Size delay scheduling (YARN's or Spark's), render Hadoop, Fair or Capacity Scheduler and
    Spark configs from a values file, and check a live cluster or Spark application."""


#: `conf delay`'s options that belong to one engine (the others leave them unset)
YARN_ONLY = ("slots_per_node", "heartbeat_s", "scheduler")
SPARK_ONLY = ("executors", "executor_cores", "executor_nodes", "racks")


@conf.command()
@click.option("--locality", type=float, required=True, help="Target node locality lambda, in (0, 1).")
@click.option("--tasks", type=int, required=True, help="Tasks per job N.")
@click.option("--nodes", type=int, required=True, help="Nodes in the cluster M.")
@click.option("--replication", type=int, required=True, help="Replicas per block R.")
@click.option("--slots-per-node", type=int, default=None, help="Task slots per node L (with --task-seconds).")
@click.option("--task-seconds", type=float, default=None,
              help="Mean task length T in seconds (needed with --engine spark).")
@click.option("--heartbeat-s", type=float, default=1.0, show_default=True,
              help="NodeManager heartbeat interval (yarn.resourcemanager.nodemanagers.heartbeat-interval-ms / 1000).")
@click.option("--scheduler", type=click.Choice(["fair", "capacity"]), default="fair", show_default=True,
              help="Whose settings to print: the Fair Scheduler's or the Capacity Scheduler's.")
@click.option("--engine", type=click.Choice(["yarn", "spark"]), default="yarn", show_default=True,
              help="yarn: the YARN scheduler's delay for containers (--scheduler); spark: Spark's "
                   "spark.locality.wait per level, the driver's delay for tasks on its executors.")
@click.option("--executors", type=int, default=None, help="--engine spark: the application's executors.")
@click.option("--executor-cores", type=int, default=1, show_default=True,
              help="--engine spark: task slots per executor (spark.executor.cores / spark.task.cpus).")
@click.option("--executor-nodes", type=int, default=None,
              help="--engine spark: nodes the executors run on [default: one executor a node].")
@click.option("--racks", type=int, default=1, show_default=True,
              help="--engine spark: racks of the cluster (one rack: the rack wait is never waited, 0).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def delay(locality, tasks, nodes, replication, slots_per_node, task_seconds, heartbeat_s, scheduler,
          engine, executors, executor_cores, executor_nodes, racks, as_json) -> None:
    """The skip count D that reaches node locality --locality (delay scheduling paper, section 3.5),
    its expected wait in seconds, and the YARN scheduler settings that give it (Fair Scheduler, or
    the Capacity Scheduler's node-locality-delay and how long it holds: RegularContainerAllocator.canAssign).
    With --engine spark: Spark's spark.locality.wait per level, D offers of --executors x
    --executor-cores slots freeing every --task-seconds, as spark-defaults.conf lines."""
    ctx = click.get_current_context()
    given = [name for name in (SPARK_ONLY if engine == "yarn" else YARN_ONLY)
             if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
    if given:
        raise InputError(f"--{given[0].replace('_', '-')} is not for --engine {engine}")
    if engine == "spark":
        _spark_delay(locality, tasks, nodes, replication, executors, executor_cores, executor_nodes,
                     racks, task_seconds, as_json)
        return
    if scheduler == "capacity":
        _capacity_delay(size_capacity_delay(locality, tasks, nodes, replication, slots_per_node,
                                            task_seconds, heartbeat_s), nodes, heartbeat_s, as_json)
        return
    sizing = size_delay(locality, tasks, nodes, replication, slots_per_node, task_seconds, heartbeat_s)
    if as_json:
        click.echo(json.dumps(sizing.to_dict(), indent=2))
        return
    click.echo(f"skip count D = {sizing.skip_count:.1f} scheduling opportunities ({sizing.skip_count / nodes:.2f} M)")
    if sizing.wait_s is not None:
        click.echo(f"expected wait D*T/(L*M) = {sizing.wait_s:.2f} s")
    click.echo("count-based (heartbeat scheduling):")
    click.echo(f"  yarn.scheduler.fair.locality.threshold.node = {sizing.threshold_node:.3f}")
    click.echo(f"  holds a task about D*h/M = {sizing.yarn_count_hold_s:.2f} s: every heartbeat counts, "
               "full nodes included")
    if sizing.delay_node_ms is not None:
        click.echo("time-based equivalent:")
        click.echo("  yarn.scheduler.fair.continuous-scheduling-enabled = true")
        click.echo(f"  yarn.scheduler.fair.locality-delay-node-ms = {sizing.delay_node_ms}")
    for warning in sizing.warnings:
        click.echo(f"warning: {warning}", err=True)


def _spark_delay(locality, tasks, nodes, replication, executors, executor_cores, executor_nodes, racks,
                 task_seconds, as_json: bool) -> None:
    """Printed as a spark-defaults.conf fragment: the reasoning as comments, then the lines."""
    if executors is None or task_seconds is None:
        raise InputError("--engine spark needs --executors and --task-seconds (Spark's waits are times)")
    s = size_spark_delay(locality, tasks, nodes, replication, executors=executors,
                         executor_cores=executor_cores, task_seconds=task_seconds,
                         executor_nodes=executor_nodes, racks=racks)
    if as_json:
        click.echo(json.dumps(s.to_dict(), indent=2))
        return
    rack = (f", D = {s.rack_skip_count:.1f} at the rack level ({racks} racks)" if s.rack_skip_count is not None
            else "; one rack: every executor is rack-local once the node wait is over")
    click.echo(f"# delay scheduling paper: D = {s.skip_count:.1f} offers at the node level (N={tasks}, "
               f"M={nodes}, R={replication}, locality {locality:g}){rack}")
    click.echo(f"# S = {executors} executor(s) x {executor_cores} core(s) = {s.slots} task slots, one "
               f"freeing every T/S = {task_seconds / s.slots:.2f} s: node wait min(D, S)*T/S = "
               f"{s.node_ms / 1000:.2f} s")
    click.echo(f"# executors on {s.executor_nodes} of {nodes} nodes: {s.reach:.0%} of the blocks have a "
               "replica on one of them (node locality's ceiling)")
    for key, value in s.settings().items():
        click.echo(f"{key:<40}{value}")
    for warning in s.warnings:
        click.echo(f"warning: {warning}", err=True)


def _capacity_delay(c, nodes: int, heartbeat_s: float, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(c.to_dict(), indent=2))
        return
    click.echo(f"skip count D = {c.skip_count:.1f} scheduling opportunities")
    if c.wait_s is not None:
        click.echo(f"expected wait D*T/(L*M) = {c.wait_s:.2f} s")
    click.echo("Capacity Scheduler (count-based only):")
    click.echo(f"  yarn.scheduler.capacity.node-locality-delay = {c.node_locality_delay}")
    click.echo(f"  canAssign compares min({nodes} nodes, {c.node_locality_delay}) = {c.effective_count} "
               "missed opportunities")
    click.echo(f"  holds a task about {c.hold_s:.2f} s (an app offered every heartbeat) to "
               f"{c.hold_max_s:.2f} s (one heartbeat of {heartbeat_s:g} s per interval)")
    click.echo("  yarn.scheduler.capacity.rack-locality-additional-delay = -1 (off-switch after "
               "outstanding asks x the locality wait factor, capped at the node count)")
    for warning in c.warnings:
        click.echo(f"warning: {warning}", err=True)


@conf.command()
@click.option("--values", "values_file", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="YAML values: cluster, hdfs, yarn, queues, placement, capacity_queues, spark, "
                   "render (see docs/conf.md, docs/spark.md).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write the config files into (created if missing).")
def render(values_file, out) -> None:
    """Render fair-scheduler.xml, yarn-site.xml, hdfs-site.xml, core-site.xml, mapred-site.xml and
    topology.table (and capacity-scheduler.xml with yarn.scheduler: capacity, spark-defaults.conf
    with spark.enabled: true) from VALUES with the templates `dsbra cluster up` uses. The values are validated first; nothing is written if any
    is wrong."""
    files = render_values(load_values(values_file))
    write_rendered(files, out)
    click.echo(f"rendered {', '.join(files)} into {out}")


#: `conf check`'s options for the cluster's settings, and for one Spark application
CLUSTER_ONLY = ("nn_url", "values_file", "rendered", "advise_too")
SPARK_APP_ONLY = ("spark_history", "locality", "tasks", "task_seconds")


@conf.command()
@click.option("--rm", "rm_url", default=None,
              help="ResourceManager web URL, e.g. http://10.77.0.1:8088 (with --spark-app: its proxy "
                   "reaches a running application, its nodes give the cluster's size and racks).")
@click.option("--nn", "nn_url", default=None, help="NameNode web URL (its /conf): also check replication, "
                                                   "block size and the topology mapping.")
@click.option("--values", "values_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Compare with what this values file renders.")
@click.option("--rendered", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Compare with the files `dsbra conf render` wrote into this directory.")
@click.option("--advise", "advise_too", is_flag=True,
              help="Also name the live settings that cost node locality, what to change and what the "
                   "change was measured to be worth, in the simulator and on a real cluster (docs/conf.md).")
@click.option("--spark-app", default=None,
              help="Check this Spark application instead (its /environment and executors): what wastes "
                   "node locality.")
@click.option("--spark-history", default=None,
              help="With --spark-app: the Spark History Server's URL, e.g. http://10.77.0.1:18080 "
                   "[default: the running application through --rm's proxy].")
@click.option("--locality", type=float, default=None,
              help="With --spark-app and --tasks: compare the waits with what `conf delay --engine "
                   "spark` sizes for this node locality.")
@click.option("--tasks", type=int, default=None, help="With --spark-app: tasks per job N, for that comparison.")
@click.option("--task-seconds", type=float, default=None,
              help="With --spark-app: mean task length T [default: the executors' mean task time].")
@security_options
def check(rm_url, nn_url, values_file, rendered, advise_too, spark_app, spark_history, locality, tasks,
          task_seconds, ca_bundle, kerberos, principal, keytab) -> None:
    """Without --values or --rendered: whether dsbra can act on a live cluster (its scheduler
    delays for locality, and the D it found; with --nn WebHDFS on); exit 0 if it can, 1 if not.

    With --values or --rendered: every difference between the live cluster (its RM's effective
    scheduler settings, queues and node racks; with --nn the NameNode's) and the rendered files
    or values, for the Fair or the Capacity Scheduler; then, as notes, what the live cluster
    does not show (the Capacity Scheduler's locality delays and assignment settings). Exit 0 if
    no difference, 1 if any. --advise adds the settings that cost locality (never an exit 1).

    With --spark-app: what in a Spark application wastes node locality (a wait of 0, the legacy
    reset rule, executors on too few nodes, a wait under half what `conf delay --engine spark`
    sizes), then notes (dynamic allocation, the executors, the waits' sizing). Exit 0 if nothing
    wastes locality, 1 if anything does."""
    ctx = click.get_current_context()
    given = [name for name in (CLUSTER_ONLY if spark_app else SPARK_APP_ONLY)
             if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
    if given:
        option = next(p.opts[0] for p in ctx.command.params if p.name == given[0])
        raise InputError(f"{option} is not for {'--spark-app' if spark_app else 'a cluster check'}")
    if spark_app:
        if spark_history is None and rm_url is None:
            raise InputError("--spark-app needs --spark-history URL (a finished or running application) "
                             "or --rm URL (a running one, through the ResourceManager's proxy)")
        app = read_app(spark_app, spark_history, rm_url, _session(ca_bundle, kerberos, principal, keytab))
        raise SystemExit(_report_spark_app(app, locality, tasks, task_seconds))
    if rm_url is None:
        raise InputError("give --rm URL, the ResourceManager's web address")
    if values_file is not None and rendered is not None:
        raise InputError("give one of --values FILE and --rendered DIR, not both")
    live = read_live(rm_url, nn_url, _session(ca_bundle, kerberos, principal, keytab))
    if values_file is None and rendered is None:
        raise SystemExit(_report_readiness(live, advise_too))
    files = render_values(load_values(values_file)) if values_file else read_rendered(rendered)
    diffs = compare(files, live)
    for line in diffs:
        click.echo(line)
    for line in notes(files, live):
        click.echo(f"note: {line}")
    for advice in advise(live.rm_conf) if advise_too else []:
        click.echo("advice: " + "\n".join(advice.lines()))
    click.echo(f"{len(diffs)} difference(s) from the live cluster" if diffs else "no difference from the live cluster")
    raise SystemExit(1 if diffs else 0)


def _report_readiness(live, advise_too: bool) -> int:
    """The exit code: 1 when dsbra could not act on the cluster."""
    lines = readiness(live)
    for _, line in lines:
        click.echo(line)
    problems = [line for problem, line in lines if problem]
    for advice in advise(live.rm_conf) if advise_too else []:
        click.echo("advice: " + "\n".join(advice.lines()))
    click.echo(f"{len(problems)} problem(s): dsbra cannot act on this cluster" if problems
               else "ready: dsbra can act on this cluster")
    return 1 if problems else 0


def _session(ca_bundle, kerberos, principal, keytab) -> requests.Session:
    session = requests.Session()
    secure_sessions([session], ca_bundle=ca_bundle, kerberos=kerberos, principal=principal, keytab=keytab)
    return session


def _report_spark_app(app, locality, tasks, task_seconds) -> int:
    """The exit code: 1 when anything wastes locality."""
    problems, app_notes = check_app(app, locality=locality, tasks=tasks, task_seconds=task_seconds)
    for line in problems:
        click.echo(line)
    for line in app_notes:
        click.echo(f"note: {line}")
    click.echo(f"{len(problems)} problem(s) wasting locality in {app.app_id}" if problems
               else f"nothing wastes locality in {app.app_id}")
    return 1 if problems else 0
