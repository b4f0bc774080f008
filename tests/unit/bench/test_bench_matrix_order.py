"""The arms' order in benchmarks/run_bench_matrix.py: rotated each repetition, so no arm always
runs first (the sittings up to docs/benchmark.md 6.6 ran static first every time)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _matrix():
    spec = importlib.util.spec_from_file_location("run_bench_matrix", ROOT / "benchmarks" / "run_bench_matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_arm_runs_in_each_place_once_over_as_many_repetitions_as_arms():
    arms = ["static", "dsbra", "dsbra-holdout"]
    orders = [_matrix().arm_order(arms, rep) for rep in range(7, 10)]  # a sitting from --first-rep 7
    assert all(sorted(order) == sorted(arms) for order in orders)
    for place in range(len(arms)):
        assert sorted(order[place] for order in orders) == sorted(arms)


def test_the_first_repetition_keeps_the_order_given():
    arms = ["static", "dsbra", "scarlett", "oracle"]
    assert _matrix().arm_order(arms, 1) == arms
    assert _matrix().arm_order(arms, 2) == ["dsbra", "scarlett", "oracle", "static"]
