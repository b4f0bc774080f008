"""The switchback's queue adjustment (dsbra.experiment.queue_replay, switchback.queue_adjusted_blocks):
the fair-share replay by hand, its fitted slot overhead, and the adjustment on simulated
switchbacks against the policy's true total effect and on the real cluster's recorded one
(benchmarks/results/bench-hotspot-switchback)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from dsbra.bench.designs import configs, queue_adjusted_read_out, switchback_read_out, true_effect, whole_run
from dsbra.cli import cli
from dsbra.errors import InputError
from dsbra.experiment.config import ExperimentConfig
from dsbra.experiment.queue_replay import (fair_share_replay, job_latency, peak_running,
                                       replayed_response, replayed_worlds, slot_overhead)
from dsbra.experiment.switchback import queue_adjusted, queue_adjusted_blocks, queue_verdict
from dsbra.experiment.design import Switchback
from dsbra.sim.run import simulate

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "benchmarks" / "results" / "bench-hotspot-switchback" / "switchback-amshare0.75"
HOLDOUT = ROOT / "tests" / "fixtures" / "impact" / "daemon-holdout"


def test_a_free_slot_goes_to_the_job_with_fewest_maps_running():
    # two slots; A (three 10 s maps) takes both at 0; B (one 5 s map) arrives at 1 and gets
    # the first slot freed at 10, ahead of A's third map, which gets the second
    response = fair_share_replay([0.0, 1.0], [0, 0, 0, 1], [10.0, 10.0, 10.0, 5.0], slots=2)
    assert response.tolist() == [20.0, 14.0]


def test_a_job_without_maps_answers_in_its_latency_alone():
    response = replayed_response([0.0, 3.0], [0], [4.0], slots=1, latency=(2.0, 1.0))
    assert response.tolist() == [7.0, 3.0]


def test_the_slots_are_the_most_maps_running_at_once_an_end_and_a_start_at_one_instant_not_both():
    assert peak_running([0, 10_000], [10_000, 20_000]) == 1
    assert peak_running([0, 5_000, 6_000], [10_000, 15_000, 7_000]) == 3
    assert peak_running([], []) == 0


def test_the_fitted_overhead_is_the_one_that_made_the_responses():
    rng = np.random.default_rng(7)
    submit = np.sort(rng.uniform(0, 600, 80))
    job = np.repeat(np.arange(80), 6)
    dur = rng.uniform(5, 30, len(job))
    target = replayed_response(submit, job, dur, slots=8, latency=(1.0, 0.5), overhead_s=3.0)
    fitted = slot_overhead(submit, job, dur, 8, float(target.mean()), latency=(1.0, 0.5))
    assert fitted == pytest.approx(3.0, abs=0.01)
    # a run faster than the replay without overhead fits none
    assert slot_overhead(submit, job, dur, 8, 0.0) == 0.0


def test_the_latency_is_the_early_start_and_the_median_end():
    # job 0 started its map 2 s after submission and ended 1 s after it; job 1, 40 s and 3 s
    start, end = job_latency([0.0, 0.0], [13.0, 53.0], [0, 1, -1], [2.0, 40.0, 1.0],
                             [12.0, 50.0, 9.0])
    assert start == pytest.approx(2.0 + 0.05 * 38.0)
    assert end == pytest.approx(2.0)


def test_the_worlds_agree_at_a_ratio_of_one_and_a_ratio_must_be_positive():
    as_run = replayed_response([0.0, 1.0], [0, 0, 1], [10.0, 10.0, 5.0], 1)
    worlds = replayed_worlds([0.0, 1.0], [0, 0, 1], [10.0, 10.0, 5.0], [True, False, True], 1.0, 1)
    assert worlds["always_on"].tolist() == worlds["never_on"].tolist() == as_run.tolist()
    faster = replayed_worlds([0.0, 1.0], [0, 0, 1], [10.0, 10.0, 5.0], [True, False, True], 0.5, 1)
    assert faster["always_on"].mean() < as_run.mean() < faster["never_on"].mean()
    with pytest.raises(ValueError, match="positive"):
        replayed_worlds([0.0], [0], [1.0], [True], 0.0, 1)


def test_the_adjustment_recovers_the_gain_the_shared_queue_hides_from_the_read_out():
    """On the long hot-spot setup at the real schedule's 6 s gap (dsbra's default profile), the
    on-minus-off read-out misses much of the true total effect; the queue-adjusted estimate
    keeps within a third of it, with a narrower interval."""
    truths, read_outs, adjusted, widths = [], [], [], []
    for seed in range(6):
        cfg, spec = configs("hotspot-stress-long", seed, profile="adaptive-hold", inter_arrival_s=6.0)
        truth = true_effect(whole_run(simulate(cfg, spec)), whole_run(
            simulate(dataclasses.replace(cfg, policy="static", policy_params={}), spec)))
        sb = Switchback(300.0, seed, burn_in_s=60.0)
        run = simulate(dataclasses.replace(cfg, experiment=ExperimentConfig(
            design="switchback", period_s=300.0, burn_in_s=60.0, seed=seed)), spec)
        q = queue_adjusted_read_out(run, sb)
        assert q["slots"] == cfg.nodes * cfg.slots_per_node  # inferred from the maps alone
        truths.append(truth["response"])
        read_outs.append(switchback_read_out(run, sb)["response"])
        adjusted.append(q)
        widths.append((q["ci95"][1] - q["ci95"][0], read_outs[-1]["ci95"][1] - read_outs[-1]["ci95"][0]))
    true_mean = np.mean(truths)
    assert true_mean < -0.03
    assert abs(np.mean([q["diff"] for q in adjusted]) - true_mean) < abs(true_mean) / 3
    assert abs(np.mean([r["diff"] for r in read_outs]) - true_mean) > abs(true_mean) / 3
    assert all(q_w < r_w for q_w, r_w in widths)


def test_impact_reads_the_real_switchback_with_its_queue_adjustment():
    result = CliRunner().invoke(cli, ["impact", str(REAL), "--json"])
    assert result.exit_code == 0, result.output
    q = json.loads(result.output)["response_queue_adjusted"]
    assert q["pairs"] == 4 and q["ci95"] is not None and q["ci95"][0] < q["diff"] < q["ci95"][1]
    (replay,) = q["replays"]
    assert replay["slots"] == 13 and replay["slot_overhead_s"] > 0 and replay["map_ratio"] > 0
    text = CliRunner().invoke(cli, ["impact", str(REAL), "--slots", "20"]).output
    assert "queue-adjusted blocks 4" in text and "20 slots" in text
    assert text.splitlines()[-1].startswith("queue-adjusted: ")


def test_slots_are_refused_below_one_and_for_a_holdout():
    low = CliRunner().invoke(cli, ["impact", str(REAL), "--slots", "0"])
    assert low.exit_code == 2 and "--slots" in low.output
    holdout = CliRunner().invoke(cli, ["impact", str(HOLDOUT), "--slots", "4"])
    assert isinstance(holdout.exception, InputError) and "a holdout has none" in str(holdout.exception)


def test_a_run_whose_maps_belong_to_no_recorded_job_says_so_instead_of_an_estimate():
    sb = Switchback(300.0, 0, burn_in_s=0.0)
    submit = np.arange(0, 1_200_000, 100_000)
    values, info = queue_adjusted_blocks(
        sb, job_ids=[f"job_{k}" for k in range(len(submit))], job_submit_ms=submit,
        job_response_s=np.full(len(submit), 30.0),
        map_job_ids=[f"unrecorded_{k}" for k in range(len(submit))], map_launch_ms=submit + 1000,
        map_s=np.full(len(submit), 10.0))
    assert not len(values) and "no recorded map" in info["skipped"]
    assert queue_verdict(queue_adjusted(values) | {"replays": [info]}).startswith(
        "queue-adjusted: none: no recorded map")
