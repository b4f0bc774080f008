"""The replay on Spark (issue 69): a schedule's jobs as Spark grep jobs over the same data set,
measured with the daemon's own Spark collector, into the simulator's schema.

``shared`` mode runs the whole schedule in one long-running application (spark/replay_app.py:
its executors held from the start, each job submitted at its time into a Fair scheduler pool
of its own, as a Thrift server or a notebook serves many users' queries). While it runs, the
SparkCollector follows it as the daemon does (the ResourceManager's proxy, then the History
Server; each task's file from the NameNode's audit log), and the replay's watch samples the data
set's replica storage. At the end each task's split, block, level and wait for locality come
from the daemon's attribution (observe.window.build_window with the Spark rule), so Spark runs
are measured with the ruler MapReduce runs are. A task belongs to the schedule job whose job
group ran its stage (Spark's ``/jobs``).

Each job's response is from its submission in the driver to the end of its Spark job; its
"maps" are its tasks, at the levels Spark reported them (PROCESS_LOCAL and NODE_LOCAL count as
node-local, ANY as off-switch).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import threading
import time
from pathlib import Path

from dsbra.bench.hive import PATTERN, expected_rows
from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout
from dsbra.errors import DsbraError, InputError
from dsbra.hadoop.rest import ResourceManager, SparkApi
from dsbra.observe import spark as sp
from dsbra.observe.collector import Endpoints
from dsbra.observe.window import read_files

#: how a Spark replay runs its jobs: one long-running application for the schedule
SPARK_MODES = ("shared",)
#: the application's driver program
REPLAY_APP = Path(__file__).with_name("spark") / "replay_app.py"
#: the executors of a shared application when not given: two one-core executors fit a worker's
#: NodeManager beside the others' containers (docs/spark.md), and the ApplicationMaster takes a
#: place, so two per worker minus one
EXECUTORS_PER_WORKER = 2
#: Spark's levels as the simulator's schema names them (results_schema.LOCALITY_NAMES)
LEVELS = {"PROCESS_LOCAL": "NODE_LOCAL", "NODE_LOCAL": "NODE_LOCAL", "NO_PREF": "NODE_LOCAL",
          "RACK_LOCAL": "RACK_LOCAL", "ANY": "OFF_SWITCH"}
POLL_S = 2.0
#: how long the History Server may take to show the finished application
HISTORY_WAIT_S = 180.0


def default_executors(env: dict) -> int:
    return EXECUTORS_PER_WORKER * len(env["workers"]) - 1


def spark_collector(env: dict) -> sp.SparkCollector:
    """The daemon's Spark collector of the bundled cluster (`dsbra cluster up --spark`)."""
    return sp.SparkCollector(ResourceManager(env["rm"]), SparkApi.proxy(env["rm"]),
                             SparkApi.history(env["spark_history"]),
                             sp.AuditTail.at_end(env["audit_logs"]["namenode"]))


