"""The replay on Spark (issue 69): a schedule's jobs as Spark grep jobs over the same data set,
measured with the daemon's own Spark collector, into the simulator's schema; the two ways Spark
runs on shared clusters.

``shared`` runs the whole schedule in one long-running application (spark/replay_app.py: its
executors held from the start, each job submitted at its time into a Fair scheduler pool of its
own, as a Thrift server or a notebook serves many users' queries); a task belongs to the
schedule job whose job group ran its stage (Spark's ``/jobs``). ``per-job`` submits each job at
its time as its own application (spark/grep.py in cluster mode, dynamic allocation with shuffle
tracking, as batch pipelines run); a task belongs to its application's job.

While they run, the SparkCollector follows them as the daemon does (the ResourceManager's
proxy, then the History Server; each task's file from the NameNode's audit log), and the
replay's watch samples the data set's replica storage. At the end each task's split, block,
level and wait for locality come from the daemon's attribution (observe.window.build_window
with the Spark rule), so Spark runs are measured with the ruler MapReduce runs are. A job's
"maps" are its tasks, at the levels Spark reported them (PROCESS_LOCAL and NODE_LOCAL count as
node-local, ANY as off-switch). The orchestration is replay.py's (``_replay_spark``).
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
from dsbra.errors import DsbraError
from dsbra.hadoop.rest import ResourceManager, SparkApi
from dsbra.observe import spark as sp

#: how a Spark replay runs its jobs: one long-running application for the schedule, or an
#: application per job
SPARK_MODES = ("shared", "per-job")
#: the shared application's driver program, and a per-job application's
REPLAY_APP = Path(__file__).with_name("spark") / "replay_app.py"
GREP_APP = Path(__file__).with_name("spark") / "grep.py"
#: YARN's final states of an application
ENDED = ("FINISHED", "FAILED", "KILLED")
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


def write_plan(out_dir: Path, jobs: list[dict], fs: str) -> Path:
    """The application's plan (replay_app.py's PLAN): each job's id, time and inputs."""
    plan = out_dir / "spark-plan.json"
    plan.write_text(json.dumps([{"job_id": j["job_id"], "submit_s": float(j["submit_s"]),
                                 "inputs": [fs + p for p in j["inputs"]]} for j in jobs]))
    return plan


def tasks_as_jobs(jobs: list[dict], job_of):
    """(each schedule job's key in the result tables, a function giving a task as its schedule
    job's, at the schema's level, or None): ``job_of(task)`` names the task's schedule job."""
    index = {j["job_id"]: k for k, j in enumerate(jobs)}
    keys = [f"spark/{j['job_id']}" for j in jobs]

    def as_job(o):
        k = index.get(job_of(o))
        if k is None:
            return None
        return dataclasses.replace(o, job_id=keys[k], locality=LEVELS.get(o.locality, o.locality))

    return keys, as_job


def shared_job_of(app_id: str, history: SparkApi):
    """A task's schedule job in the shared application: the job group that ran its stage."""
    stage_job = {stage: job.get("jobGroup") for job in history.jobs(app_id)
                 for stage in job.get("stageIds") or []}
    return lambda o: stage_job.get(_stage(o.task_id)) if o.job_id == app_id else None


def job_outcomes(records: list[dict], jobs: list[dict], dataset: dict, t0_wall_ms: int):
    """(each job's submission in the driver, s after t0; the failed jobs; the summary's Spark
    fields): each job's count checked against what the data generator wrote."""
    by_job = {r["job_id"]: r for r in records}
    submit_s = [(by_job[j["job_id"]]["submitted_ms"] - t0_wall_ms) / 1000
                if j["job_id"] in by_job else float(j["submit_s"]) for j in jobs]
    failed = [j["job_id"] for j in jobs if "matches" not in by_job.get(j["job_id"], {})]
    cache: dict[str, int] = {}
    expected = {j["job_id"]: expected_rows(dataset, j["inputs"], cache) for j in jobs}
    matches = {k: r.get("matches") for k, r in by_job.items()}
    return submit_s, failed, {
        "matches_by_job": matches, "expected_matches_by_job": expected,
        "matches_mismatched": [k for k, v in matches.items() if v is not None and v != expected[k]],
        "errors": {k: r["error"] for k, r in by_job.items() if "error" in r}}


def per_job_job_of(app_of: dict[str, str]):
    """A task's schedule job when each job ran as its own application (job id -> app id)."""
    job_by_app = {app: job_id for job_id, app in app_of.items()}
    return lambda o: job_by_app.get(o.job_id)


def _stage(task_id: str) -> int | None:
    """The stage of a Spark observation's task id (``<app>:<stage>.<attempt>:<partition>``)."""
    try:
        return int(task_id.split(":")[1].split(".")[0])
    except (IndexError, ValueError):
        return None


def conf_args(conf: dict[str, str]) -> list[str]:
    """spark-submit's ``--conf KEY=VALUE`` for each of ``conf`` (a replay's --spark-conf)."""
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


