"""The pairing benchmarks/first_map_wait.py reports (dsbra.bench.analysis): each arm's stage
medians with the baseline's, by repetition, on a committed sitting's stages (docs/benchmark.md
6.8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsbra.errors import InputError

from dsbra.bench.analysis import STAGES, most_ams_at_once, paired_stages
from dsbra.stats import t_interval

ROWS = json.loads((Path(__file__).parents[3] / "benchmarks/results/bench-hotspot-long-oracle/first-map-wait.json")
                  .read_text())["runs"]


def test_each_arm_is_paired_with_the_baseline_by_repetition_stage_by_stage():
    paired = paired_stages(ROWS, "static-amshare0.75")
    # the warm-up's one run has no repetition of the baseline's to pair with
    assert sorted(paired) == ["dsbra-amshare0.75", "oracle-amshare0.75"]
    oracle = paired["oracle-amshare0.75"]
    assert oracle["pairs"] == 3
    for stage in (*STAGES, "total"):
        diffs = [ROWS[f"oracle-amshare0.75/rep{r}"][stage]["median_s"]
                 - ROWS[f"static-amshare0.75/rep{r}"][stage]["median_s"] for r in (5, 6, 7)]
        assert oracle[stage] == [round(x, 2) for x in t_interval(diffs)]
        assert oracle[stage][1] <= oracle[stage][0] <= oracle[stage][2]


def test_an_unknown_baseline_names_the_arms_there_are():
    with pytest.raises(InputError, match="--baseline static: no such arm among dsbra-amshare0.75, "
                                         "oracle-amshare0.75, static-amshare0.75, warm-up"):
        paired_stages(ROWS, "static")


def test_most_ams_at_once_counts_overlapping_am_lifetimes_an_end_before_a_start():
    apps = [{"launchTime": 0, "finishedTime": 10}, {"launchTime": 5, "finishedTime": 20},
            {"launchTime": 10, "finishedTime": 30}, {"launchTime": 12, "finishedTime": 13}]
    # at 10 the first ends as the third starts: never 4 at once; 12-13: 3
    assert most_ams_at_once(apps) == 3
    assert most_ams_at_once([]) == 0
