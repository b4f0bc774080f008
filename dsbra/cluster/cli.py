"""`dsbra cluster up | down | status | env | logs | load | install | haadmin`, and `dsbra docker
build | compose`: the same cluster's image and compose file (hadoop-docker/)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import click

from dsbra.cli_options import job_properties, state_dir_option
from dsbra.cluster import cluster as cl
from dsbra.cluster.docker import DEFAULT_SUBNET
from dsbra.cluster.docker import build as build_image
from dsbra.cluster.docker import render_compose
from dsbra.cluster.install import ensure_hadoop
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spark import SPARK_VERSION, ensure_spark
from dsbra.cluster.spec import (BLOCK_PLACEMENTS, HA_FAILOVERS, HADOOP_VERSION, HADOOP_VERSIONS,
                                SCHEDULERS, SHARED_CACHE_ROOT, ClusterSpec, parse_size)
from dsbra.cluster.values import load_values
from dsbra.errors import ClusterError, InputError


@click.group("cluster")
def cluster() -> None:
    """Run the bundled real Hadoop cluster: a master (NameNode, ResourceManager with the Fair
    Scheduler, JobHistoryServer) and N worker hosts (DataNode + NodeManager), each worker in its
    own network namespace with its own address. Needs root, Java 17 and Maven."""


@cluster.command()
@click.option("--workers", type=int, default=4, show_default=True, help="Number of worker hosts.")
@click.option("--racks", type=int, default=2, show_default=True, help="Racks the workers are spread over.")
@click.option("--subnet", default="10.77.0.0/24", show_default=True,
              help="Private subnet of the cluster network; master is .1, worker i is .(10+i).")
@click.option("--prefix", default="dsbra", show_default=True,
              help="Name prefix of the bridge (<prefix>0) and namespaces (<prefix>-w<i>).")
@click.option("--port-offset", type=int, default=0, show_default=True, help="Added to every master port.")
@click.option("--replication", type=int, default=None, help="HDFS default replication [default: 3, at most --workers].")
@click.option("--block-size", default="8m", show_default=True, help="HDFS default block size (k/m/g suffix).")
@click.option("--scheduler", type=click.Choice(SCHEDULERS), default=ClusterSpec.scheduler, show_default=True,
              help="The ResourceManager's scheduler: the Fair Scheduler (the --locality-delay-* and "
                   "--continuous-scheduling options) or the Capacity Scheduler (--node-locality-delay, "
                   "--rack-locality-additional-delay; queues default and benchmark, 50% each, up to 100%, "
                   "or a values file's capacity_queues), "
                   "or the FIFO scheduler (no delay scheduling: dsbra refuses to act on it).")
@click.option("--node-locality-delay", type=int, default=ClusterSpec.node_locality_delay, show_default=True,
              help="Capacity Scheduler: missed scheduling opportunities before a rack-local container, "
                   "capped by the node count (-1: no delay).")
@click.option("--rack-locality-additional-delay", type=int,
              default=ClusterSpec.rack_locality_additional_delay, show_default=True,
              help="Capacity Scheduler: further missed opportunities before an off-switch container "
                   "(-1: Hadoop's locality wait factor instead).")
@click.option("--locality-delay-node", type=float, default=1.0, show_default=True,
              help="Fair Scheduler yarn.scheduler.fair.locality.threshold.node: fraction of the cluster's "
                   "nodes whose scheduling opportunities an app skips waiting for a node-local slot (-1: off).")
@click.option("--locality-delay-rack", type=float, default=1.0, show_default=True,
              help="Same for rack-local (yarn.scheduler.fair.locality.threshold.rack).")
@click.option("--continuous-scheduling", is_flag=True,
              help="Fair Scheduler continuous scheduling (deprecated in YARN): containers are also "
                   "assigned on a 20 ms timer, and delay scheduling becomes time-based (the -ms options "
                   "below; the thresholds are then not read).")
@click.option("--locality-delay-node-ms", type=int, default=-1, show_default=True,
              help="With --continuous-scheduling: how long an app waits for a node-local slot "
                   "(yarn.scheduler.fair.locality-delay-node-ms; -1: delay scheduling off).")
@click.option("--locality-delay-rack-ms", type=int, default=-1, show_default=True,
              help="With --continuous-scheduling: then how long it waits for a rack-local slot.")
@click.option("--nm-memory-mb", type=int, default=2560, show_default=True, help="Memory of each NodeManager.")
@click.option("--hadoop-version", type=click.Choice(HADOOP_VERSIONS), default=HADOOP_VERSION, show_default=True,
              help="Hadoop release of the daemons (3.5.0 answers REST in Jersey 2's JSON shapes; its grep "
                   "job comes from the 3.4.2 examples jar, the last on Maven Central).")
@click.option("--net-mbit", type=float, default=0.0, show_default=True,
              help="Shape what each worker sends to the other workers to this rate (Mbit/s, tc HTB on "
                   "its veth), so non-local reads are slower than node-local ones, as on a real "
                   "cluster; traffic to the master is not shaped (0: no shaping; docs/benchmark.md).")
@click.option("--net-rack-mbit", type=float, default=0.0, show_default=True,
              help="With --net-mbit: the rate between two workers of the same rack (0: --net-mbit).")
@click.option("--placement", "block_placement", type=click.Choice(BLOCK_PLACEMENTS),
              default=ClusterSpec.block_placement, show_default=True,
              help="The NameNode's block placement: HDFS's default, or dsbra's heat-aware plugin "
                   "(placement/), which reads the heat document a dsbra daemon writes to "
                   "<state dir>/placement/heat.json (its placement.heat_file).")
@click.option("--ha", is_flag=True,
              help="High availability: two NameNodes sharing a quorum journal (JournalNodes on the "
                   "first three workers) and two ResourceManagers sharing a state store, the second "
                   "of each on the master's address with other ports; see --ha-failover.")
@click.option("--ha-failover", type=click.Choice(HA_FAILOVERS), default=ClusterSpec.ha_failover,
              show_default=True,
              help="With --ha: auto runs a ZooKeeper server on the master, a failover controller "
                   "(ZKFC) beside each NameNode and the ResourceManagers' embedded elector, so a "
                   "standby becomes active by itself; manual runs no ZooKeeper, and an operator "
                   "fails over with `dsbra cluster haadmin`.")
@click.option("--kerberos", is_flag=True,
              help="Hadoop security on (needs --tls): an MIT KDC with principals and keytabs for every "
                   "daemon and for dsbra (<state dir>/security), SPNEGO on every web endpoint, SASL on "
                   "block transfer; `dsbra cluster env` names dsbra's keytab and principal.")
@click.option("--tls", is_flag=True,
              help="Every web endpoint (WebHDFS, the RM's and JobHistoryServer's REST APIs) speaks https "
                   "only, on the same ports, with certificates from a CA of the cluster's own "
                   "(`dsbra cluster env` names it: a client's ca_bundle).")
@click.option("--shared-cache", is_flag=True,
              help="YARN's shared cache: a SharedCacheManager on the master, so a job jar or "
                   "library a client marks shareable (mapreduce.job.sharedcache.mode) is uploaded "
                   "and localized once for every later job; `dsbra bench replay --engine hive` "
                   "then ships hive-exec once, not per query.")
@click.option("--spark", is_flag=True,
              help="Apache Spark on YARN (pyspark from PyPI, fetched once into .dsbra/spark): its "
                   "jars in HDFS, a Spark History Server on the master, spark-defaults.conf with "
                   "the locality waits; `dsbra cluster env` names spark_submit and spark_history.")
@click.option("--timeout", type=float, default=240.0, show_default=True, help="Seconds to wait for readiness.")
@click.option("--values", "values_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A `dsbra conf` values file (queues, placement, scheduler and HDFS settings); "
                   "options given on the command line win over it.")
@state_dir_option
def up(workers, racks, subnet, prefix, port_offset, replication, block_size, scheduler,
       node_locality_delay, rack_locality_additional_delay, locality_delay_node,
       locality_delay_rack, continuous_scheduling, locality_delay_node_ms, locality_delay_rack_ms,
       nm_memory_mb, hadoop_version, net_mbit, net_rack_mbit, block_placement, ha, ha_failover, kerberos, tls,
       shared_cache, spark, timeout, values_file, state_dir) -> None:
    """Start the cluster and wait until every DataNode and NodeManager registered and HDFS left
    safe mode. Already up: says so. A run left over from a crash is cleaned up first."""
    fields = dict(
        workers=workers, racks=racks, subnet=subnet, prefix=prefix, port_offset=port_offset,
        replication=replication, block_size=parse_size(block_size), scheduler=scheduler,
        node_locality_delay=node_locality_delay,
        rack_locality_additional_delay=rack_locality_additional_delay, locality_delay_node=locality_delay_node,
        locality_delay_rack=locality_delay_rack, continuous_scheduling=continuous_scheduling,
        locality_delay_node_ms=locality_delay_node_ms,
        locality_delay_rack_ms=locality_delay_rack_ms, nm_memory_mb=nm_memory_mb,
        hadoop_version=hadoop_version, net_mbit=net_mbit, net_rack_mbit=net_rack_mbit,
        block_placement=block_placement, ha=ha, ha_failover=ha_failover, kerberos=kerberos, tls=tls,
        shared_cache=shared_cache, spark=spark,
    )
    ctx = click.get_current_context()
    if not ha and ctx.get_parameter_source("ha_failover") == click.core.ParameterSource.COMMANDLINE:
        raise InputError("--ha-failover needs --ha: without it there is one NameNode and one "
                         "ResourceManager, nothing to fail over")
    if values_file is not None:
        given = {k: v for k, v in fields.items()
                 if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}
        fields = {**fields, **load_values(values_file).spec_fields, **given}
    if fields["replication"] is None:
        fields["replication"] = min(3, max(fields["workers"], 1))
    spec = ClusterSpec(**fields)
    _require_root()
    layout = StateLayout.at(state_dir)
    started = time.monotonic()
    data, fresh = cl.up(spec, layout, timeout=timeout, log=lambda msg: click.echo(msg, err=True))
    if not fresh:
        click.echo(f"the cluster is already up (state in {layout.root})")
        return
    running = ClusterSpec.from_dict(data["spec"])
    click.echo(f"cluster up in {time.monotonic() - started:.0f} s: Hadoop {running.hadoop_version}, "
               f"{running.workers} workers on {min(running.racks, running.workers)} racks"
               + (f", worker links shaped to {running.net_mbit:g} Mbit/s"
                  + (f" ({running.net_rack_mbit:g} within a rack)" if running.net_rack_mbit else "")
                  if running.net_mbit else ""))
    _print_urls(cl.env(layout))


def _print_urls(env: dict) -> None:
    click.echo(f"  NameNode         {env['namenode']}   (WebHDFS {env['webhdfs']})")
    click.echo(f"  ResourceManager  {env['rm']}")
    click.echo(f"  JobHistory       {env['jhs']}")
    if env["ha"] and env["ha"]["zookeeper"]:
        click.echo(f"  ZooKeeper        {env['ha']['zookeeper']}   (automatic failover: ZKFCs, the RMs' elector)")
    if env["sharedcache"]:
        click.echo(f"  SharedCache      {env['sharedcache']}   (cached resources in HDFS {SHARED_CACHE_ROOT})")
    for w in env["workers"]:
        click.echo(f"  {w['name']:<4} {w['host']:<12} {w['rack']:<7} DataNode {w['datanode']}  "
                   f"NodeManager {w['nodemanager']}")
    if env["ca_bundle"]:
        click.echo(f"  TLS: https only, certificates signed by {env['ca_bundle']}")
    if env["kerberos"]:
        krb = env["kerberos"]
        click.echo(f"  Kerberos realm {krb['realm']} (KRB5_CONFIG={krb['krb5_conf']}): dsbra logs in as "
                   f"{krb['principal']} from {krb['keytab']}")


@cluster.command()
@click.option("--purge", is_flag=True, help="Also delete the state directory (HDFS data, logs, configs).")
@state_dir_option
def down(purge, state_dir) -> None:
    """Stop every daemon and container, and remove the namespaces, links and bridge the cluster
    created (also after a crashed `up`). Safe to run twice."""
    _require_root()
    layout = StateLayout.at(state_dir)
    if cl.down(layout, purge=purge):
        click.echo("cluster down" + (" and state purged" if purge else f" (logs kept in {layout.logs})"))
    else:
        click.echo("the cluster is already down" + (" (state purged)" if purge else ""))


@cluster.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@state_dir_option
def status(as_json, state_dir) -> None:
    """Show whether the cluster is up and which daemons run. Exit 0 if up, 3 if down, 1 otherwise."""
    layout = StateLayout.at(state_dir)
    current = cl.status(layout)
    missing, slots = {}, None
    if current.state == "up":
        spec = ClusterSpec.from_dict(current.data["spec"])
        with cl.web_session(spec, layout) as session:
            missing = cl.readiness(spec, session)
            slots = cl.containers(spec, session)
    if as_json:
        click.echo(json.dumps({"state": current.state, "daemons": current.alive, "not_ready": missing,
                               "containers": slots}))
    else:
        click.echo(f"cluster: {current.state} (state in {layout.root})")
        for name, ok in sorted(current.alive.items()):
            pid = current.data["daemons"][name]["pid"]
            click.echo(f"  {name:<22} {'running' if ok else 'DEAD':<8} pid {pid}")
        if slots:
            click.echo(f"  containers: {slots['map_slots']} map slots ({slots['nodemanagers']} NodeManagers, "
                       f"{'/'.join(map(str, sorted(set(slots['node_memory_mb']))))} MB each, "
                       f"{slots['map_container_mb']} MB per map or reduce, "
                       f"{slots['am_container_mb']} MB per ApplicationMaster)")
        for what in missing.values():
            click.echo(f"  not ready: {what}")
        if current.state in ("stale", "partial"):
            click.echo("  a previous run did not finish cleanly: run 'dsbra cluster down'")
    raise SystemExit(0 if current.state == "up" and not missing else 3 if current.state == "down" else 1)


@cluster.command(context_settings={"ignore_unknown_options": True})
@click.argument("service", type=click.Choice(["hdfs", "yarn"]))
@click.argument("args", nargs=-1, required=True, type=click.UNPROCESSED)
@state_dir_option
def haadmin(service, args, state_dir) -> None:
    """Fail an --ha cluster over by hand: `hdfs haadmin` (SERVICE hdfs; NameNodes nn1, nn2) or
    `yarn rmadmin` (SERVICE yarn; ResourceManagers rm1, rm2) with ARGS, e.g.
    `dsbra cluster haadmin hdfs -failover nn1 nn2`,
    `dsbra cluster haadmin yarn -transitionToActive --forceactive rm2` (rmadmin has no -failover;
    --forceactive only once the other RM is dead), `... -getAllServiceState`. With automatic
    failover (the default) ZooKeeper elects the active ones: `hdfs -failover` goes through the
    ZKFCs, -transitionToActive/-transitionToStandby are refused."""
    layout = StateLayout.at(state_dir)
    data = cl.st.load(layout.state_file)
    if data is None:
        raise ClusterError(f"no cluster in {layout.root}; start one with: dsbra cluster up --ha")
    click.echo(cl.ha_admin(ClusterSpec.from_dict(data["spec"]), layout, service, list(args)))


@cluster.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of shell exports.")
@state_dir_option
def env(as_json, state_dir) -> None:
    """Print where the running cluster answers (WebHDFS, RM, JHS, workers and their racks)."""
    info = cl.env(StateLayout.at(state_dir))
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    for key in ("webhdfs", "namenode", "rm", "jhs", "fs", "conf_dir", "state_dir"):
        click.echo(f"export DSBRA_{key.upper()}={info[key]}")
    click.echo("export DSBRA_WORKERS=" + ",".join(f"{w['host']}{w['rack']}" for w in info["workers"]))
    # a secure cluster: the daemon's cluster.* settings (config overrides) and the realm's krb5.conf
    if info["ca_bundle"]:
        click.echo(f"export DSBRA_CLUSTER__CA_BUNDLE={info['ca_bundle']}")
    if info["kerberos"]:
        krb = info["kerberos"]
        click.echo("export DSBRA_CLUSTER__KERBEROS=true")
        click.echo(f"export DSBRA_CLUSTER__KERBEROS_PRINCIPAL={krb['principal']}")
        click.echo(f"export DSBRA_CLUSTER__KEYTAB={krb['keytab']}")
        click.echo(f"export KRB5_CONFIG={krb['krb5_conf']}")


@cluster.command()
@click.argument("daemon", required=False)
@click.option("-n", "--lines", type=int, default=100, show_default=True, help="Lines from the end.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C to stop).")
@click.option("--out", is_flag=True, help="Show the daemon's stdout/stderr (.out) instead of its log4j log.")
@state_dir_option
def logs(daemon, lines, follow, out, state_dir) -> None:
    """Show a daemon's log (namenode, resourcemanager, historyserver, datanode-w1, nodemanager-w1, ...).
    Without DAEMON, list the daemons and their log files."""
    layout = StateLayout.at(state_dir)
    if daemon is None:
        for name in cl.daemon_names(layout):
            click.echo(f"{name:<22} {layout.log(name)}")
        return
    if lines < 0:
        raise InputError(f"--lines must be >= 0, got {lines}")
    name = cl.resolve_daemon(layout, daemon)
    path = layout.out(name) if out else layout.log(name)
    if not path.exists():
        raise ClusterError(f"{name} has no log yet at {path}")
    cmd = ["tail", "-n", str(lines)] + (["-F"] if follow else []) + [str(path)]
    try:
        subprocess.run(cmd, check=False)
    except KeyboardInterrupt:
        pass


@cluster.command()
@click.option("--jobs", type=click.IntRange(1, 200), default=12, show_default=True,
              help="Example grep jobs (each runs a search and a sort job, both with reducers).")
@click.option("--gap-s", type=click.FloatRange(0, 600), default=3.0, show_default=True,
              help="Seconds between two submissions.")
@click.option("-D", "job_conf", multiple=True, metavar="KEY=VALUE", callback=job_properties,
              help="A job setting for every job (none by default: Hadoop's and the cluster's defaults).")
@click.option("--json", "as_json", is_flag=True, help="The summary and every sample as JSON.")
@state_dir_option
def load(jobs, gap_s, job_conf, as_json, state_dir) -> None:
    """Run concurrent MapReduce jobs with the job defaults and report whether the cluster kept
    them moving: time to finish, peak containers, the size containers were granted at, and the
    longest stall (work waiting while no container or application changed). Writes and
    overwrites /dsbra-load in HDFS. See docs/cluster.md."""
    from tqdm import tqdm

    from dsbra.cluster import loadcheck

    with tqdm(total=2 * jobs, desc="applications finished", unit="app", disable=as_json) as bar:
        summary = loadcheck.run(StateLayout.at(state_dir), jobs, gap_s, job_conf,
                                tick=lambda samples: bar.update(samples[-1]["finished_apps"] - bar.n))
    if as_json:
        click.echo(json.dumps(summary, indent=1))
    else:
        click.echo(f"{jobs} grep jobs {gap_s:g} s apart"
                   + (f" ({', '.join(f'{k}={v}' for k, v in job_conf.items())})" if job_conf else "")
                   + f": finished in {summary['seconds']} s, {summary['failed_jobs']} failed; "
                   f"peak {summary['peak_containers']} containers, granted at "
                   f"{'/'.join(map(str, summary['container_mb'])) or '?'} MB; "
                   f"longest stall {summary['longest_stall_s']} s")
    raise SystemExit(1 if summary["failed_jobs"] else 0)


@cluster.command()
@click.option("--version", "version", type=click.Choice(HADOOP_VERSIONS), default=HADOOP_VERSION,
              show_default=True, help="Hadoop version.")
@click.option("--spark", "with_spark", is_flag=True,
              help=f"Also fetch Apache Spark {SPARK_VERSION} (pyspark from PyPI) for `cluster up --spark`.")
def install(version, with_spark) -> None:
    """Fetch the Hadoop jars from Maven Central (via hadoop/pom.xml), and with --spark Spark from
    PyPI into a virtual environment of its own. Idempotent."""
    home = ensure_hadoop(version)
    click.echo(f"Hadoop {version} jars in {home.lib}")
    if with_spark:
        click.echo(f"Spark {SPARK_VERSION} in {ensure_spark().home}")


def _require_root() -> None:
    if os.geteuid() != 0:
        raise ClusterError("the cluster needs root (it creates network namespaces); run as root")


@click.group("docker")
def docker() -> None:
    """The bundled cluster in Docker containers: build its image from Debian packages and the
    project's Maven jars (no registry), render its compose file. See hadoop-docker/README.md."""


