"""Replay a schedule on the bundled cluster and record what happened, in the simulator's schema.

Each schedule job is one run of the map-only grep (grepjar.py) over its input files, submitted
at its time (a late one goes at once), by default all from one JVM (submitter.py; ``clients=
"per-job"``: a client JVM per job, waiting for it, as the earlier result sets ran); with the hive engine (hive.py), the
benchmark's query in its own HiveServer2 session over a table of exactly those files. While jobs run, the observe Collector
follows them (the daemon's own data path: RM, AM, job history) and a WebHDFS listing samples
the data set's replica storage. At the end, every map's locality, wait and delay-scheduling
wait come from the same attribution the daemon uses (observe.window.build_window), so real and
simulated runs are measured with one ruler. Optionally a DSBRA daemon (`dsbra run --apply`)
runs beside the jobs, as one arm of the comparison.

Output (``out_dir``): jobs.parquet and tasks.parquet (dsbra/results_schema.py), storage.json
(replica bytes of the data set over time), summary.json.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from dsbra.bench.grepjar import MAIN_CLASS, cluster_grep_jar
from dsbra.bench.hive import job_name
from dsbra.bench.submitter import run_schedule
from dsbra.cluster import cluster as cl
from dsbra.cluster import state as st
from dsbra.cluster.jobs import submit_at
from dsbra.cluster.paths import StateLayout
from dsbra.errors import DsbraError, HadoopError, InputError
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.window import build_window, read_files
from dsbra.results_schema import LOCALITY_NAMES, job_table, task_table, write_results
from dsbra.validate import one_of

log = logging.getLogger(__name__)
OUT_BASE = "/bench/out"
ENGINES = ("mapreduce", "hive", "spark")
#: where the other engines' jobs take their properties from (job_conf is MapReduce's)
JOB_PROPERTIES_FROM = {"hive": "Hive's queries take theirs from its HiveServer2 (hive-site.xml)",
                       "spark": "Spark's jobs take theirs from spark-defaults.conf and --spark-conf"}
#: the Spark properties the replay sets itself for its mode (spark_replay.py's commands)
SPARK_REPLAY_PROPERTIES = ("spark.scheduler.mode", "spark.dynamicAllocation.", "spark.executor.instances",
                           "spark.yarn.submit.waitAppCompletion")


def spark_conf_error(conf: dict[str, str], engine: str, name: str = "spark_conf") -> str | None:
    """The one-line error of a replay's Spark properties (``name``: the argument or option that
    gave them), or None: the spark engine's only, spark.* names, none the replay sets for its
    mode."""
    if not conf:
        return None
    if engine != "spark":
        return f"{name} sets Spark properties; the {engine} engine runs no Spark"
    for key in conf:
        if not key.startswith("spark."):
            return f"{key!r} is not a Spark property (spark.*)"
        if key.startswith(SPARK_REPLAY_PROPERTIES):
            return f"{key} is set by the replay for its --spark-mode; it cannot be overridden"
    return None


#: how a mapreduce replay submits: one JVM for the schedule, or a client JVM per job
CLIENTS = ("one", "per-job")
STORAGE_EVERY_S = 10.0


def check_dataset(ep: Endpoints, schedule: dict) -> dict[str, dict]:
    """The data set's file statuses; the schedule's inputs must all be there, of its data set."""
    data = schedule["dataset"]
    try:
        statuses = {s["pathSuffix"]: s for s in ep.hdfs.list_status(data["path"])}
    except HadoopError as exc:
        raise InputError(f"the data set {data['path']} is not in HDFS ({exc}); "
                         f"write it with dsbra bench data") from None
    manifest = statuses.get("_dataset.json")
    if manifest is None:
        raise InputError(f"{data['path']} has no _dataset.json: run dsbra bench data to complete it")
    found = json.loads(ep.hdfs.open(posixpath.join(data["path"], "_dataset.json")))
    differs = [k for k in ("seed", "block_bytes", "lines_per_file") if found.get(k) != data.get(k)]
    if differs:
        raise InputError(f"{data['path']} holds another data set than the schedule's "
                         f"({', '.join(differs)} differ)")
    missing = sorted({f for job in schedule["jobs"] for f in job["inputs"]
                      if posixpath.basename(f) not in statuses})
    if missing:
        raise InputError(f"{len(missing)} input files of the schedule are missing, e.g. {missing[0]}; "
                         f"run dsbra bench data with the schedule's --size")
    return statuses


def replica_bytes(ep: Endpoints, dataset: dict) -> tuple[int, int]:
    """(bytes x replication, bytes x base replication) of the data set's part files now."""
    parts = [s for s in ep.hdfs.list_status(dataset["path"]) if s["pathSuffix"].startswith("part-")]
    return (sum(int(s["length"]) * int(s["replication"]) for s in parts),
            sum(int(s["length"]) for s in parts) * int(dataset["replication"]))


