"""The switchback design (issue 45): its periods and their order, the estimate over blocks of
an on and an off period, its minimum, and the simulator running the policy on and off."""

from __future__ import annotations

import numpy as np
import pytest

from dsbra.bench.designs import CHURNING_POLICY, GUARD_CLUSTER, no_hot_spots
from dsbra.errors import ConfigError, InputError
from dsbra.experiment.config import ExperimentConfig
from dsbra.experiment.design import OFF, ON, Switchback
from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.experiment.switchback import MIN_PAIRS, estimate, job_exposure, period_means, text


def test_periods_come_in_blocks_of_one_on_and_one_off_drawn_from_the_seed():
    sb = Switchback(300, seed=7, start_ms=10_000, burn_in_s=60)
    assert list(sb.period([0, 9_999, 10_000, 309_999, 310_000])) == [-1, -1, 0, 0, 1]
    on = sb.is_on(np.arange(200))
    assert (on[0::2] != on[1::2]).all()  # each block one on, one off
    firsts = on[0::2]
    assert 30 < firsts.sum() < 70  # the order is drawn per block, not fixed
    assert (Switchback(300, seed=7).is_on(np.arange(200)) == on).all()  # the seed decides
    assert (Switchback(300, seed=8).is_on(np.arange(200)) != on).any()
    assert sb.arm_at(0) == ON  # before the start: no experiment
    assert sb.arm_at(10_000) == (ON if on[0] else OFF)
    assert list(sb.in_burn_in([0, 10_000, 69_999, 70_000, 310_000])) == [True, True, True, False, True]


def test_bad_periods_are_refused():
    with pytest.raises(InputError, match="period"):
        Switchback(0)
    with pytest.raises(InputError, match="burn-in"):
        Switchback(60, burn_in_s=60)


def _table(sb: Switchback, blocks: int, on_response: float, off_response: float, seed: int = 0):
    """Jobs every 10 s for ``blocks`` blocks, response drawn around each arm's mean."""
    rng = np.random.default_rng(seed)
    submit = np.arange(0, blocks * 2 * sb.period_s * 1000, 10_000, dtype=np.int64)
    on = sb.is_on(sb.period(submit))
    response = np.where(on, on_response, off_response) * rng.uniform(0.9, 1.1, len(submit))
    local = np.where(on, 0.8, 0.6)
    return period_means(sb, job_submit_ms=submit, job_response_s=response, map_launch_ms=submit,
                        map_node_local=local, map_delay_wait_s=np.where(on, 1.0, 2.0),
                        map_s=np.where(on, 10.0, np.nan))


def test_the_estimate_pairs_the_periods_of_each_block():
    sb = Switchback(300, seed=1, burn_in_s=60)
    table = _table(sb, 6, on_response=90.0, off_response=100.0)
    assert len(table["period"]) == 12 and table["jobs"].sum() == 12 * 24  # burn-in: 6 of 30 left out
    out = estimate(table)
    r = out["response"]
    assert r["pairs"] == 6 and r["diff"] == pytest.approx(-0.1, abs=0.02)
    assert r["ci95"][1] < 0 and "faster" in out["verdict"]
    assert out["node_locality"]["diff"] == pytest.approx(0.2)
    assert out["delay_wait_s"]["diff"] == pytest.approx(-1.0)
    # the off periods' maps never finished: no pair has a map time
    assert out["map_s"]["pairs"] == 0 and out["map_s"]["ci95"] is None


def test_no_interval_below_the_minimum_of_blocks():
    sb = Switchback(300, seed=1)
    out = estimate(_table(sb, MIN_PAIRS - 1, 90.0, 100.0))
    assert out["response"]["pairs"] == MIN_PAIRS - 1
    assert out["response"]["ci95"] is None and out["response"]["more_pairs_needed"] == 1
    assert out["verdict"].startswith("too few blocks") and "1 more" in out["verdict"]


def test_an_effect_too_small_for_the_blocks_says_how_many_more():
    sb = Switchback(300, seed=1)
    out = estimate(_table(sb, 4, 99.0, 100.0))
    lo, hi = out["response"]["ci95"]
    assert lo < 0 < hi and out["response"]["more_pairs_needed"] >= 1
    assert "no difference shown" in out["verdict"]


