"""`dsbra bench data | schedule | replay`: the reproduction benchmark (docs/benchmark.md)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from dsbra.cli_options import job_properties, state_dir_option
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import parse_size
from dsbra.errors import HadoopError

DEFAULT_PATH = "/bench/grep"


def _hdfs_client(state_dir: Path | None):
    from dsbra.cluster import cluster as cl

    env = cl.env(StateLayout.at(state_dir))
    return env, cl.hdfs_client(env["namenode"], timeout=300)


@click.group("bench")
def bench() -> None:
    """The DSBRA reproduction benchmark on the bundled real cluster: the Hive grep data set in
    HDFS, job schedules as inspectable files, and their replay (docs/benchmark.md)."""


def dataset_options(fn):
    """The data set's shape: the same flags for `bench data` and `bench schedule`."""
    for option in reversed([
        click.option("--size", default="2g", show_default=True,
                     help="Data set size (k/m/g suffix); rounded down to whole blocks."),
        click.option("--block-size", default="64m", show_default=True, help="Block size; every file is one block."),
        click.option("--data-seed", type=int, default=0, show_default=True,
                     help="File i's content depends only on (data seed, i)."),
        click.option("--path", "path", default=DEFAULT_PATH, show_default=True, help="HDFS directory of the data set."),
        click.option("--replication", type=int, default=2, show_default=True,
                     help="Base replication (the DSBRA paper lowered 3 to 2)."),
    ]):
        fn = option(fn)
    return fn


def _plan(size, block_size, data_seed, path, replication):
    from dsbra.bench.data import DatasetPlan

    return DatasetPlan(total_bytes=parse_size(size), block_bytes=parse_size(block_size), seed=data_seed,
                       path=path, replication=replication)


@bench.command()
@dataset_options
@click.option("--parallel", type=click.IntRange(1, 8), default=2, show_default=True, help="Files written at once.")
@state_dir_option
def data(size, block_size, data_seed, path, replication, parallel, state_dir) -> None:
    """Write the Hive benchmark's grep table into HDFS as one-block files part-NNNNN, plus a
    manifest (_dataset.json). Idempotent: files of the right length are kept (and set back to
    the base replication), missing or short ones are written."""
    from dsbra.bench.data import write_dataset

    plan = _plan(size, block_size, data_seed, path, replication)
    _, client = _hdfs_client(state_dir)
    try:
        counts = write_dataset(client, plan, parallel=parallel)
    except OSError as exc:  # requests' connection errors are OSErrors
        raise HadoopError(f"WebHDFS unreachable while writing {path}: {exc}") from None
    click.echo(f"{plan.files} files of {plan.file_bytes} bytes in {path} at replication {replication}: "
               f"{counts['written']} written, {counts['kept']} kept "
               f"({counts['replication_reset']} set back to replication {replication})")


@bench.command()
@click.option("--source", type=click.Choice(["fb2009-bins", "fb2010"]), default="fb2009-bins", show_default=True,
              help="fb2009-bins: Table 3 job sizes, exponential gaps, hot spots; fb2010: the FB-2010 trace's "
                   "first jobs with their input paths.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The schedule file to write (JSON).")
@click.option("--jobs", type=int, default=100, show_default=True, help="Jobs in the schedule.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the schedule.")
@click.option("--slots", default="20", show_default=True,
              help="Containers of the cluster the job sizes are scaled to, or `auto`: the map slots the "
                   "running cluster's ResourceManager reports (`dsbra cluster status`; AMs take some).")
@click.option("--inter-arrival-s", type=float, default=14.0, show_default=True,
              help="Mean gap between jobs (fb2010: the trace's submit times rescaled to it).")
@click.option("--trace-times", is_flag=True, help="fb2010: keep the trace's own submit times.")
@click.option("--hot-fraction", type=float, default=0.1, show_default=True,
              help="fb2009-bins: fraction of the files hot at a time.")
@click.option("--hot-share", type=float, default=0.5, show_default=True,
              help="fb2009-bins: probability that a map reads a hot file.")
@click.option("--hot-period-s", type=float, default=300.0, show_default=True,
              help="fb2009-bins: a fresh set of hot files this often.")
@click.option("--trace", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="fb2010: the trace [default: the shared FB-2010 hours 00-11 TSV].")
@click.option("--max-maps", type=int, default=None,
              help="fb2010: maps per job at most [default: min(slots, files / 2)].")