class _Watch:
    """What a replay follows while its jobs run: the observe collector, polled every tick, and
    the data set's replica storage, sampled every STORAGE_EVERY_S."""

    def __init__(self, ep: Endpoints, dataset: dict):
        self.ep, self.dataset = ep, dataset
        self.t0_wall_ms = int(time.time() * 1000)
        self.t0 = time.monotonic()
        self.collector = Collector(ep, since_ms=self.t0_wall_ms - 1000)
        self.storage: list[tuple[float, int, int]] = []
        self._next_sample = 0.0

    def tick(self, runs=None) -> None:
        self.collector.poll()
        if time.monotonic() - self.t0 >= self._next_sample:
            self.sample()
            self._next_sample = time.monotonic() - self.t0 + STORAGE_EVERY_S

    def sample(self) -> None:
        self.storage.append((round(time.monotonic() - self.t0, 1), *replica_bytes(self.ep, self.dataset)))


def daemon_command(config: Path) -> list[str]:
    """`dsbra run --config FILE`: the config's ``mode`` decides whether the daemon applies (a
    forced ``--apply`` made run_bench_matrix.py's dsbra-dry-run arm apply until 2026-11-28)."""
    return [sys.executable, "-m", "dsbra", "run", "--config", str(config)]


def _daemon(config: Path, log_path: Path) -> subprocess.Popen:
    with open(log_path, "w") as out:
        return subprocess.Popen(daemon_command(config), stderr=out, stdout=out, start_new_session=True)


def replay(schedule: dict, layout: StateLayout, out_dir: Path, *, daemon_config: Path | None = None,
           queue: str | None = None, job_timeout_s: float = 1800.0, label: str = "",
           engine: str = "mapreduce", clients: str = "one", job_conf: dict[str, str] | None = None,
           spark_mode: str = "shared", executors: int | None = None, spark_conf: dict[str, str] | None = None,
           log=lambda msg: None) -> dict:
    """engine: ``mapreduce`` (the map-only grep job) or ``hive`` (the grep query through the
    cluster's HiveServer2, started here if it does not run, and stopped again). clients: see
    CLIENTS (mapreduce only). job_conf: Hadoop properties set on every job (mapreduce only),
    over the cluster's mapred-site.xml, as a job's submitter sets them (for instance uber mode
    or the ApplicationMaster's memory, to measure what each does to its start-up). spark_mode,
    executors and spark_conf (Spark properties over spark-defaults.conf, spark.* only): the
    spark engine's (spark_replay.py)."""
    one_of("engine", engine, ENGINES)
    one_of("clients", clients, CLIENTS)
    job_conf, spark_conf = dict(job_conf or {}), dict(spark_conf or {})
    if job_conf and engine != "mapreduce":
        raise InputError(f"job_conf sets MapReduce job properties; {JOB_PROPERTIES_FROM[engine]}")
    if error := spark_conf_error(spark_conf, engine):
        raise InputError(error)
    if engine == "hive":
        from dsbra.bench.hive import installed

        installed()  # a one-line error before anything starts
    env = cl.env(layout)
    data = st.load(layout.state_file)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    check_dataset(ep, schedule)
    jobs = schedule["jobs"]
    run_tag = label or time.strftime("%Y%m%d-%H%M%S")
    if engine == "hive":
        return _replay_hive(schedule, layout, out_dir, env, ep, run_tag, daemon_config=daemon_config,
                            queue=queue, job_timeout_s=job_timeout_s, log=log)
    if engine == "spark":
        return _replay_spark(schedule, out_dir, env, ep, run_tag, daemon_config=daemon_config,
                             mode=spark_mode, executors=executors, conf=spark_conf,
                             job_timeout_s=job_timeout_s, log=log)
    jar = cluster_grep_jar(data)
    out_base = f"{OUT_BASE}/{run_tag}"
    out_dir.mkdir(parents=True, exist_ok=True)
    daemon = _daemon(daemon_config, out_dir / "daemon.log") if daemon_config else None
    daemon_t0 = time.monotonic()
    watch = _Watch(ep, schedule["dataset"])

    submit = _submit_from_one_jvm if clients == "one" else _submit_per_job
    try:
        hadoop_ids, submit_s, ok = submit(jobs, watch, layout, jar, out_base, queue, job_conf, job_timeout_s,
                                          out_dir)
        watch.collector.poll_until_read([j for j in hadoop_ids if j], timeout_s=180)
        end_wall_ms = int(time.time() * 1000)
        watch.sample()
    finally:
        cost = daemon_cost(stop_daemon(daemon), time.monotonic() - daemon_t0, out_dir / "daemon.log")
    failed = [j["job_id"] for j, good in zip(jobs, ok) if not good]
    return _finish(schedule, out_dir, watch, hadoop_ids, submit_s, failed, end_wall_ms, daemon,
                   cost,
                   engine="mapreduce", label=run_tag,
                   extra={"clients": clients, "job_conf": job_conf, "hadoop_job_ids": hadoop_ids})


