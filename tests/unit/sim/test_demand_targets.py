"""Issue 68's targets on paired runs (dsbra.bench.demand_targets), on a tiny hand-made set: a
rule faster than static on one setup and slower on every seed of another, over the storage
target on the first."""

from __future__ import annotations

import pytest

from dsbra.bench.demand_targets import markdown_table, matrix_rows, target_rows, verdicts


def run(setup, variant, seed, response, locality=80.0, storage=0.0):
    return {"setup": setup, "variant": variant, "seed": seed, "mean_response_s": response,
            "node_locality": locality, "extra_storage_mean": storage}


ROWS = [run(setup, v, seed, base * factor + 0.1 * seed, locality, storage)
        for setup, base, hold, demand, storage in (("small", 10.0, 1.02, 0.95, 6.0),
                                                   ("large", 20.0, 1.00, 1.10, 1.0))
        for seed in range(3)
        for v, factor, locality, storage in (("static", 1.0, 80.0, 0.0),
                                             ("dsbra-hold", hold, 79.0, 2.0),
                                             ("dsbra-demand", demand, 81.0, storage))]


def test_each_variant_is_paired_against_static_and_the_default_per_setup():
    table = {(t["setup"], t["variant"]): t for t in target_rows(ROWS)}
    assert set(table) == {(s, v) for s in ("small", "large") for v in ("dsbra-hold", "dsbra-demand")}
    faster = table[("small", "dsbra-demand")]
    assert faster["response_vs_static_pct"][0] == pytest.approx(
        sum(100 * ((9.5 + 0.1 * s) / (10 + 0.1 * s) - 1) for s in range(3)) / 3)
    assert faster["response_vs_default_pct"][2] < 0
    assert faster["node_locality_vs_static_points"] == pytest.approx((1.0, 1.0, 1.0))
    assert faster["not_worse_than_static"] and not faster["storage_within_target"]
    slower = table[("large", "dsbra-demand")]
    assert slower["response_vs_static_pct"][1] > 0 and not slower["not_worse_than_static"]
    assert slower["storage_within_target"]
    assert table[("small", "dsbra-hold")]["response_vs_default_pct"] is None


def test_a_variant_meets_the_targets_only_on_every_setup():
    assert verdicts(target_rows(ROWS)) == {
        "dsbra-hold": {"meets_every_target": False, "worse_than_static_on": ["small"],
                       "storage_over_target_on": []},
        "dsbra-demand": {"meets_every_target": False, "worse_than_static_on": ["large"],
                         "storage_over_target_on": ["small"]}}


def test_the_table_marks_a_missed_target():
    lines = markdown_table(target_rows(ROWS))
    assert len(lines) == 2 + 4
    assert lines[-1].startswith("| large | dsbra-demand | 3 | +9.95 [")
    assert lines[-1].endswith("| 1.00 | **no** | yes |")


def test_matrix_rows_take_the_setups_asked_for_in_percent():
    runs = [{"setup": s, "variant": "static", "seed": 100, "summary": {
        "mean_response_s": 5.0, "node_locality": 0.9, "extra_storage_mean": 0.02}}
        for s in ("paper", "hotspot-stress")]
    assert matrix_rows(runs, ("paper",)) == [run("paper", "static", 100, 5.0, 90.0, 2.0)]