def replay_spark(schedule: dict, layout: StateLayout, out_dir: Path, ep: Endpoints, run_tag: str, *,
                 daemon_config: Path | None, mode: str, executors: int | None,
                 job_timeout_s: float, log) -> dict:
    from dsbra.bench import replay as rp

    env = cl.env(layout)
    if not env.get("spark_submit"):
        raise InputError("the bundled cluster runs no Spark: bring it up with dsbra cluster up --spark")
    jobs = schedule["jobs"]
    executors = executors or default_executors(env)
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = out_dir / "spark-plan.json"
    plan.write_text(json.dumps([{"job_id": j["job_id"], "submit_s": float(j["submit_s"]),
                                 "inputs": [env["fs"] + p for p in j["inputs"]]} for j in jobs]))
    collector = spark_collector(env)
    daemon = rp._daemon(daemon_config, out_dir / "daemon.log") if daemon_config else None
    daemon_t0 = time.monotonic()
    watch = rp._Watch(ep, schedule["dataset"])
    try:
        records, app_id = _run_shared(env, plan, executors, watch, collector, out_dir,
                                      timeout_s=max(float(j["submit_s"]) for j in jobs) + job_timeout_s,
                                      log=log)
        _until_history(collector, app_id, watch)
        end_wall_ms = int(time.time() * 1000)
        watch.sample()
    finally:
        cost = rp.daemon_cost(rp.stop_daemon(daemon), time.monotonic() - daemon_t0, out_dir / "daemon.log")
    files = read_files(ep, collector.paths_pending())
    obs = collector.take(files)
    group = {jid: k for k, jid in enumerate(j["job_id"] for j in jobs)}
    stage_job = {stage: job.get("jobGroup") for job in SparkApi.history(env["spark_history"]).jobs(app_id)
                 for stage in job.get("stageIds") or []}
    keys = [f"{app_id}/{j['job_id']}" for j in jobs]

    def as_job(o):
        """A task of the application as its schedule job's, at the schema's level."""
        k = group.get(stage_job.get(_stage(o.task_id)))
        if o.job_id != app_id or k is None:
            return None
        return dataclasses.replace(o, job_id=keys[k], locality=LEVELS.get(o.locality, o.locality))

    by_job = {r["job_id"]: r for r in records}
    submit_s = [(by_job[j["job_id"]]["submitted_ms"] - watch.t0_wall_ms) / 1000
                if j["job_id"] in by_job else float(j["submit_s"]) for j in jobs]
    failed = [j["job_id"] for j in jobs if "matches" not in by_job.get(j["job_id"], {})]
    cache: dict[str, int] = {}
    expected = {j["job_id"]: expected_rows(schedule["dataset"], j["inputs"], cache) for j in jobs}
    matches = {k: r.get("matches") for k, r in by_job.items()}
    return rp._finish(schedule, out_dir, watch, keys, submit_s, failed, end_wall_ms, daemon, cost,
                      engine="spark", label=run_tag, obs=obs, spark=collector, files=files,
                      as_job=as_job,
                      extra={"spark_mode": mode, "spark_app": app_id, "executors": executors,
                             "matches_by_job": matches, "expected_matches_by_job": expected,
                             "matches_mismatched": [k for k, v in matches.items()
                                                    if v is not None and v != expected[k]],
                             "errors": {k: r["error"] for k, r in by_job.items() if "error" in r}})


def _stage(task_id: str) -> int | None:
    """The stage of a Spark observation's task id (``<app>:<stage>.<attempt>:<partition>``)."""
    try:
        return int(task_id.split(":")[1].split(".")[0])
    except (IndexError, ValueError):
        return None


def _run_shared(env: dict, plan: Path, executors: int, watch, collector: sp.SparkCollector,
                out_dir: Path, *, timeout_s: float, log) -> tuple[list[dict], str]:
    """The schedule in one application; its jobs' records (replay_app.py's lines) and its id.
    The watch's epoch becomes the application's t0 (its executors held), the tables' zero."""
    cmd = [env["spark_submit"], "--conf", "spark.scheduler.mode=FAIR",
           "--conf", "spark.dynamicAllocation.enabled=false",
           "--conf", f"spark.executor.instances={executors}", str(REPLAY_APP), PATTERN, str(plan),
           str(executors)]
    lines: list[str] = []
    with open(out_dir / "driver.log", "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout_s + 300  # and the application's start
        started = False
        while proc.poll() is None:
            if not started and lines:
                t0_ms = json.loads(lines[0])["t0_ms"]
                watch.t0 -= (watch.t0_wall_ms - t0_ms) / 1000
                watch.t0_wall_ms, started = t0_ms, True
                log(f"spark: executors held, the schedule starts ({len(json.loads(plan.read_text()))} jobs)")
            if time.monotonic() > deadline:
                proc.kill()
                raise DsbraError(f"the Spark replay did not end in {timeout_s:.0f} s; see "
                                 f"{out_dir / 'driver.log'}")
            watch.tick()
            collector.poll()
            time.sleep(POLL_S)
        reader.join(timeout=30)
    app_id = _app_id((out_dir / "driver.log").read_text(errors="replace"))
    if not lines or app_id is None:
        raise DsbraError(f"the Spark replay's application did not start (exit {proc.returncode}); "
                         f"see {out_dir / 'driver.log'}")
    return [json.loads(line) for line in lines[1:] if line.strip()], app_id


def _app_id(driver_log: str) -> str | None:
    """The YARN application id spark-submit's client logged."""
    found = re.search(r"\bapplication_\d+_\d+\b", driver_log)
    return found.group(0) if found else None


def _until_history(collector: sp.SparkCollector, app_id: str, watch) -> None:
    """Poll until the collector has read the finished application whole (History Server)."""
    deadline = time.monotonic() + HISTORY_WAIT_S
    while app_id not in collector.done_apps:
        if time.monotonic() > deadline:
            raise DsbraError(f"the Spark History Server did not show {app_id} in {HISTORY_WAIT_S:.0f} s")
        watch.tick()
        collector.poll()
        time.sleep(POLL_S)
