"""The pure part of `dsbra bench replay`: observed maps -> the simulator's job and task tables."""

from __future__ import annotations

import pytest

from dsbra.bench.replay import result_tables, summarize
from dsbra.observe.collector import MapObservation
from dsbra.results_schema import JOB_SCHEMA, TASK_SCHEMA

T0 = 1_000_000


def _obs(job, task, node, locality, launch_s, finish_s, path, hosts=("10.0.0.11",)):
    return MapObservation(job, f"task_{task}", f"attempt_{task}_0", T0 + 5000, T0 + int(launch_s * 1000),
                          None if finish_s is None else T0 + int(finish_s * 1000), node, locality,
                          list(hosts), 1024, path=path)


def test_tables_follow_the_schedule_and_the_schema():
    jobs = [{"job_id": "job0", "bin": 1}, {"job_id": "job1", "bin": 3}, {"job_id": "job2", "bin": 1}]
    hadoop = ["job_1_0001", "job_1_0002", None]  # job2's client never got a job id
    obs = [_obs("job_1_0001", 1, "10.0.0.11", "NODE_LOCAL", 6, 10, "/d/part-00004"),
           _obs("job_1_0002", 2, "10.0.0.12", "RACK_LOCAL", 7, 15, "/d/part-00001"),
           _obs("job_1_0002", 3, "10.0.0.13", None, 8, 12, "/d/part-00002"),  # no locality: by split hosts
           _obs("job_1_0002", 4, "10.0.0.11", "NODE_LOCAL", 9, None, "/d/part-00003"),  # unfinished
           _obs("job_other", 5, "10.0.0.11", "NODE_LOCAL", 9, 11, "/d/part-00003")]  # not ours
    rows = [{"attempt_id": "attempt_2_0", "delay_s": 1.5, "delayed": True}]
    job_t, task_t = result_tables(jobs, hadoop, [0.5, 2.0, 4.0], obs, rows, T0)
    assert job_t.schema.equals(JOB_SCHEMA) and task_t.schema.equals(TASK_SCHEMA)
    j = job_t.to_pylist()
    assert [r["job_id"] for r in j] == ["job0", "job1"]
    assert (j[1]["maps"], j[1]["node_local_maps"], j[1]["rack_local_maps"], j[1]["off_switch_maps"]) == (2, 0, 1, 1)
    assert j[1]["start_s"] == 7 and j[1]["finish_s"] == 15 and j[1]["response_s"] == 13
    assert j[1]["delay_wait_s"] == 1.5
    t = task_t.to_pylist()
    assert [r["block_id"] for r in t] == [4, 1, 2] and [r["locality"] for r in t] == [0, 1, 2]
    assert t[1]["delayed"] and t[1]["wait_s"] == pytest.approx(2.0) and t[0]["scheduled_s"] == 5
    summary = summarize(job_t, task_t, [(0.0, 400, 200), (10.0, 500, 200)])
    assert summary["maps"] == 3 and summary["node_locality"] == pytest.approx(1 / 3, abs=1e-3)
    assert summary["node_locality_by_bin"] == {1: 1.0, 3: 0.0}
    assert summary["median_first_map_wait_s"] == pytest.approx((5.5 + 5.0) / 2)  # submit -> first map launch
    assert summary["extra_storage_mean"] == pytest.approx(1.25) and summary["extra_storage_max"] == 1.5


@pytest.mark.parametrize("value", ["mapreduce.job.ubertask.enable", "=true", " a=b"])
def test_a_job_conf_that_is_not_key_equals_value_is_a_one_line_usage_error(tmp_path, value):
    from click.testing import CliRunner

    from dsbra.cli import cli

    result = CliRunner().invoke(cli, ["bench", "replay", str(tmp_path / "s.json"), "--out", str(tmp_path / "r"),
                                      "--job-conf", value])
    assert result.exit_code == 2 and "is not KEY=VALUE" in result.output
    assert "Traceback" not in result.output


def test_job_conf_is_refused_for_hive_whose_server_sets_the_jobs_properties(tmp_path):
    from click.testing import CliRunner

    from dsbra.cli import cli

    schedule = tmp_path / "s.json"
    made = CliRunner().invoke(cli, ["bench", "schedule", "--out", str(schedule), "--jobs", "2", "--size", "3m",
                                    "--block-size", "1m"])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(cli, ["bench", "replay", str(schedule), "--out", str(tmp_path / "r"),
                                      "--engine", "hive", "--job-conf", "mapreduce.job.ubertask.enable=true"])
    assert result.exit_code == 2 and "--job-conf" in result.output and "HiveServer2" in result.output


