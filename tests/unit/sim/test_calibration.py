"""The simulator's calibration (dsbra.sim.calibration) on the committed real sittings: it recovers
the committed fits exactly, the ones the simulator reads (dsbra.sim.fitted.load_fit: the
sittings' sim-vs-real.json, written by benchmarks/compare_sim_real.py) and the task model's
report on the recorded maps (benchmarks/results/task-model-fit.json, benchmarks/fit_task_model.py)."""

from __future__ import annotations

import json
import statistics

import pytest
from repo_scripts import ROOT

from dsbra.sim import calibration
from dsbra.sim.fitted import INTERVAL_S, load_fit
from dsbra.stats import mean_or_none

RESULTS = ROOT / "benchmarks" / "results"
NETWORK = json.loads((RESULTS / "network.json").read_text())
AMSHARE = "-amshare0.75"
#: the sittings whose fit the simulator's scripts and tests read (--fit, FIT), with their arms'
#: suffix and the repetitions the committed fit was made on (None: all of them): 6.14's
#: sim-vs-real.json was fitted on its first three pairs, before pairs 4-6 were run
SITTINGS = [("bench-fb2009-40-quiet", "", None), ("bench-fb2009-40-loaded", "", None),
            ("bench-hotspot-long-grants", AMSHARE, None),
            ("bench-hotspot-long-am-heartbeat", AMSHARE, None),
            ("bench-hotspot-hold", AMSHARE, {"rep1", "rep2", "rep3"})]


def committed(sitting: str) -> dict:
    return json.loads((RESULTS / sitting / "sim-vs-real.json").read_text())


def real_runs(sitting: str, suffix: str, reps) -> dict:
    real = calibration.sitting_runs(RESULTS / sitting, suffix)
    return {arm: [r for r in runs if reps is None or r.path.name in reps] for arm, runs in real.items()}


@pytest.mark.parametrize(("sitting", "suffix", "reps"), SITTINGS, ids=[s[0] for s in SITTINGS])
def test_the_task_model_and_the_am_start_up_are_the_committed_fits(sitting, suffix, reps):
    real = real_runs(sitting, suffix, reps)
    doc = committed(sitting)
    maps = calibration.sitting_maps([r for runs in real.values() for r in runs])
    assert calibration.task_model(maps, calibration.local_read_mbps(NETWORK)) == doc["task_model"]
    assert calibration.first_job_gap_s(real) == doc["am"]["first_job_gap_s"]
    # what the simulator takes from it
    fit = load_fit(RESULTS / sitting / "sim-vs-real.json")
    assert fit["model"] == doc["task_model"] and fit["am"]["am_startup_s"] == doc["am"]["am_startup_s"]


def test_the_static_arms_fit_is_the_committed_one(tmp_path):
    """Slots, node heartbeat and AM start-up on bench-hotspot-long-grants (sim_yarn_binding.py's
    and sim_hold_cap.py's default fit), over the heartbeats at the committed slots and AM
    start-up: every point's error, response and wait are the committed grid's, and the best is
    the committed fit."""
    sitting = "bench-hotspot-long-grants"
    doc, real = committed(sitting), real_runs(sitting, AMSHARE, None)
    assert "--seeds 20" in doc["command"] and "--interval-s" not in doc["command"]
    model = calibration.task_model(calibration.sitting_maps([r for runs in real.values() for r in runs]),
                                   calibration.local_read_mbps(NETWORK))
    am = {"am_slots": 1.0, "max_am_share": 0.75, "am_startup_s": calibration.first_job_gap_s(real)}
    real_response = statistics.fmean(mean_or_none(r.jobs["response_s"]) for r in real["static"])
    real_wait = calibration.mean_wait(real["static"])
    assert (round(real_response, 2), round(real_wait, 2)) == (
        doc["fit_on_static"]["real_response_s"], doc["fit_on_static"]["real_mean_map_wait_s"])
    slots, startup = doc["slots_per_node"], doc["am"]["am_startup_s"]
    fit = calibration.fit_static(RESULTS / sitting / "schedule.json", model, am, real_response, real_wait,
                                 (slots,), (startup,), 20, tmp_path, INTERVAL_S, doc["binding"])
    grid = {(g["slots"], g["heartbeat_s"], g["am_startup_s"]): (g["error"], g["response_s"], g["wait_s"])
            for g in doc["fit_on_static"]["grid"]}
    assert {k: (round(e, 3), round(r, 2), round(w, 2)) for k, (e, r, w) in fit.items()} == \
        {k: grid[k] for k in fit}
    assert calibration.best(fit) == (slots, doc["heartbeat_s"], startup)
    assert len(list(tmp_path.glob(f"s{slots}-hb*/sim/static/seed*"))) == 5 * 20


def test_the_task_models_report_on_the_recorded_maps_is_the_committed_one():
    doc = json.loads((RESULTS / "task-model-fit.json").read_text())
    maps = calibration.recorded_maps([RESULTS / name for name in doc["runs"]])
    model = calibration.task_model(maps, calibration.local_read_mbps(NETWORK))
    assert model == doc["task_model"]
    report = calibration.task_model_report(maps, model)
    assert report == {k: doc[k] for k in report}


def test_a_level_no_slower_than_the_overhead_reads_at_the_level_belows_rate():
    """Rates from the median maps: a rack-local map 2 s beyond the overhead reads 64 MB at 32
    MB/s; no off-rack map reads as a rack-local one; non-local maps no slower than the overhead
    read at the node-local rate."""
    local = 64.0  # MB/s: a node-local 64 MB read takes 1 s
    maps = calibration.Maps({0: [4.0, 5.0, 6.0], 1: [6.0], 2: []}, {0: [64.0] * 3, 1: [64.0], 2: []})
    m = calibration.task_model(maps, local)
    assert (m["task_overhead_s"], m["read_mbps_local"], m["read_mbps_rack"], m["read_mbps_remote"]) == \
        (4.0, 64.0, 32.0, 32.0)
    assert m["sources"]["maps"] == {"node": 3, "rack": 1, "off": 0}
    flat = calibration.Maps({0: [5.0], 1: [4.0], 2: [3.5]}, {0: [64.0], 1: [64.0], 2: [64.0]})
    flat = calibration.task_model(flat, local)
    assert (flat["read_mbps_rack"], flat["read_mbps_remote"]) == (64.0, 64.0)


def test_a_node_local_task_quicker_than_the_measured_local_read_costs_nothing_beyond_it():
    """A Spark task in a running executor can read its 64 MB faster than network.json's client
    did (issue 69's sitting: 1.9 s against 32.9 MB/s): the overhead is 0, not negative, and the
    rack rate is then the rack-local task's whole time."""
    maps = calibration.Maps({0: [0.5], 1: [16.0], 2: []}, {0: [64.0], 1: [64.0], 2: []})
    m = calibration.task_model(maps, 64.0)
    assert (m["task_overhead_s"], m["read_mbps_rack"]) == (0.0, 4.0)
