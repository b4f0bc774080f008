"""Spark on the bundled cluster (`dsbra cluster up --spark`), against real YARN, HDFS and a real
Spark 4 from PyPI: spark-submit in client and cluster mode, PySpark and SQL; the History Server
as a cluster daemon; the Spark collector's records against the driver's own log; the daemon
raising a file Spark's tasks wait for, and lowering it after.

One cluster in the second slot (harness.SPARK_SPEC: the daemon tests' cluster with Spark).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from dsbra.bench import spark_truth as truth
from dsbra.bench.grepjar import SPARK_MAIN_CLASS, spark_grep_jar
from dsbra.daemon.config import bundled_spark_section
from dsbra.cluster import cluster as cl
from dsbra.cluster import state as st
from dsbra.cluster.spark import ensure_spark
from dsbra.hadoop.rest import ResourceManager, SparkApi, WebHdfs
from dsbra.observe import spark as sp
from dsbra.observe.window import attribute_spark, map_to_blocks, read_files
from harness import SPARK_SPEC, Daemon, daemon_config, run_dsbra

pytestmark = pytest.mark.cluster

GREP = Path(__file__).resolve().parents[2] / "dsbra" / "bench" / "spark" / "grep.py"
HOT, COLD = "/ts/hot", "/ts/cold"
#: on every worker: its tasks never wait, and set the window's mean pressure beside the hot file's
EVERYWHERE = "/ts/everywhere"
LINE = b"alpha beta gamma delta hot cold xxxxxxxxxxxxxxxxxxxx\n"


@pytest.fixture(scope="module")
def spark_cluster(second_slot):
    """(layout, env, HDFS client): a hot file of eight blocks on one worker, a cold one of four
    on three, one of eight on all four."""
    layout, env, _ = second_slot.cluster(SPARK_SPEC)
    client = cl.hdfs_client(env["namenode"])
    block = env["block_size"]
    for path, blocks, replication in ((HOT, 8, 1), (COLD, 4, 3), (EVERYWHERE, 8, 4)):
        client.write(path, data=lines_of(blocks, block), overwrite=True, replication=replication)
    return layout, env, client


def lines_of(blocks: int, block: int) -> bytes:
    """``blocks`` full blocks of LINE."""
    return (LINE * (blocks * block // len(LINE) + 1))[: blocks * block]


def submit(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([env["spark_submit"], *args], capture_output=True, text=True, timeout=timeout)


def expected_matches(client, path: str) -> int:
    with client.read(path) as reader:
        return sum(b"hot" in line for line in reader.read().splitlines())


def poll_until(collector, done, failure: str, timeout_s: float = 120) -> None:
    """The collector polled every 2 s until ``done()``; ``failure`` if it never is."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, failure
        collector.poll()
        time.sleep(2)


def files_pending(env: dict, collector) -> dict:
    """The round's one read of the files the collector's pending tasks opened."""
    return read_files(SimpleNamespace(hdfs=WebHdfs(env["namenode"].split(",")[0], user="root")),
                      collector.paths_pending())


def app_of(stderr: str) -> str:
    return next(w.strip(",.") for w in stderr.split() if w.startswith("application_"))


def test_env_status_and_logs_name_spark(spark_cluster):
    layout, env, _ = spark_cluster
    assert Path(env["spark_submit"]).is_file()
    assert env["spark_history"] == f"http://{env['master']}:{SPARK_SPEC.port('spark_history')}"
    assert isinstance(SparkApi.history(env["spark_history"]).applications(), list)
    assert Path(env["audit_logs"]["namenode"]).is_file()
    status = run_dsbra("cluster", "status", "--json", "--state-dir", str(layout.root), check=True)
    assert "spark-history" in json.loads(status.stdout)["daemons"], status.stdout
    logs = run_dsbra("cluster", "logs", "spark-history", "--state-dir", str(layout.root), check=True)
    assert "HistoryServer" in logs.stdout