@dataset_options
@state_dir_option
def schedule(source, out, jobs, seed, slots, inter_arrival_s, trace_times, hot_fraction, hot_share,
             hot_period_s, trace, max_maps, size, block_size, data_seed, path, replication, state_dir) -> None:
    """Write a job schedule over the data set of `dsbra bench data` (same data set flags) as a
    JSON file: per job its submit time, size bin and input files. Deterministic from --seed
    (and, with --slots auto, the cluster's slots)."""
    from dsbra.bench import schedule as sch
    from dsbra.schedule_format import write_schedule
    from dsbra.sim.setups import FB2010_TRACE

    slots = _slots(slots, state_dir)
    plan = _plan(size, block_size, data_seed, path, replication)
    if source == "fb2009-bins":
        doc = sch.fb2009_bins(plan, slots=slots, jobs=jobs, inter_arrival_s=inter_arrival_s,
                              hot_fraction=hot_fraction, hot_share=hot_share, hot_period_s=hot_period_s,
                              seed=seed)
    else:
        doc = sch.fb2010(plan, trace or FB2010_TRACE, slots=slots, jobs=jobs,
                         inter_arrival_s=None if trace_times else inter_arrival_s, max_maps=max_maps, seed=seed)
    write_schedule(out, doc)
    click.echo(sch.summary(doc))


def _slots(value: str, state_dir: Path | None) -> int:
    """--slots: a number, or `auto`: the map slots of the running cluster, by its ResourceManager."""
    if value != "auto":
        try:
            return int(value)
        except ValueError:
            raise click.BadParameter(f"a number of containers or 'auto', got {value!r}",
                                     param_hint="--slots") from None
    from dsbra.cluster import cluster as cl
    from dsbra.cluster.spec import ClusterSpec

    layout = StateLayout.at(state_dir)
    current, found = cl.status(layout), None
    if current.state == "up":  # as `dsbra cluster status` asks: through SPNEGO and the CA if secure
        spec = ClusterSpec.from_dict(current.data["spec"])
        with cl.web_session(spec, layout) as session:
            found = cl.containers(spec, session)
    if not found:
        raise click.UsageError("--slots auto: no running cluster's ResourceManager answers "
                               "(`dsbra cluster status`); give --slots N")
    click.echo(f"--slots auto: {found['map_slots']} map slots", err=True)
    return found["map_slots"]


@bench.command()
@click.argument("schedule_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory for jobs.parquet, tasks.parquet, storage.json and summary.json.")
@click.option("--daemon-config", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Run `dsbra run --config FILE` beside the jobs (the daemon arm; the config's mode "
                   "decides: apply, or a dry run); without it the daemon is off.")
@click.option("--queue", default=None, help="Fair Scheduler queue of the jobs [default: the placement rules'].")
@click.option("--label", default="", help="Name of this run (its HDFS output dir) [default: a timestamp].")
@click.option("--job-timeout-s", type=float, default=1800.0, show_default=True,
              help="Longest a job client (or Hive query) may run before it is stopped.")
@click.option("--engine", type=click.Choice(["mapreduce", "hive", "spark"]), default="mapreduce",
              show_default=True,
              help="mapreduce: each job a map-only grep job; hive: each job the query SELECT * FROM <its "
                   "table> WHERE field LIKE '%XYZ%' in its own session of the cluster's HiveServer2 (started "
                   "for the replay unless `dsbra bench hive start` runs one; jars: `dsbra bench hive install`); "
                   "spark: each job a Spark grep job (a cluster up with --spark; --spark-mode).")
@click.option("--spark-mode", type=click.Choice(["shared", "per-job"]), default="shared", show_default=True,
              help="spark: shared runs every job in one long-running application, its executors held, "
                   "each job in a Fair scheduler pool of its own (as a Thrift server or notebook); per-job "
                   "submits each job as its own application in cluster mode with dynamic allocation "
                   "(as batch pipelines run).")
@click.option("--executors", type=click.IntRange(min=1), default=None,
              help="spark: the shared application's executors, or each per-job application's most "
                   "[default: two per worker, less one].")
@click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE", callback=job_properties,
              help="spark: a Spark property set on the application(s) over spark-defaults.conf "
                   "(repeatable), e.g. spark.locality.wait=10s; recorded in summary.json.")
@click.option("--clients", type=click.Choice(["one", "per-job"]), default="one", show_default=True,
              help="mapreduce: submit every job from one JVM (no waiting client per job), or from a "
                   "client JVM per job that waits for it (how result sets before 2026-11-25 ran).")
@click.option("--job-conf", "job_conf", multiple=True, metavar="KEY=VALUE", callback=job_properties,
              help="mapreduce: a Hadoop property set on every job over the cluster's mapred-site.xml "
                   "(repeatable), e.g. mapreduce.job.ubertask.enable=true; recorded in summary.json.")