def _submit_from_one_jvm(jobs, watch: _Watch, layout: StateLayout, jar: Path, out_base: str, queue,
                         job_conf: dict[str, str], job_timeout_s: float, out_dir: Path):
    """Every job from one submitter JVM; (hadoop ids, submit_s, ok) per job. submit_s: when the
    submitter began submitting it."""
    plan = [(float(j["submit_s"]), job_name(j["job_id"]), ",".join(j["inputs"]), f"{out_base}/{j['job_id']}")
            for j in jobs]
    jobs = run_schedule(layout, jar, plan, watch.t0_wall_ms, watch.tick, queue=queue, conf=job_conf,
                        timeout_s=max(p[0] for p in plan) + job_timeout_s, log_path=out_dir / "submitter.log")
    submitted = [j.submitting_ms if j.submitting_ms is not None else watch.t0_wall_ms for j in jobs]
    return ([j.job_id for j in jobs], [(ms - watch.t0_wall_ms) / 1000 for ms in submitted], [j.ok for j in jobs])


def _submit_per_job(jobs, watch: _Watch, layout: StateLayout, jar: Path, out_base: str, queue,
                    job_conf: dict[str, str], job_timeout_s: float, out_dir: Path):
    """A client JVM per job, waiting for it; (hadoop ids, submit_s, ok) per job. submit_s: when
    its client started."""
    args = [[MAIN_CLASS, ",".join(job["inputs"]), f"{out_base}/{job['job_id']}"] for job in jobs]
    runs = submit_at(args, [float(j["submit_s"]) for j in jobs], watch.tick, t0=watch.t0, jar=jar,
                     queue=queue, conf=job_conf, job_names=[job_name(j["job_id"]) for j in jobs],
                     state_dir=layout.root)
    results = [r.wait(timeout=job_timeout_s, check=False) for r in runs]
    return ([r.job_ids[0] if r.job_ids else None for r in results], [r.started - watch.t0 for r in runs],
            [r.ok for r in results])


def _finish(schedule: dict, out_dir: Path, watch: _Watch, hadoop_ids, submit_s, failed, end_wall_ms: int,
            daemon, cost: dict, *, engine: str, label: str,
            extra: dict | None = None, obs=None, spark=None, files=None, as_job=None) -> dict:
    """Every engine: the result tables, storage.json and summary.json of a replay (``extra``: the
    engine's own fields, after the common ones). ``obs``: the tasks, if not the MapReduce
    collector's; ``spark``: the SparkCollector that judges them, ``files`` what it read;
    ``as_job``: each judged task as its schedule job's (its job_id one of ``hadoop_ids``), or
    None for a task of no schedule job."""
    jobs = schedule["jobs"]
    collector, storage, t0_wall_ms = watch.collector, watch.storage, watch.t0_wall_ms
    if obs is None:
        obs = collector.take()
    window = build_window(collector, obs, window_start_ms=t0_wall_ms, window_end_ms=end_wall_ms,
                          detail=True, files=files, spark=spark)
    if as_job is not None:
        obs = [o for o in map(as_job, obs) if o is not None]
    tables = result_tables(jobs, hadoop_ids, submit_s, obs, window.observe["tasks"], t0_wall_ms)
    write_results(out_dir, *tables)
    (out_dir / "storage.json").write_text(json.dumps(
        {"columns": ["t_s", "replica_bytes", "base_replica_bytes"], "rows": storage}, indent=0) + "\n")
    # t0_wall_ms: the epoch of every *_s in the tables, to find the run's jobs in Hadoop's records
    head = {"engine": engine, "label": label, "daemon": daemon is not None, "t0_wall_ms": t0_wall_ms}
    head |= cost
    summary = head | summarize(tables[0], tables[1], storage)
    summary |= {"schedule_source": schedule["source"], "schedule_seed": schedule["seed"], "failed_jobs": failed,
                "delay_threshold_s": window.delay_threshold_s,
                "late_submissions_s_max": round(max(s - float(j["submit_s"]) for s, j in zip(submit_s, jobs)), 2)}
    summary |= extra or {}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if daemon is not None and daemon.returncode not in (0, None):
        raise DsbraError(f"the daemon exited with {daemon.returncode}; see {out_dir / 'daemon.log'}")
    return summary