@pytest.mark.parametrize("mode", ["client", "cluster"])
def test_spark_submit_runs_pyspark_and_sql_on_yarn_with_its_jars_from_hdfs(spark_cluster, mode):
    """Both deploy modes, the RDD grep and the same as Spark SQL, no further setting than the
    wrapper's; the jars come from the archive in HDFS (never uploaded per application), and
    the finished application shows in the History Server."""
    layout, env, client = spark_cluster
    proc = submit(env, "--deploy-mode", mode, "--conf", "spark.executor.instances=2", str(GREP),
                  "--sql", "hot", env["fs"] + COLD)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "__spark_libs__" not in proc.stderr  # spark.yarn.archive: nothing of Spark's uploaded
    app = app_of(proc.stderr)
    rm = ResourceManager(env["rm"])
    final = next(a for a in rm.apps(app_type="SPARK") if a["id"] == app)
    assert final["finalStatus"] == "SUCCEEDED", final
    if mode == "client":  # the driver's output is ours
        assert f"job 0 matches {expected_matches(client, COLD)}" in proc.stdout
    history = SparkApi.history(env["spark_history"])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        apps = {a["id"]: a for a in history.applications(status="completed")}
        if app in apps:
            break
        time.sleep(2)
    assert app in apps, "the History Server never listed the finished application"
    assert history.stages(app), "no stages in the History Server"


def test_a_scala_application_runs_and_is_read_as_a_pyspark_one_is(spark_cluster):
    """Spark's grep as a Scala application (bench/spark/Grep.scala, compiled with the Scala
    compiler among Spark's jars): its SQL job in client mode counts what the file holds; its RDD
    job in cluster mode is read by the collector from the History Server and the audit log,
    every task with its file and the block its split starts in."""
    layout, env, client = spark_cluster
    jar = str(spark_grep_jar(ensure_spark(quiet=True), Path(st.load(layout.state_file)["java_home"])))
    proc = submit(env, "--class", SPARK_MAIN_CLASS, "--conf", "spark.executor.instances=2", jar,
                  "--sql", "hot", env["fs"] + COLD)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"job 0 matches {expected_matches(client, COLD)}" in proc.stdout
    collector = sp.SparkCollector(ResourceManager(env["rm"]), SparkApi.proxy(env["rm"]),
                                  SparkApi.history(env["spark_history"]),
                                  sp.AuditTail.at_end(env["audit_logs"]["namenode"]))
    proc = submit(env, "--deploy-mode", "cluster", "--class", SPARK_MAIN_CLASS,
                  "--conf", "spark.executor.instances=2", jar, "hot", env["fs"] + COLD)
    assert proc.returncode == 0, proc.stderr[-3000:]
    app = app_of(proc.stderr)
    poll_until(collector, lambda: app in collector.done_apps, "the History Server never gave the application")
    files = files_pending(env, collector)
    obs = [o for o in collector.take(files) if o.job_id == app]
    assert len(obs) == 4 and all(o.path == COLD and o.engine == "spark" for o in obs), obs
    blocks = map_to_blocks(obs, files)
    assert blocks.unmapped == 0 and len(set(blocks.block_of)) == 4


