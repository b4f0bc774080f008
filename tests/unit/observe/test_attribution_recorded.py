"""The attribution rule on the validation runs recorded on the real bundled cluster.

``benchmarks/validate_attribution.py`` keeps everything a run's collector gathered (map
observations, every job's containers, the RM's free-memory samples, block locations and, with
``--ground-truth``, every map offer the Fair Scheduler declined, from its TRACE log) in
``benchmarks/results/validate_attribution-<tag>-<mode>.raw.json.gz``. Re-attributing them here
guards the issue's validation claims against changes to the rule: with delay scheduling off M
and DT are near zero; with it on they rise and concentrate on the hot blocks.
"""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "benchmarks" / "results"


def _attribute_record():
    spec = importlib.util.spec_from_file_location("validate_attribution",
                                                  ROOT / "benchmarks" / "validate_attribution.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.attribute_record


def _runs(workload: str) -> dict[str, list[dict]]:
    """Summaries of the recorded runs of a workload (tags busy1, busy2, ...), by mode."""
    attribute_record = _attribute_record()
    out: dict[str, list[dict]] = {"on": [], "off": []}
    for path in sorted(RESULTS.glob(f"validate_attribution-{workload}[0-9]-o[nf]*.raw.json.gz")):
        summary = attribute_record(path)
        out[summary["mode"]].append(summary)
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
    attribute_record = _attribute_record()
    recorded = [p for p in sorted(RESULTS.glob("validate_attribution-*-off.raw.json.gz"))
                if '"allocations"' in gzip.open(p, "rt").read()]
    assert recorded, "the recorded ground-truth runs are missing"
    for path in recorded:
        truth = attribute_record(path)["truth"]
        assert truth["map_declines"] == 0 and truth["M_true"] == 0


def test_the_tasks_the_rule_flags_were_truly_delayed_by_the_scheduler():
    """docs/metrics.md: against the Fair Scheduler's own log, the rule flags 69 tasks in the 4
    runs with ground truth, 68 of them truly delayed (one in light1 is not), and finds 68 of
    the 100 truly delayed tasks (issue 9: recall >= 50% at precision >= 0.8)."""
    attribute_record = _attribute_record()
    scored = [attribute_record(p)["truth"]
              for p in sorted(RESULTS.glob("validate_attribution-*-on.raw.json.gz"))
              if '"allocations"' in gzip.open(p, "rt").read()]
    assert scored, "the recorded ground-truth runs are missing"
    assert sum(t["M_rule"] for t in scored) > 0
    for truth in scored:
        assert truth["M_rule"] - truth["both"] <= 1
    both = sum(t["both"] for t in scored)
    assert both >= 0.98 * sum(t["M_rule"] for t in scored)
    assert both >= 0.5 * sum(t["M_true"] for t in scored)