CLUSTER = dict(nodes=8, slots_per_node=2, racks=2, replication=2, block_size_mb=64,
               task_overhead_s=5.0, read_mbps_local=10.0, read_mbps_rack=5.0,
               read_mbps_remote=2.5, interval_s=20.0)
WORKLOAD = WorkloadSpec(jobs=150, inter_arrival_s=4.0, hot_fraction=0.05, hot_share=0.8,
                        dataset_gb=20.0, bin_scale=0.05)


def switchback(period_s: float, burn_in_s: float = 0.0, **kw) -> ExperimentConfig:
    return ExperimentConfig(design="switchback", period_s=period_s, burn_in_s=burn_in_s, **kw)


def test_the_simulator_copies_only_in_on_periods_and_lowers_to_base_in_off_ones():
    period = 120.0
    res = simulate(SimConfig(**CLUSTER, policy="dsbra", seed=3,
                             experiment=switchback(period, 30.0, seed=2)), WORKLOAD)
    sb = Switchback(period, 2, burn_in_s=30.0)
    arms = [r["arm"] for r in res.rounds]
    assert arms == [sb.arm_at(int(round(r["time_s"] * 1000))) for r in res.rounds]
    assert {ON, OFF} <= set(arms)
    off = [r for r in res.rounds if r["arm"] == OFF]
    on = [r for r in res.rounds if r["arm"] == ON]
    assert all(r["copies_started"] == 0 for r in off)
    assert sum(r["copies_started"] for r in on) > 0
    # an off round ends with nothing above base (a copy that lands later goes at the next)
    assert all(r["extra_storage"] == 0 for r in off)
    # and the first off round after an on round that copied lowers what it raised
    firsts = [b for a, b in zip(res.rounds, res.rounds[1:])
              if a["arm"] == ON and b["arm"] == OFF and a["extra_storage"] > 0]
    assert firsts and all(r["removed"] > 0 for r in firsts)


def test_a_switchback_needs_a_policy_and_no_holdout():
    with pytest.raises(ConfigError, match="turns a policy on and off"):
        SimConfig(**CLUSTER, policy="static", experiment=switchback(60)).validated()
    with pytest.raises(ConfigError, match="not both"):
        SimConfig(**CLUSTER, policy="dsbra", experiment=switchback(60, holdout=0.5)).validated()
    with pytest.raises(ConfigError, match="burn_in_s"):
        SimConfig(**CLUSTER, policy="dsbra", experiment=switchback(60, 60)).validated()


@pytest.mark.parametrize("copies", [{"copy_streams": 0}, {"copy_streams": 2, "copy_mbps": 10.0}],
                         ids=["free copies", "copies as DataNode traffic"])
def test_the_guard_does_not_stop_the_default_policy_without_hot_spots(copies):
    """dsbra's default on a workload without hot spots (uniform reads), with the guard on
    over a switchback long enough for its interval: the guard reads its estimate (response
    and map time) every new period and never stops the policy, whether its copies cost the
    maps nothing or share the DataNodes' disks with them."""
    from dsbra.bench.designs import switchback_read_out

    workload = WorkloadSpec(jobs=150, inter_arrival_s=4.0, hot_fraction=0.0,
                            dataset_gb=20.0, bin_scale=0.05)
    cfg = SimConfig(**CLUSTER | copies, policy="dsbra", seed=4,
                    experiment=switchback(60.0, 10.0, seed=1, guard=True, guard_margin=0.05))
    res = simulate(cfg, workload)
    assert {r["arm"] for r in res.rounds} == {ON, OFF}
    assert sum(r["copies_started"] for r in res.rounds) > 0  # it did copy
    assert not any(r["paused"] for r in res.rounds)
    final = switchback_read_out(res, Switchback(60.0, 1, burn_in_s=10.0))
    assert final["response"]["ci95"] is not None  # enough blocks for the guard to judge


def test_the_guard_needs_a_switchback_in_the_simulator_too():
    with pytest.raises(ConfigError, match="experiment.guard reads the switchback's estimate"):
        SimConfig(**CLUSTER, policy="dsbra",
                  experiment=ExperimentConfig(guard=True, guard_margin=0.05)).validated()