def stop_daemon(daemon: subprocess.Popen | None, timeout_s: float = 180) -> float | None:
    """SIGTERM (it ends its round first), killed after ``timeout_s``; the CPU seconds (user +
    system) it used over its whole life, from the kernel's account of the reaped process: what
    the daemon cost the machine its jobs ran on. None without a daemon."""
    if daemon is None:
        return None
    os.kill(daemon.pid, signal.SIGTERM)  # not Popen's: it would reap an exited one, rusage lost
    deadline = time.monotonic() + timeout_s
    while not (reaped := os.wait4(daemon.pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            daemon.kill()
            reaped = os.wait4(daemon.pid, 0)
            break
        time.sleep(0.2)
    _, status, usage = reaped
    daemon.returncode = os.waitstatus_to_exitcode(status)
    return round(usage.ru_utime + usage.ru_stime, 2)


#: a daemon round's line in its log, done (``round=N blocks=``) or skipped
_ROUND_LINE = re.compile(r" round=\d+ (?:blocks=|skipped: )")


def daemon_cost(daemon_cpu_s: float | None, life_s: float, log_path: Path) -> dict:
    """The daemon's CPU seconds over its life, its rounds (from its log), CPU per round, and
    its share of the machine's CPUs while it ran (``life_s``); nothing without a daemon."""
    if daemon_cpu_s is None:
        return {}
    rounds = len(_ROUND_LINE.findall(log_path.read_text())) if log_path.exists() else 0
    cpus = os.cpu_count() or 1
    return {"daemon_cpu_s": daemon_cpu_s, "daemon_rounds": rounds,
            "daemon_cpu_s_per_round": round(daemon_cpu_s / rounds, 3) if rounds else None,
            "daemon_cpu_share": round(daemon_cpu_s / (life_s * cpus), 4) if life_s > 0 else None}


def _replay_hive(schedule: dict, layout: StateLayout, out_dir: Path, env: dict, ep: Endpoints, run_tag: str, *,
                 daemon_config: Path | None, queue: str | None, job_timeout_s: float, log) -> dict:
    """The hive engine: every job's query in its own HiveServer2 session at its schedule time,
    measured by the same collector; rows returned checked against the data generator."""
    from dsbra.bench import hive

    jobs = schedule["jobs"]
    client = cl.hdfs_client(env["namenode"], timeout=120)
    server, started_server = hive.start_server(layout, log=log)
    daemon = None
    tables: list[str] = []
    try:
        tables = hive.create_tables(server, client, jobs, run_tag)
        out_dir.mkdir(parents=True, exist_ok=True)
        daemon = _daemon(daemon_config, out_dir / "daemon.log") if daemon_config else None
        daemon_t0 = time.monotonic()
        watch = _Watch(ep, schedule["dataset"])
        try:
            runs = hive.submit_queries_at(server, jobs, tables, [float(j["submit_s"]) for j in jobs], watch.tick,
                                          t0=watch.t0, queue=queue, timeout_s=job_timeout_s)
            results = [r.wait(timeout=60, check=False) for r in runs]
            names = [job_name(j["job_id"]) for j in jobs]
            since_ms = watch.t0_wall_ms - 1000
            hadoop_ids = hive.match_jobs(ep.rm.apps(finished_since_ms=since_ms), names, since_ms)
            watch.collector.poll_until_read([j for j in hadoop_ids if j], timeout_s=180)
            end_wall_ms = int(time.time() * 1000)
            watch.sample()
        finally:
            cost = daemon_cost(stop_daemon(daemon), time.monotonic() - daemon_t0,
                               out_dir / "daemon.log")
    finally:
        try:
            if tables:
                hive.drop_tables(server, client, tables, run_tag)
        finally:
            if started_server:
                hive.stop_server(layout)
    cache: dict[str, int] = {}
    expected = {j["job_id"]: hive.expected_rows(schedule["dataset"], j["inputs"], cache) for j in jobs}
    rows = {j["job_id"]: r.rows for j, r in zip(jobs, results)}
    errors = {j["job_id"]: r.error for j, r in zip(jobs, results) if r.error}
    failed = [j["job_id"] for j, r in zip(jobs, results) if not r.ok]
    failed += [j["job_id"] for j, h, r in zip(jobs, hadoop_ids, results) if r.ok and h is None]
    mismatched = [k for k in rows if rows[k] is not None and rows[k] != expected[k]]
    submit_s = [r.started - watch.t0 for r in runs]
    return _finish(schedule, out_dir, watch, hadoop_ids, submit_s, failed, end_wall_ms, daemon,
                   cost, engine="hive", label=run_tag,
                   extra={"hadoop_jobs": dict(zip([j["job_id"] for j in jobs], hadoop_ids)),
                          "query_seconds": {j["job_id"]: round(r.seconds, 2) for j, r in zip(jobs, results)},
                          "rows_by_job": rows, "expected_rows_by_job": expected, "rows_mismatched": mismatched,
                          "errors": errors})


def result_tables(jobs: list[dict], hadoop_ids: list[str | None], submit_s: list[float], obs, task_rows,
                  t0_ms: int):
    """The job and task tables (results_schema) of a replay. Pure."""
    ours = {h: k for k, h in enumerate(hadoop_ids) if h}
    attribution = {row["attempt_id"]: row for row in task_rows}
    tasks: dict[str, list] = {name: [] for name in ("task_id", "job_id", "block_id", "node", "locality",
                                                    "scheduled_s", "launch_s", "finish_s", "wait_s",
                                                    "delay_wait_s", "delayed")}
    per_job: dict[int, list[int]] = {}
    for o in sorted(obs, key=lambda o: (o.job_id, o.task_id)):
        k = ours.get(o.job_id)
        if k is None or o.finish_ms is None:
            continue
        row = attribution.get(o.attempt_id, {})
        level = (LOCALITY_NAMES.index(o.locality) if o.locality in LOCALITY_NAMES
                 else 0 if o.node in o.split_hosts else 2)
        per_job.setdefault(k, []).append(len(tasks["task_id"]))
        for name, value in (("task_id", len(tasks["task_id"])), ("job_id", jobs[k]["job_id"]),
                            ("block_id", _file_index(o.path)), ("node", o.node), ("locality", level),
                            ("scheduled_s", (o.scheduled_ms - t0_ms) / 1000),
                            ("launch_s", (o.launch_ms - t0_ms) / 1000), ("finish_s", (o.finish_ms - t0_ms) / 1000),
                            ("wait_s", (o.launch_ms - o.scheduled_ms) / 1000),
                            ("delay_wait_s", float(row.get("delay_s", 0.0))), ("delayed", bool(row.get("delayed")))):
            tasks[name].append(value)
    t = {name: np.array(values) for name, values in tasks.items()}
    cols: dict[str, list] = {name: [] for name in ("job_id", "bin", "maps", "submit_s", "start_s", "finish_s",
                                                   "response_s", "node_local_maps", "rack_local_maps",
                                                   "off_switch_maps", "mean_wait_s", "delay_wait_s")}
    for k, job in enumerate(jobs):
        rows = per_job.get(k)
        if not rows:
            continue  # a job that failed or never ran: listed in the summary, not here
        level = t["locality"][rows]
        finish = float(t["finish_s"][rows].max())
        for name, value in (("job_id", job["job_id"]), ("bin", job["bin"]), ("maps", len(rows)),
                            ("submit_s", submit_s[k]), ("start_s", float(t["launch_s"][rows].min())),
                            ("finish_s", finish), ("response_s", finish - submit_s[k]),
                            ("node_local_maps", int((level == 0).sum())), ("rack_local_maps", int((level == 1).sum())),
                            ("off_switch_maps", int((level == 2).sum())),
                            ("mean_wait_s", float(t["wait_s"][rows].mean())),
                            ("delay_wait_s", float(t["delay_wait_s"][rows].sum()))):
            cols[name].append(value)
    return job_table(cols), task_table(tasks)


def _file_index(path: str | None) -> int:
    name = posixpath.basename(path or "")
    return int(name[5:]) if name.startswith("part-") and name[5:].isdigit() else -1


def summarize(jobs, tasks, storage) -> dict:
    """Headline numbers of one replay: response, locality (overall and per bin), waits, storage."""
    j, t = jobs.to_pydict(), tasks.to_pydict()
    maps = np.array(j["maps"])
    local = np.array(j["node_local_maps"])
    bins = np.array(j["bin"])
    extra = [(r - b) / b for _, r, b in storage if b]
    return {
        "jobs": len(maps), "maps": int(maps.sum()),
        "mean_response_s": round(float(np.mean(j["response_s"])), 2) if len(maps) else None,
        "node_locality": round(float(local.sum() / maps.sum()), 4) if maps.sum() else None,
        "node_locality_by_bin": {int(b): round(float(local[bins == b].sum() / maps[bins == b].sum()), 4)
                                 for b in sorted(set(bins.tolist()))},
        "median_first_map_wait_s": round(float(np.median(np.array(j["start_s"]) - np.array(j["submit_s"]))), 2)
        if len(maps) else None,
        "mean_map_wait_s": round(float(np.mean(t["wait_s"])), 2) if t["wait_s"] else None,
        "mean_delay_wait_s_per_map": round(float(np.mean(t["delay_wait_s"])), 2) if t["delay_wait_s"] else None,
        "map_seconds_by_locality": {LOCALITY_NAMES[level]: round(float(np.median(
            np.array(t["finish_s"])[np.array(t["locality"]) == level]
            - np.array(t["launch_s"])[np.array(t["locality"]) == level])), 2)
            for level in sorted(set(t["locality"]))},
        "extra_storage_mean": round(float(np.mean(extra)), 4) if extra else None,
        "extra_storage_max": round(float(np.max(extra)), 4) if extra else None,
    }


def _replay_spark(schedule: dict, out_dir: Path, env: dict, ep: Endpoints, run_tag: str, *,
                  daemon_config: Path | None, mode: str, executors: int | None,
                  conf: dict[str, str], job_timeout_s: float, log) -> dict:
    """The spark engine (spark_replay.py): the schedule in one long-running application or an
    application per job, followed by the daemon's Spark collector; its tasks judged by the
    daemon's Spark rule."""
    from dsbra.bench import spark_replay as sr
    from dsbra.hadoop.rest import SparkApi

    one_of("spark_mode", mode, sr.SPARK_MODES)
    if not env.get("spark_submit"):
        raise InputError("the bundled cluster runs no Spark: bring it up with dsbra cluster up --spark")
    jobs = schedule["jobs"]
    executors = executors or sr.default_executors(env)
    out_dir.mkdir(parents=True, exist_ok=True)
    collector = sr.spark_collector(env)
    history = SparkApi.history(env["spark_history"])
    daemon = _daemon(daemon_config, out_dir / "daemon.log") if daemon_config else None
    daemon_t0 = time.monotonic()
    watch = _Watch(ep, schedule["dataset"])
    timeout_s = max(float(j["submit_s"]) for j in jobs) + job_timeout_s
    try:
        if mode == "shared":
            plan = sr.write_plan(out_dir, jobs, env["fs"])
            records, app_id = sr.run_shared(env, plan, executors, watch, collector, out_dir,
                                            timeout_s=timeout_s, log=log, conf=conf)
            apps = [app_id]
        else:
            app_of, submit_s, failed = sr.run_per_job(env, jobs, executors, watch, collector,
                                                      out_dir, timeout_s=timeout_s, log=log, conf=conf)
            apps = list(app_of.values())
        for app in apps:
            sr.until_history(collector, app, watch)
        end_wall_ms = int(time.time() * 1000)
        watch.sample()
    finally:
        cost = daemon_cost(stop_daemon(daemon), time.monotonic() - daemon_t0, out_dir / "daemon.log")
    files = read_files(ep, collector.paths_pending())
    obs = collector.take(files)
    extra: dict = {"spark_mode": mode, "executors": executors, "spark_conf": conf}
    if mode == "shared":
        job_of = sr.shared_job_of(app_id, history)
        submit_s, failed, fields = sr.job_outcomes(records, jobs, schedule["dataset"], watch.t0_wall_ms)
        extra |= {"spark_app": app_id} | fields
    else:
        job_of = sr.per_job_job_of(app_of)
        extra |= {"spark_apps": app_of}
    keys, as_job = sr.tasks_as_jobs(jobs, job_of)
    return _finish(schedule, out_dir, watch, keys, submit_s, failed, end_wall_ms, daemon, cost,
                   engine="spark", label=run_tag, obs=obs, spark=collector, files=files,
                   as_job=as_job, extra=extra)
