"""The Spark sitting's simulator set-up (dsbra.sim.fitted.spark_arm_config, issue 69): the
committed choice of the real schedule (benchmarks/choose_spark_schedule.py) is what the
simulator gives today, so a change to the Spark binding that would have chosen otherwise shows."""

from __future__ import annotations

import json
import statistics

import pytest
from repo_scripts import ROOT

from dsbra.report.runs import Run, find_runs
from dsbra.sim import calibration
from dsbra.sim.fitted import simulate_spark_arm, spark_arm_config

CHOICE = ROOT / "benchmarks" / "results" / "spark-choice"
#: the longer schedule, chosen with the binding's contention (choose_spark_schedule.py --contention)
LONG_CHOICE = ROOT / "benchmarks" / "results" / "spark-choice-long"
NETWORK = json.loads((ROOT / "benchmarks" / "results" / "network.json").read_text())


def test_the_task_model_is_the_pilot_static_runs_fit():
    doc = json.loads((CHOICE / "choice.json").read_text())
    runs = [r for rs in find_runs([CHOICE / "pilot-static"]).values() for r in rs]
    assert calibration.task_model(calibration.sitting_maps(runs), calibration.local_read_mbps(NETWORK)) \
        == doc["task_model"]


def test_the_chosen_schedule_simulates_as_committed(tmp_path):
    doc = json.loads((CHOICE / "choice.json").read_text())
    name = doc["choice"]
    committed = doc["candidates"][name]["arms"]
    for arm, means in committed.items():
        runs = [Run.load(d) for d in simulate_spark_arm(
            arm, CHOICE / f"schedule-{name}.json", tmp_path / arm, 4, model=doc["task_model"],
            executors=7, heartbeat_s=0.5, wait_s=3.0)]
        got = statistics.fmean(r.metrics()["mean_response_s"] for r in runs)
        assert got == pytest.approx(means["mean_response_s"], rel=1e-9), arm


def test_the_long_schedule_simulates_as_committed_under_contention(tmp_path):
    doc = json.loads((LONG_CHOICE / "choice.json").read_text())
    name = doc["choice"]
    static = [r for rs in find_runs([ROOT / "benchmarks" / "results" / "bench-spark-hotspot" / "static"]).values()
              for r in rs]
    model, contention, copies = calibration.contended_spark_config(static, NETWORK, 7)
    assert model == doc["task_model"] and doc["config"] == doc["config"] | contention | copies
    for arm, means in doc["candidates"][name]["arms"].items():
        runs = [Run.load(d) for d in simulate_spark_arm(
            arm, LONG_CHOICE / f"schedule-{name}.json", tmp_path / arm, 10, model=model, **doc["config"])]
        got = statistics.fmean(r.metrics()["mean_response_s"] for r in runs)
        assert got == pytest.approx(means["mean_response_s"], rel=1e-9), arm


@pytest.mark.parametrize("arm", ["static", "oracle", "dsbra-hold"])
def test_each_arm_is_the_replays_shared_application(arm):
    cfg = spark_arm_config(arm, {"task_overhead_s": 1.0}, executors=7, heartbeat_s=0.5, wait_s=3.0, seed=0)
    assert (cfg.binding, cfg.spark.app, cfg.spark.executors, cfg.spark.executor_cores) == ("spark", "shared", 7, 1)
    assert (cfg.nodes, cfg.slots_per_node, cfg.am_slots, cfg.delay_threshold_s) == (4, 2, 1.0, 3.0)
    assert cfg.signals == "scheduler" and cfg.max_replication == 4
    assert cfg.policy == {"static": "static", "oracle": "oracle", "dsbra-hold": "dsbra"}[arm]