def test_the_guard_judges_only_blocks_a_period_old():
    """Only finished jobs are recorded: a block that just ended holds its short jobs and not
    yet its long ones, so the guard reads the blocks that ended a period before its look."""
    from dsbra.experiment.switchback import settled

    sb = Switchback(300, seed=1, burn_in_s=60)
    table = _table(sb, 6, on_response=90.0, off_response=100.0)
    now = 12 * 300_000  # the end of block 5
    kept = settled(table, sb, now)
    assert list(kept["period"]) == list(range(10))  # block 5 ended just now: not yet
    assert list(settled(table, sb, now + 300_000)["period"]) == list(range(12))


def test_the_guard_stops_on_slower_maps_when_the_response_shows_nothing():
    """Jobs as fast in both arms, maps 30% slower with the policy on: the response clause
    holds, the map-time clause fires and says so; maps 2% slower (within the margin) do not."""
    from dsbra.experiment.switchback import guard_reason

    sb = Switchback(300, seed=1, burn_in_s=60)
    rng = np.random.default_rng(3)
    submit = np.arange(0, 6 * 2 * 300_000, 10_000, dtype=np.int64)
    on = sb.is_on(sb.period(submit))

    def read_out(slower: float) -> dict:
        return estimate(period_means(
            sb, job_submit_ms=submit, job_response_s=100.0 * rng.uniform(0.9, 1.1, len(submit)),
            map_launch_ms=submit, map_s=np.where(on, 10.0 * (1 + slower), 10.0)
            * rng.uniform(0.95, 1.05, len(submit))))

    harmful = read_out(0.3)
    assert harmful["response"]["ci99"][0] < 0.05 < harmful["map_s"]["relative_ci99"][0]
    assert harmful["map_s"]["relative"] == pytest.approx(0.3, abs=0.03)
    reason = guard_reason(harmful, 0.05)
    assert reason.startswith("maps slower with the policy on: mean map time +")
    assert "over 6 blocks, beyond the guard's margin of 5%" in reason
    assert guard_reason(read_out(0.02), 0.05) is None


NO_HOT_SPOTS = no_hot_spots(300)


def test_copies_as_datanode_traffic_let_a_churning_policy_slow_the_jobs():
    """With copies sent two at a time per DataNode (HDFS's max-streams default) and sharing
    the disks of their source and target with the maps there, the churning policy makes the
    jobs more than twice as slow as static; with copies that cost the maps nothing, far less
    (what it costs then is the YARN trade, not the copies)."""
    traffic = dict(GUARD_CLUSTER, seed=4)  # two streams a sender
    static = simulate(SimConfig(**traffic, policy="static"), NO_HOT_SPOTS).summary
    costly = simulate(SimConfig(**traffic, policy="dsbra", policy_params=CHURNING_POLICY),
                      NO_HOT_SPOTS)
    free = simulate(SimConfig(**traffic | {"copy_streams": 0}, policy="dsbra",
                              policy_params=CHURNING_POLICY), NO_HOT_SPOTS)
    assert sum(r["copies_started"] for r in costly.rounds) > 1000
    assert costly.summary["mean_response_s"] > 2 * static["mean_response_s"]
    assert free.summary["mean_response_s"] < 1.5 * static["mean_response_s"]


def test_the_guard_stops_a_churning_policy_by_its_maps_at_its_first_look():
    """The churning policy, its copies DataNode traffic, under a switchback of 2-minute
    periods with the guard: the guard pauses it at its first look with four settled blocks
    (20 minutes in), by the map-time clause: the jobs finished by then do not show the harm."""
    from dsbra.experiment.switchback import judge_finished_jobs

    cfg = SimConfig(**GUARD_CLUSTER, seed=4, policy="dsbra", policy_params=CHURNING_POLICY,
                    experiment=switchback(120.0, 20.0, seed=4, guard=True, guard_margin=0.05))
    res = simulate(cfg, NO_HOT_SPOTS)
    paused = [r["time_s"] for r in res.rounds if r["paused"]]
    # it looks at each block's end, at blocks that ended a period before: at 960 s the fourth
    # block has just ended, at 1200 s (the fifth's end) four are settled
    assert paused and paused[0] == pytest.approx(5 * 2 * 120.0, abs=cfg.interval_s)
    sb, t = Switchback(120.0, 4, burn_in_s=20.0), paused[0]
    finish = np.asarray(res.jobs["finish_s"], float)
    assert judge_finished_jobs(sb, res.jobs["submit_s"], finish, t, 0.05) is None
    assert judge_finished_jobs(sb, res.jobs["submit_s"], finish, t, 0.05, res.tasks["launch_s"],
                               res.tasks["finish_s"]).startswith("maps slower with the policy on")