def test_cluster_load_takes_its_job_properties_the_same_way(tmp_path):
    """`dsbra cluster load -D` and `bench replay --job-conf` share one KEY=VALUE parser."""
    from click.testing import CliRunner

    from dsbra.cli import cli

    result = CliRunner().invoke(cli, ["cluster", "load", "-D", "=1", "--state-dir", str(tmp_path)])
    assert result.exit_code == 2 and "is not KEY=VALUE" in result.output


def test_stop_daemon_returns_the_cpu_the_process_used_over_its_life(tmp_path):
    """A real child that burns CPU, then waits for SIGTERM and ends cleanly, as `dsbra run`
    does: its CPU comes from the kernel's account of the reaped process."""
    import subprocess
    import sys

    from dsbra.bench.replay import stop_daemon

    ready = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.5: pass\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "while True: time.sleep(1)\n")])
    while not ready.exists():
        assert child.poll() is None
    assert stop_daemon(child) >= 0.5
    assert child.returncode == 0
    assert stop_daemon(None) is None


def test_daemon_cost_counts_the_rounds_of_a_committed_daemon_log():
    import os
    from pathlib import Path

    from dsbra.bench.replay import daemon_cost

    log = (Path(__file__).resolve().parents[3] / "benchmarks/results/bench-hotspot-holdout-static/"
           "dsbra-amshare0.75/rep9/daemon.log")
    assert daemon_cost(2.5, 100.0, log) == {
        "daemon_cpu_s": 2.5, "daemon_rounds": 5, "daemon_cpu_s_per_round": 0.5,
        "daemon_cpu_share": round(2.5 / (100 * os.cpu_count()), 4)}
    assert daemon_cost(None, 100.0, log) == {}


def test_the_daemon_arm_runs_the_daemon_in_its_configs_mode(tmp_path):
    """No --apply: a dry-run config stays a dry run (run_bench_matrix.py's dsbra-dry-run arm
    applied until 2026-11-28 because `bench replay` forced --apply)."""
    import sys

    from dsbra.bench.replay import daemon_command

    cfg = tmp_path / "daemon.yaml"
    assert daemon_command(cfg) == [sys.executable, "-m", "dsbra", "run", "--config", str(cfg)]


@pytest.mark.parametrize(("engine", "value", "error"), [
    ("mapreduce", "spark.locality.wait=10s", "the mapreduce engine runs no Spark"),
    ("spark", "mapreduce.job.ubertask.enable=true", "is not a Spark property"),
    ("spark", "spark.dynamicAllocation.enabled=true", "set by the replay for its --spark-mode"),
    ("spark", "spark.executor.instances=3", "set by the replay for its --spark-mode"),
])
def test_a_spark_conf_the_replay_cannot_take_is_a_one_line_usage_error(tmp_path, engine, value, error):
    from click.testing import CliRunner

    from dsbra.cli import cli

    schedule = tmp_path / "s.json"
    made = CliRunner().invoke(cli, ["bench", "schedule", "--out", str(schedule), "--jobs", "2", "--size", "3m",
                                    "--block-size", "1m"])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(cli, ["bench", "replay", str(schedule), "--out", str(tmp_path / "r"),
                                      "--engine", engine, "--spark-conf", value])
    assert result.exit_code == 2 and error in result.output and "--spark-conf" in result.output
    assert "Traceback" not in result.output


def test_the_spark_conf_follows_the_replays_own_properties_in_both_modes(tmp_path):
    from dsbra.bench.spark_replay import per_job_command, shared_command

    env = {"spark_submit": "/opt/spark/bin/spark-submit", "fs": "hdfs://nn:9000"}
    conf = {"spark.locality.wait": "10s", "spark.locality.wait.rack": "0s"}
    shared = shared_command(env, tmp_path / "plan.json", 7, conf)
    per_job = per_job_command(env, {"job_id": "job3", "inputs": ["/bench/grep/part-00001"]}, 7, conf)
    for cmd in (shared, per_job):
        pairs = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--conf"]
        assert pairs[-2:] == ["spark.locality.wait=10s", "spark.locality.wait.rack=0s"]
        assert not any(p.startswith("spark.locality") for p in pairs[:-2])  # the replay sets none itself
    assert "spark.executor.instances=7" in shared and "spark.dynamicAllocation.maxExecutors=7" in per_job
    assert per_job[-1] == "hdfs://nn:9000/bench/grep/part-00001"
    bare = shared_command(env, tmp_path / "plan.json", 7, {})
    assert len(bare) == len(shared) - 4 and bare[-4:] == shared[-4:]  # the application and its arguments last