def test_the_collector_reads_each_task_as_the_driver_logged_it(spark_cluster, tmp_path):
    """A long-running application (four one-core executors) runs grep jobs over the hot and the
    cold file while a SparkCollector polls (proxy, History Server, audit log). Every task its
    driver started is handed out once with the driver's host and level, the file it opened
    and the block its split starts in; the judged waits agree with the driver's levels."""
    layout, env, client = spark_cluster
    collector = sp.SparkCollector(ResourceManager(env["rm"]), SparkApi.proxy(env["rm"]),
                                  SparkApi.history(env["spark_history"]),
                                  sp.AuditTail.at_end(env["audit_logs"]["namenode"]))
    log_path = tmp_path / "driver.log"
    with open(log_path, "wb") as err:
        proc = subprocess.Popen([env["spark_submit"], "--conf", "spark.executor.instances=4",
                                 "--driver-java-options", "-Ddsbra.spark.locality.log=debug", str(GREP),
                                 "hot", env["fs"] + HOT, f"{env['fs']}{HOT},{env['fs']}{COLD}"],
                                stdout=subprocess.DEVNULL, stderr=err)
        while proc.poll() is None:
            collector.poll()
            time.sleep(2)
    assert proc.returncode == 0, log_path.read_text()[-3000:]
    poll_until(collector, lambda: collector.apps and all(w.done for w in collector.apps.values()),
               "the History Server never gave the application")
    files = files_pending(env, collector)
    obs = collector.take(files)
    log = truth.parse_driver_log(log_path.read_text())
    started = {tid: t for tid, t in log.tasks.items() if t["attempt"] == 0}
    assert sorted(sp.task_of(o.attempt_id)[1] for o in obs) == sorted(started)
    for o in obs:
        t = started[sp.task_of(o.attempt_id)[1]]
        assert (o.node, o.locality) == (t["host"], t["level"])
        assert o.path in (HOT, COLD) and o.start is not None and o.engine == "spark"
    blocks = map_to_blocks(obs, files)
    assert blocks.unmapped == 0
    # 8 + 8 + 4 tasks: each of the hot file's blocks read twice, the cold file's once
    per_block: dict[str, int] = {}
    for b in blocks.block_of:
        per_block[blocks.rows[b][0]] = per_block.get(blocks.rows[b][0], 0) + 1
    assert sorted(per_block.values()) == [1] * 4 + [2] * 8
    holders = [blocks.rows[b][1] for b in blocks.block_of]
    app = obs[0].job_id
    judged = attribute_spark(obs, holders, collector, int(time.time() * 1000), sp.MIN_IDLE_S)
    tasks, executors = collector.timeline(app)
    real = truth.true_waits(log, {sp.task_of(o.attempt_id)[1]: holders[j] for j, o in enumerate(obs)},
                            {e.executor_id: (e.host, e.cores, e.add_ms) for e in executors},
                            {w["host"]: w["rack"] for w in env["workers"]}, int(time.time() * 1000),
                            sp.MIN_IDLE_S)
    inferred = {sp.task_of(o.attempt_id)[1]: (bool(judged["delayed"][j]), float(judged["delay_s"][j]))
                for j, o in enumerate(obs)}
    score = truth.compare(inferred, real)
    assert score["tasks"] == len(obs)
    # the hot file's eight tasks per job wait for its one holder: the driver held them
    assert score["delayed_true"] > 0, score
    assert score["true_positives"] == score["delayed_true"], score  # recall 1
    assert score["delayed_inferred"] - score["true_positives"] <= max(1, score["delayed_true"] // 10), score
    assert collector.take(files) == [] and collector.apps == {}  # each task once; the app forgotten


def test_the_daemon_raises_the_file_spark_waits_for_and_lowers_it_after(spark_cluster, tmp_path):
    """`dsbra run` with its default policy and the bundled cluster's spark: section: while a
    long-running application's grep jobs wait for the hot file's one holder (and read a file on
    every worker beside it, whose tasks never wait), the daemon raises it; once the jobs stop,
    it lowers it back to its base, never below."""
    layout, env, client = spark_cluster
    # sixteen blocks on one worker: more than its executors can read while the others, done with
    # the file on every worker, sit idle. Seven executors: two fit a NodeManager and the
    # ApplicationMaster takes one's place, so every worker, the holder too, runs at least one.
    # (With four, YARN once put two on the holder and none elsewhere that waited: its two cores
    # kept up with eight blocks and no task waited; and Spark waits for no host without an
    # executor.)
    hot = HOT + "-daemon"
    client.write(hot, data=lines_of(16, env["block_size"]), overwrite=True, replication=1)
    cfg = daemon_config(env, tmp_path / "spark", policy={"name": "dsbra"},
                        spark=bundled_spark_section(env))
    daemon = Daemon.configure(tmp_path, "spark", cfg)
    daemon.start()
    jobs = None
    try:
        jobs = subprocess.Popen([env["spark_submit"], "--conf", "spark.executor.instances=7", str(GREP),
                                 "--gap-s", "2", "hot", *[f"{env['fs']}{hot},{env['fs']}{EVERYWHERE}"] * 40],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        raised = daemon.until(lambda: client.status(hot)["replication"] > 1, 420, every_s=3)
        jobs.kill()
        jobs.wait(60)
        lowered = raised and daemon.until(lambda: client.status(hot)["replication"] == 1,
                                          12 * daemon.cfg["interval_s"], every_s=3)
    finally:
        if jobs is not None and jobs.poll() is None:
            jobs.kill()
        err = daemon.stop()
    assert raised, err[-4000:]
    assert lowered, (client.status(hot)["replication"], err[-4000:])
    status = daemon.status()
    engines = [r.get("engines", {}) for r in status["recent_rounds"]]
    assert any(e.get("spark", {}).get("delayed_tasks", 0) > 0 for e in engines), engines
    below = [r for r in daemon.journal() if r["op"] == "intent" and r["target"] < 1]
    assert below == []


def test_a_history_server_that_is_down_is_a_logged_skip(spark_cluster, caplog, tmp_path):
    """The History Server stopped while an application runs and ends: the collector keeps
    polling, logs the failed reads and hands out nothing of the finished application until the
    server is back; then every task, once."""
    layout, env, client = spark_cluster
    collector = sp.SparkCollector(ResourceManager(env["rm"]), SparkApi.proxy(env["rm"]),
                                  SparkApi.history(env["spark_history"]),
                                  sp.AuditTail.at_end(env["audit_logs"]["namenode"]))
    cl.stop_daemon(layout, "spark-history")
    try:
        caplog.set_level("INFO", logger="dsbra")
        err = tmp_path / "driver.log"
        with open(err, "wb") as handle:
            proc = subprocess.Popen([env["spark_submit"], "--conf", "spark.executor.instances=2", str(GREP),
                                     "hot", env["fs"] + COLD], stdout=subprocess.DEVNULL, stderr=handle)
            while proc.poll() is None:
                collector.poll()
                time.sleep(2)
        for _ in range(3):
            collector.poll()
            time.sleep(1)
        assert proc.returncode == 0, err.read_text()[-3000:]
        app = app_of(err.read_text())
        assert app not in collector.done_apps and collector.skips.get("history", 0) >= 3
        assert any("cannot reach Spark REST API" in r.getMessage() for r in caplog.records)
    finally:
        cl.start_daemon(layout, "spark-history")
    poll_until(collector, lambda: app in collector.done_apps,
               "the History Server, back, never gave the application")
    obs = collector.take(files_pending(env, collector))
    assert len(obs) == 4 and all(o.path == COLD and o.start is not None for o in obs)


@pytest.mark.parametrize("mode", ["shared", "per-job"])
def test_the_replay_runs_a_schedule_both_ways_spark_is_run(spark_cluster, tmp_path, mode):
    """`dsbra bench replay --engine spark`: a small schedule over the grep data set in one
    application (executors held, a Fair pool per job; every job's count is the data's, the CLI
    fails otherwise), or an application per job (cluster mode, dynamic allocation; each one
    succeeded). Every input file of every job is one task of that job in the simulator's
    schema, at a level Spark reported, with the daemon's judged wait."""
    layout, env, _ = spark_cluster
    state = ["--state-dir", str(layout.root)]
    data = ["--size", "8m", "--block-size", "1m", "--path", "/ts/grep", "--replication", "1"]
    done = run_dsbra("bench", "data", *data, *state)
    assert done.returncode == 0, done.stderr[-2000:]
    schedule = tmp_path / "schedule.json"
    done = run_dsbra("bench", "schedule", "--out", str(schedule), "--jobs", "4", "--slots", "6",
                     "--inter-arrival-s", "2", "--seed", "3", "--hot-fraction", "0.25",
                     "--hot-share", "0.7", *data, *state)
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = json.loads(schedule.read_text())["jobs"]
    out = tmp_path / "replay"
    done = run_dsbra("bench", "replay", str(schedule), "--out", str(out), "--engine", "spark",
                     "--spark-mode", mode, "--executors", "4", *state, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["engine"], summary["spark_mode"], summary["executors"]) == ("spark", mode, 4)
    assert summary["failed_jobs"] == []
    if mode == "shared":
        assert summary["matches_mismatched"] == [] and len(summary["matches_by_job"]) == len(jobs)
    else:
        assert sorted(summary["spark_apps"]) == sorted(j["job_id"] for j in jobs)
        assert len(set(summary["spark_apps"].values())) == len(jobs)
    assert summary["jobs"] == len(jobs) and summary["maps"] == sum(len(j["inputs"]) for j in jobs)
    tasks = pq.read_table(out / "tasks.parquet").to_pylist()
    read = sorted((t["job_id"], t["block_id"]) for t in tasks)
    assert read == sorted((j["job_id"], int(p.rsplit("part-", 1)[1])) for j in jobs for p in j["inputs"])
    assert all(t["locality"] in (0, 1, 2) and t["launch_s"] >= t["scheduled_s"] for t in tasks)
    assert all(t["delay_wait_s"] >= 0 and (t["delayed"] or t["delay_wait_s"] == 0) for t in tasks)
    by_job = {r["job_id"]: r for r in pq.read_table(out / "jobs.parquet").to_pylist()}
    assert sorted(by_job) == sorted(j["job_id"] for j in jobs)
    assert all(r["response_s"] > 0 for r in by_job.values())