def test_copies_wait_for_a_stream_and_an_off_period_drops_the_waiting_ones():
    """One stream per sender: the copies land over time, not at once, so less is stored above
    base after the first round that copied than without streams; every off round ends with
    nothing above base and, once the copies already running have landed, nothing copied."""
    cfg = dict(GUARD_CLUSTER, seed=4, policy="dsbra", policy_params=CHURNING_POLICY)
    unlimited = simulate(SimConfig(**cfg | {"copy_streams": 0}), NO_HOT_SPOTS).rounds
    one = simulate(SimConfig(**cfg | {"copy_streams": 1}), NO_HOT_SPOTS).rounds
    first = next(i for i, r in enumerate(one) if r["copies_started"])
    assert unlimited[first]["copies_started"] == one[first]["copies_started"]
    assert 0 < one[first + 1]["extra_storage"] < unlimited[first + 1]["extra_storage"]
    sb = simulate(SimConfig(**cfg | {"copy_streams": 1}, experiment=switchback(120.0, 20.0, seed=1)),
                  NO_HOT_SPOTS).rounds
    off = [i for i, r in enumerate(sb) if r["arm"] == OFF]
    assert off and all(sb[i]["extra_storage"] == 0 and sb[i]["copies_started"] == 0 for i in off)
    # the round after two off rounds: a copy running at the switch (6.4 s) has landed and been
    # lowered, and none waiting started since
    settled = [i for i in off if i >= 2 and sb[i - 1]["arm"] == sb[i - 2]["arm"] == OFF]
    assert settled and all(sb[i]["removed"] == 0 for i in settled)


def test_a_jobs_exposure_is_the_share_of_its_maps_launched_with_the_policy_on():
    sb = Switchback(100, seed=1)
    on_period = 0 if sb.on_first(0) else 1
    on_ms, off_ms = on_period * 100_000 + 5_000, (1 - on_period) * 100_000 + 5_000
    exposure = job_exposure(sb, ["a", "b", "c", "gone"], ["a", "a", "b", "b", "b", "c", "c"],
                            [on_ms, on_ms, on_ms, off_ms, off_ms, -1_000, off_ms])
    # c's first map launched before the experiment began, when the policy acted
    assert exposure[:3].tolist() == pytest.approx([1.0, 1 / 3, 0.5])
    assert np.isnan(exposure[3])  # no map of it known


def test_the_contrast_says_when_jobs_ran_in_the_other_arms_periods():
    """Jobs whose maps ran a quarter in the other arm's periods: the contrast is 0.5 and the
    read-out says the periods are short for these jobs; jobs that ran in their own period's
    arm have a contrast of 1 and no such line."""
    sb = Switchback(300, seed=1, burn_in_s=60)
    submit = np.arange(0, 6 * 2 * 300_000, 10_000, dtype=np.int64)
    on = sb.is_on(sb.period(submit))
    response = np.where(on, 90.0, 100.0)

    def read(exposure):
        out = estimate(period_means(sb, job_submit_ms=submit, job_response_s=response,
                                    job_exposure=exposure))
        return out, text(out | {"dirs": ["x"], "jobs": len(submit), "maps": 0})

    out, shown = read(np.where(on, 0.75, 0.25))
    assert out["response"]["contrast"] == pytest.approx(0.5)
    assert "periods short for these jobs" in shown and "contrast       0.5" in shown
    out, shown = read(on.astype(float))
    assert out["response"]["contrast"] == 1.0 and "periods short" not in shown
    # without exposures there is no contrast
    assert estimate(_table(sb, 6, 90.0, 100.0))["response"]["contrast"] is None