@docker.command("build")
@click.option("--mirror", default=None,
              help="Plain-http Debian mirror for debootstrap and apt [default: $DSBRA_DEBIAN_MIRROR or "
                   "http://deb.debian.org/debian].")
@click.option("--force", is_flag=True, help="Build even if an image of the same inputs exists.")
def docker_build(mirror, force) -> None:
    """Build dsbra-base:bookworm (once) and dsbra-hadoop:<the cluster's Hadoop version> (when its
    inputs changed). Needs root (debootstrap)."""
    result = build_image(mirror=mirror, log=lambda msg: click.echo(msg, err=True), force=force)
    click.echo(f"{result.tag} {result.image_id[:19]} ({'built' if result.built else 'cached'}, "
               f"{result.seconds:.0f} s)")


@docker.command("compose")
@click.option("--workers", type=int, default=4, show_default=True, help="Number of worker containers.")
@click.option("--subnet", default=DEFAULT_SUBNET, show_default=True,
              help="Network of the containers; master .1, worker i .(10+i), gateway .254.")
@click.option("--no-daemon", is_flag=True, help="Leave out the dsbra daemon's sidecar service.")
@click.option("--scheduler", type=click.Choice(SCHEDULERS), default=ClusterSpec.scheduler, show_default=True,
              help="The ResourceManager's scheduler (as `dsbra cluster up --scheduler`).")