def shared_command(env: dict, plan: Path, executors: int, conf: dict[str, str]) -> list[str]:
    """spark-submit of the shared application: its executors held, FAIR pools, then ``conf``."""
    return [env["spark_submit"], "--conf", "spark.scheduler.mode=FAIR",
            "--conf", "spark.dynamicAllocation.enabled=false",
            "--conf", f"spark.executor.instances={executors}", *conf_args(conf),
            str(REPLAY_APP), PATTERN, str(plan), str(executors)]


def per_job_command(env: dict, job: dict, executors: int, conf: dict[str, str]) -> list[str]:
    """spark-submit of one job's own application: cluster mode, dynamic allocation, then ``conf``."""
    return [env["spark_submit"], "--deploy-mode", "cluster", "--name", f"bench-{job['job_id']}",
            "--conf", "spark.yarn.submit.waitAppCompletion=false",
            "--conf", "spark.dynamicAllocation.enabled=true",
            "--conf", "spark.dynamicAllocation.shuffleTracking.enabled=true",
            "--conf", f"spark.dynamicAllocation.maxExecutors={executors}", *conf_args(conf),
            str(GREP_APP), PATTERN, ",".join(env["fs"] + p for p in job["inputs"])]


def run_shared(env: dict, plan: Path, executors: int, watch, collector: sp.SparkCollector,
               out_dir: Path, *, timeout_s: float, log, conf: dict[str, str]) -> tuple[list[dict], str]:
    """The schedule in one application; its jobs' records (replay_app.py's lines) and its id.
    The watch's epoch becomes the application's t0 (its executors held), the tables' zero."""
    cmd = shared_command(env, plan, executors, conf)
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


def until_history(collector: sp.SparkCollector, app_id: str, watch) -> None:
    """Poll until the collector has read the finished application whole (History Server)."""
    deadline = time.monotonic() + HISTORY_WAIT_S
    while app_id not in collector.done_apps:
        if time.monotonic() > deadline:
            raise DsbraError(f"the Spark History Server did not show {app_id} in {HISTORY_WAIT_S:.0f} s")
        watch.tick()
        collector.poll()
        time.sleep(POLL_S)


def run_per_job(env: dict, jobs: list[dict], executors: int, watch, collector: sp.SparkCollector,
                out_dir: Path, *, timeout_s: float, log, conf: dict[str, str]
                ) -> tuple[dict[str, str], list[float], list[str]]:
    """Each job its own application, submitted at its time as a batch pipeline submits one:
    in cluster mode (its driver in its ApplicationMaster; the client leaves once YARN accepted
    it), with dynamic allocation (shuffle tracking, no external shuffle service, up to
    ``executors``). (job id -> application id, each job's submission in s after the watch's t0,
    the jobs that failed); the clients' logs in out_dir/drivers."""
    logs = out_dir / "drivers"
    logs.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(jobs)), key=lambda k: float(jobs[k]["submit_s"]))
    clients: dict[str, subprocess.Popen] = {}
    submit_s = [float(j["submit_s"]) for j in jobs]
    deadline = time.monotonic() + timeout_s
    next_poll = 0.0
    while order or any(c.poll() is None for c in clients.values()):
        now = time.monotonic() - watch.t0
        while order and submit_s[order[0]] <= now:
            k = order.pop(0)
            job = jobs[k]
            submit_s[k] = now
            with open(logs / f"{job['job_id']}.log", "wb") as err:
                clients[job["job_id"]] = subprocess.Popen(per_job_command(env, job, executors, conf),
                                                          stdout=subprocess.DEVNULL, stderr=err)
        if time.monotonic() > deadline:
            raise DsbraError(f"the Spark replay's clients did not end in {timeout_s:.0f} s; see {logs}")
        if time.monotonic() >= next_poll:
            watch.tick()
            collector.poll()
            next_poll = time.monotonic() + POLL_S
        time.sleep(0.2)
    apps = {job_id: _app_id((logs / f"{job_id}.log").read_text(errors="replace")) for job_id in clients}
    log(f"spark: {sum(1 for a in apps.values() if a)} of {len(jobs)} applications submitted")
    rm = ResourceManager(env["rm"])
    final: dict[str, str] = {}
    while True:
        states = {a["id"]: a for a in rm.apps(app_type="SPARK") if a.get("id") in apps.values()}
        final = {job_id: states[a].get("finalStatus") for job_id, a in apps.items()
                 if a in states and states[a].get("state") in ENDED}
        if len(final) == sum(1 for a in apps.values() if a):
            break
        if time.monotonic() > deadline:
            raise DsbraError(f"the Spark replay's applications did not end in {timeout_s:.0f} s")
        watch.tick()
        collector.poll()
        time.sleep(POLL_S)
    failed = [j["job_id"] for j in jobs if final.get(j["job_id"]) != "SUCCEEDED"]
    return {job_id: a for job_id, a in apps.items() if a}, submit_s, failed
