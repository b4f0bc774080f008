"""The attribution rule on the validation runs recorded on the real bundled cluster.

``benchmarks/validate_attribution.py`` keeps everything a run's collector gathered (map
observations, every job's containers, the RM's free-memory samples, block locations and, with
``--ground-truth``, every map offer the Fair Scheduler declined, from its TRACE log) in
``benchmarks/results/validate_attribution-<tag>-<mode>.raw.json.gz``. Re-attributing them here
(dsbra.bench.attribution_scoring) guards the issue's validation claims against changes to the rule:
with delay scheduling off M and DT are near zero; with it on they rise and concentrate on the
hot blocks.
"""

from __future__ import annotations

import pytest
from repo_scripts import ROOT

from dsbra.bench import attribution_scoring

RESULTS = ROOT / "benchmarks" / "results"


def _runs(workload: str) -> dict[str, list[dict]]:
    """Summaries of the recorded runs of a workload (tags busy1, busy2, ...) the rule was
    designed on, by mode (the held-out runs have their own test)."""
    out: dict[str, list[dict]] = {"on": [], "off": []}
    for path in sorted(RESULTS.glob(f"validate_attribution-{workload}[0-9]-o[nf]*.raw.json.gz")):
        summary = attribution_scoring.attribute_record(path)
        if summary["tag"] not in attribution_scoring.HELD_OUT:
            out[summary["mode"]].append(summary)
    return out


def _ground_truth_runs(held_out: bool | None = None) -> list[dict]:
    """Summaries of the runs recorded with the scheduler's log (scored: a ``truth`` part),
    the held-out ones, the others, or (None) all."""
    out = []
    for path in sorted(RESULTS.glob("validate_attribution-*-o[nf]*.raw.json.gz")):
        summary = attribution_scoring.attribute_record(path)
        # the Fair Scheduler's runs (the Capacity Scheduler's are scored on their own log)
        if "truth" in summary and summary.get("scheduler") != "capacity" and (
                held_out is None or (summary["tag"] in attribution_scoring.HELD_OUT) == held_out):
            out.append(summary)
    return out


def _sum(runs: list[dict], part: str, key: str) -> float:
    return sum(r[part][key] for r in runs)


@pytest.mark.parametrize("workload", ["busy", "light"])
def test_delay_scheduling_off_measures_near_zero_and_on_rises_on_hot_blocks(workload):
    runs = _runs(workload)
    assert runs["on"] and runs["off"], f"the recorded {workload} runs are missing"
    on, off = runs["on"], runs["off"]
    assert _sum(off, "all", "M") <= 0.05 * _sum(off, "all", "N")  # near zero
    assert _sum(on, "all", "M") > _sum(off, "all", "M")
    assert _sum(on, "all", "DT_s") > _sum(off, "all", "DT_s")
    hot_per_block = _sum(on, "hot", "DT_s") / _sum(on, "hot", "blocks")
    cold_per_block = _sum(on, "cold", "DT_s") / _sum(on, "cold", "blocks")
    assert hot_per_block > cold_per_block  # DT concentrates on the hot blocks


def test_the_scheduler_declines_no_map_offer_without_delay_scheduling():
    """Checks the ground truth itself: with delay scheduling off, no declined map offer."""
    recorded = [r["truth"] for r in _ground_truth_runs() if r["mode"] == "off"]
    assert recorded, "the recorded ground-truth runs are missing"
    for truth in recorded:
        assert truth["map_declines"] == 0 and truth["M_true"] == 0


def test_the_tasks_the_rule_flags_were_truly_delayed_by_the_scheduler():
    """docs/metrics.md: against the Fair Scheduler's own log, on the runs it was designed on
    (busy4-busy7, light1-light3), the rule flags 114 tasks, 113 of them truly delayed (one in
    light1 is not), finds 113 of the 182 truly delayed tasks, and flags nothing with delay
    scheduling off."""
    runs = _ground_truth_runs(held_out=False)
    scored = [r["truth"] for r in runs if r["mode"] == "on"]
    assert len(scored) >= 7, "the recorded ground-truth runs are missing"
    assert sum(t["M_rule"] for t in scored) > 0
    for truth in scored:
        assert truth["M_rule"] - truth["both"] <= 1
    both = sum(t["both"] for t in scored)
    assert both >= 0.98 * sum(t["M_rule"] for t in scored)
    assert both >= 0.6 * sum(t["M_true"] for t in scored)
    assert all(r["truth"]["M_rule"] == 0 for r in runs if r["mode"] == "off")


def test_delay_scheduling_off_flags_nothing_even_under_load():
    """docs/metrics.md: all 11 recorded runs with delay scheduling off the rule was designed on
    measure M = 0 and DT = 0, busy6 (recorded beside another cluster's load, allocation ->
    launch lags up to 4.6 s) included: the measured lead, not a fixed grace_s, keeps
    allocated-but-not-launched containers from passing for room."""
    off = [attribution_scoring.attribute_record(p)
           for p in sorted(RESULTS.glob("validate_attribution-*-off.raw.json.gz"))]
    off = [r for r in off if r["tag"] not in attribution_scoring.HELD_OUT
           and r.get("scheduler") != "capacity"]
    assert len(off) >= 11, "the recorded runs are missing"
    for r in off:
        assert r["all"]["M"] == 0 and r["all"]["DT_s"] == 0, r["tag"]


def test_the_rule_on_runs_recorded_after_it_was_frozen():
    """Issue 9, on the runs recorded after the rule was frozen (busy8, light4; HELD_OUT in the
    script): recall >= 50% at precision >= 0.8, the maps it flags with delay scheduling off
    counted as false (measured: precision 1.0, 25 of 25, recall 0.625, nothing flagged off)."""
    runs = _ground_truth_runs(held_out=True)
    on = [r["truth"] for r in runs if r["mode"] == "on"]
    off = [r["truth"] for r in runs if r["mode"] == "off"]
    assert len(on) >= 2 and len(off) >= 2, "the held-out ground-truth runs are missing"
    both = sum(t["both"] for t in on)
    flagged = sum(t["M_rule"] for t in on) + sum(t["M_rule"] for t in off)
    assert both >= 0.8 * flagged
    assert both >= 0.5 * sum(t["M_true"] for t in on)


def test_the_capacity_scheduler_rule_on_runs_recorded_after_it_was_frozen():
    """Issue 22, against the Capacity Scheduler's own DEBUG log: recall >= 50% at precision
    >= 0.8, the maps flagged with delay scheduling off counted as false, and nothing flagged
    off (measured: CAPACITY_MEASURED in docs/metrics.md)."""
    runs = [attribution_scoring.attribute_record(p) for tag in attribution_scoring.CAPACITY_FROZEN
            for p in sorted(RESULTS.glob(f"validate_attribution-{tag}-o[nf]*.raw.json.gz"))]
    on = [r for r in runs if r["mode"] == "on"]
    off = [r for r in runs if r["mode"] == "off"]
    assert len(on) == len(off) == len(attribution_scoring.CAPACITY_FROZEN), "the capacity runs are missing"
    assert all(r["scheduler"] == "capacity" for r in runs)
    both = sum(r["truth"]["both"] for r in on)
    flagged = sum(r["truth"]["M_rule"] for r in runs)
    assert flagged > 0 and both >= 0.8 * flagged
    assert both >= 0.5 * sum(r["truth"]["M_true"] for r in on)
    assert all(r["all"]["M"] == 0 and r["all"]["DT_s"] == 0 for r in off)
