"""The arms' order in benchmarks/run_bench_matrix.py (dsbra.bench.sitting.arm_order): rotated each repetition, so no arm always
runs first (the sittings up to docs/benchmark.md 6.6 ran static first every time)."""

from __future__ import annotations

from dsbra.bench.sitting import arm_order, claims_arm, data_seed


def test_each_arm_runs_in_each_place_once_over_as_many_repetitions_as_arms():
    arms = ["static", "dsbra", "dsbra-holdout"]
    orders = [arm_order(arms, rep) for rep in range(7, 10)]  # a sitting from --first-rep 7
    assert all(sorted(order) == sorted(arms) for order in orders)
    for place in range(len(arms)):
        assert sorted(order[place] for order in orders) == sorted(arms)


def test_the_first_repetition_keeps_the_order_given():
    arms = ["static", "dsbra", "scarlett", "oracle"]
    assert arm_order(arms, 1) == arms
    assert arm_order(arms, 2) == ["dsbra", "scarlett", "oracle", "static"]


def test_the_cluster_gets_the_data_set_the_schedule_names_not_the_schedules_own_seed(tmp_path):
    """`dsbra bench schedule --seed 29` over data seed 0 (issue 43): the matrix writes data set
    0, the one the schedule's jobs read, so the cluster does not hold "another data set"."""
    import subprocess
    import sys

    schedule = tmp_path / "schedule.json"
    subprocess.run([sys.executable, "-m", "dsbra", "bench", "schedule", "--out", str(schedule),
                    "--jobs", "5", "--seed", "29", "--slots", "16", "--size", "1g",
                    "--block-size", "64m", "--data-seed", "0"], check=True, capture_output=True)
    assert data_seed(schedule) == 0


def test_a_daemon_arm_reads_spark_where_the_cluster_runs_it_and_only_there(tmp_path):
    """run_bench_matrix.py's daemon arms (sitting.daemon_config): on a cluster up with --spark the
    daemon follows its History Server and the NameNode's audit log (`--engine spark`); on one
    without, Spark is off rather than polled for nothing."""
    from dsbra.bench.sitting import daemon_config
    from dsbra.daemon.config import load_config

    env = {"rm": "http://10.77.0.1:8088", "namenode": "http://10.77.0.1:9870",
           "jhs": "http://10.77.0.1:19888", "spark_history": "http://10.77.0.1:18080",
           "audit_logs": {"namenode": "/s/logs/namenode-audit.log"}}
    cfg = load_config(daemon_config(tmp_path, env, {"policy": {"profile": "adaptive-hold"}}, 30), env={})
    assert (cfg.spark.enabled, cfg.spark.history, cfg.spark.audit_log) == (
        True, "http://10.77.0.1:18080", "/s/logs/namenode-audit.log")
    assert cfg.policy.profile == "adaptive-hold" and cfg.interval_s == 30
    cfg = load_config(daemon_config(tmp_path, env | {"spark_history": None}, {}, 30), env={})
    assert not cfg.spark.enabled
    # an arm's spark section (dsbra-hold-idle0) adds to the cluster's rather than replacing it
    cfg = load_config(daemon_config(tmp_path, env, {"spark": {"min_idle_s": 0.0}}, 30), env={})
    assert (cfg.spark.history, cfg.spark.min_idle_s) == ("http://10.77.0.1:18080", 0.0)


def test_the_reports_claims_arm_is_the_one_chosen_else_the_adaptive_one_else_the_default():
    assert claims_arm(["static", "dsbra", "dsbra-hold", "oracle"]) == "dsbra"
    assert claims_arm(["static", "dsbra-hold", "dsbra-hold-idle0"]) == "dsbra-hold"
    assert claims_arm(["static", "dsbra-hold", "dsbra-hold-idle0"], "dsbra-hold-idle0") == "dsbra-hold-idle0"


def test_a_claims_arm_outside_the_arms_run_is_refused_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "benchmarks" / "run_bench_matrix.py"
    done = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "m"), "--arms", "static",
                           "dsbra-hold", "--claims-arm", "dsbra-hold-idle0"], capture_output=True, text=True)
    assert done.returncode == 2 and "--claims-arm dsbra-hold-idle0 is not among --arms" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "m").exists()