@state_dir_option
def replay(schedule_file, out, daemon_config, queue, label, job_timeout_s, engine, spark_mode, executors,
           spark_conf, clients, job_conf, state_dir) -> None:
    """Submit SCHEDULE_FILE's jobs (map-only greps for XYZ over their input files) on time to the
    running cluster, then write per-job and per-task results in the simulator's Parquet schema."""
    from dsbra.bench.replay import JOB_PROPERTIES_FROM, spark_conf_error
    from dsbra.bench.replay import replay as run_replay
    from dsbra.schedule_format import load_schedule

    schedule = load_schedule(schedule_file)
    if job_conf and engine != "mapreduce":
        raise click.BadParameter(f"sets MapReduce job properties; {JOB_PROPERTIES_FROM[engine]}",
                                 param_hint="--job-conf")
    if error := spark_conf_error(spark_conf, engine, "--spark-conf"):
        raise click.BadParameter(error, param_hint="--spark-conf")
    if daemon_config is not None and not daemon_config.is_file():
        raise click.BadParameter(f"{daemon_config} does not exist", param_hint="--daemon-config")
    summary = run_replay(schedule, StateLayout.at(state_dir), out, daemon_config=daemon_config, queue=queue,
                         job_timeout_s=job_timeout_s, label=label, engine=engine, clients=clients,
                         job_conf=job_conf, spark_mode=spark_mode, executors=executors, spark_conf=spark_conf,
                         log=lambda m: click.echo(m, err=True))
    click.echo(f"{summary['jobs']} jobs, {summary['maps']} maps: mean response {summary['mean_response_s']} s, "
               f"node locality {summary['node_locality']}, mean map wait {summary['mean_map_wait_s']} s; "
               f"results in {out}")
    if engine == "hive":
        click.echo(f"rows found per job: {summary['rows_by_job']} (expected {summary['expected_rows_by_job']})")
    if summary["failed_jobs"]:
        first = summary["failed_jobs"][0]
        why = summary.get("errors", {}).get(first)
        raise HadoopError(f"{len(summary['failed_jobs'])} jobs failed: {', '.join(summary['failed_jobs'][:5])}"
                          + (f" ({first}: {why})" if why else ""))
    if summary.get("matches_mismatched"):
        raise HadoopError(f"Spark counted other matches than the data holds for "
                          f"{', '.join(summary['matches_mismatched'][:5])}; see {out / 'summary.json'}")
    if summary.get("rows_mismatched"):
        raise HadoopError(f"Hive returned other row counts than the data holds for "
                          f"{', '.join(summary['rows_mismatched'][:5])}; see {out / 'summary.json'}")


@bench.group("hive")
def hive_group() -> None:
    """HiveServer2 for `dsbra bench replay --engine hive`: Hive 4.0.1 jars from Maven Central
    (hive/pom.xml), a server against the bundled cluster's HDFS and YARN (docs/benchmark.md
    section 8)."""


@hive_group.command("install")
def hive_install() -> None:
    """Fetch the Hive jars of hive/pom.xml from Maven Central into .dsbra/hive/<version>/lib
    (once; idempotent)."""
    from dsbra.bench.hive import ensure_hive

    install = ensure_hive()
    click.echo(f"Hive jars in {install.lib} ({sum(1 for _ in install.lib.glob('*.jar'))} jars)")


@hive_group.command("start")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="Seconds to wait until it accepts sessions.")
@click.option("--shared-cache/--no-shared-cache", default=None,
              help="Whether the queries' jobs take hive-exec and the aux jars from YARN's shared "
                   "cache (uploaded and localized once) or ship them with every job. Default: "
                   "when the cluster runs one (dsbra cluster up --shared-cache).")
@state_dir_option
def hive_start(timeout, shared_cache, state_dir) -> None:
    """Start the cluster's HiveServer2 (its state in <state dir>/hive) and wait until it accepts
    sessions. Already running: says so."""
    from dsbra.bench.hive import start_server

    started = time.monotonic()
    server, fresh = start_server(StateLayout.at(state_dir), timeout_s=timeout, log=lambda m: click.echo(m, err=True),
                                 shared_cache=shared_cache)
    if fresh:
        click.echo(f"HiveServer2 up on {server.host}:{server.port} in {time.monotonic() - started:.0f} s "
                   f"(pid {server.pid}, log {server.paths.log})")
    else:
        click.echo(f"HiveServer2 already up on {server.host}:{server.port} (pid {server.pid})")


@hive_group.command("stop")
@state_dir_option
def hive_stop(state_dir) -> None:
    """Stop the cluster's HiveServer2. Safe to run twice."""
    from dsbra.bench.hive import stop_server

    click.echo("HiveServer2 stopped" if stop_server(StateLayout.at(state_dir)) else "HiveServer2 is not running")


@hive_group.command("status")
@state_dir_option
def hive_status(state_dir) -> None:
    """Whether the cluster's HiveServer2 runs. Exit 0 if it does, 3 if not."""
    from dsbra.bench.hive import running

    server = running(StateLayout.at(state_dir))
    if server is None:
        click.echo("HiveServer2: down")
        raise SystemExit(3)
    click.echo(f"HiveServer2: up on {server.host}:{server.port} (pid {server.pid}, log {server.paths.log})")