@click.option("--node-locality-delay", type=int, default=ClusterSpec.node_locality_delay, show_default=True,
              help="Capacity Scheduler: missed scheduling opportunities before a rack-local container.")
@click.option("--rack-locality-additional-delay", type=int,
              default=ClusterSpec.rack_locality_additional_delay, show_default=True,
              help="Capacity Scheduler: further missed opportunities before an off-switch container.")
@click.option("--placement", type=click.Choice(BLOCK_PLACEMENTS), default=ClusterSpec.block_placement,
              show_default=True,
              help="The NameNode's block placement: HDFS's default, or dsbra's heat-aware plugin reading "
                   "the sidecar daemon's /heat (docs/placement.md).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here instead of stdout.")
def docker_compose(workers, subnet, no_daemon, scheduler, node_locality_delay, rack_locality_additional_delay,
            placement, out) -> None:
    """Print the compose file of a cluster of WORKERS workers (hadoop-docker/compose.yaml is the default one)."""
    text = render_compose(workers, subnet, daemon=not no_daemon, scheduler=scheduler,
                          node_locality_delay=node_locality_delay,
                          rack_locality_additional_delay=rack_locality_additional_delay,
                          placement=placement)
    if out:
        out.write_text(text)
    else:
        click.echo(text, nl=False)
