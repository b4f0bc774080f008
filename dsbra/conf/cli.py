"""`dsbra conf delay | render | check`."""

from __future__ import annotations

import json
from pathlib import Path

import click
import requests

from dsbra.cli_options import secure_sessions, security_options
from dsbra.cluster.values import load_values
from dsbra.conf.advice import advise
from dsbra.conf.check import compare, notes, read_live, read_rendered
from dsbra.conf.delay import size_capacity_delay, size_delay
from dsbra.conf.render import render_values, write_rendered
from dsbra.errors import InputError


@click.group("conf")
def conf() -> None:
    """Size delay scheduling, render Hadoop and Fair or Capacity Scheduler configs from a values
    file, and check a live cluster against them."""


@conf.command()
@click.option("--locality", type=float, required=True, help="Target node locality lambda, in (0, 1).")
@click.option("--tasks", type=int, required=True, help="Tasks per job N.")
@click.option("--nodes", type=int, required=True, help="Nodes in the cluster M.")
@click.option("--replication", type=int, required=True, help="Replicas per block R.")
@click.option("--slots-per-node", type=int, default=None, help="Task slots per node L (with --task-seconds).")
@click.option("--task-seconds", type=float, default=None, help="Mean task length T in seconds.")
@click.option("--heartbeat-s", type=float, default=1.0, show_default=True,
              help="NodeManager heartbeat interval (yarn.resourcemanager.nodemanagers.heartbeat-interval-ms / 1000).")
@click.option("--scheduler", type=click.Choice(["fair", "capacity"]), default="fair", show_default=True,
              help="Whose settings to print: the Fair Scheduler's or the Capacity Scheduler's.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def delay(locality, tasks, nodes, replication, slots_per_node, task_seconds, heartbeat_s, scheduler,
          as_json) -> None:
    """The skip count D that reaches node locality --locality (delay scheduling paper, section 3.5),
    its expected wait in seconds, and the YARN scheduler settings that give it (Fair Scheduler, or
    the Capacity Scheduler's node-locality-delay and how long it holds: RegularContainerAllocator.canAssign)."""
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
              help="YAML values: cluster, hdfs, yarn, queues, placement, capacity_queues, render "
                   "(see docs/conf.md).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write the config files into (created if missing).")
def render(values_file, out) -> None:
    """Render fair-scheduler.xml, yarn-site.xml, hdfs-site.xml, core-site.xml, mapred-site.xml and
    topology.table (and capacity-scheduler.xml with yarn.scheduler: capacity) from VALUES with the
    templates `dsbra cluster up` uses. The values are validated first; nothing is written if any
    is wrong."""
    files = render_values(load_values(values_file))
    write_rendered(files, out)
    click.echo(f"rendered {', '.join(files)} into {out}")


@conf.command()
@click.option("--rm", "rm_url", required=True, help="ResourceManager web URL, e.g. http://10.77.0.1:8088.")
@click.option("--nn", "nn_url", default=None, help="NameNode web URL (its /conf): also check replication, "
                                                   "block size and the topology mapping.")
@click.option("--values", "values_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Compare with what this values file renders.")
@click.option("--rendered", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Compare with the files `dsbra conf render` wrote into this directory.")
@click.option("--advise", "advise_too", is_flag=True,
              help="Also name the live settings that cost node locality, what to change and what the "
                   "change was measured to be worth, in the simulator and on a real cluster (docs/conf.md).")
@security_options
def check(rm_url, nn_url, values_file, rendered, advise_too, ca_bundle, kerberos, principal, keytab) -> None:
    """Report every difference between a live cluster (its RM's effective scheduler settings,
    queues and node racks; with --nn the NameNode's) and the rendered files or values, for the
    Fair or the Capacity Scheduler; then, as notes, what the live cluster does not show (the
    Capacity Scheduler's locality delays and assignment settings); with --advise, the settings
    that cost locality. Exit 0 if no difference, 1 if any (advice does not count)."""
    if (values_file is None) == (rendered is None):
        raise InputError("give exactly one of --values FILE and --rendered DIR")
    files = render_values(load_values(values_file)) if values_file else read_rendered(rendered)
    session = requests.Session()
    secure_sessions([session], ca_bundle=ca_bundle, kerberos=kerberos, principal=principal, keytab=keytab)
    live = read_live(rm_url, nn_url, session)
    diffs = compare(files, live)
    for line in diffs:
        click.echo(line)
    for line in notes(files, live):
        click.echo(f"note: {line}")
    for advice in advise(live.rm_conf) if advise_too else []:
        click.echo("advice: " + "\n".join(advice.lines()))
    click.echo(f"{len(diffs)} difference(s) from the live cluster" if diffs else "no difference from the live cluster")
    raise SystemExit(1 if diffs else 0)
