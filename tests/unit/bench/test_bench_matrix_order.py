"""The arms' order in benchmarks/run_bench_matrix.py: rotated each repetition, so no arm always
runs first (the sittings up to docs/benchmark.md 6.6 ran static first every time)."""

from __future__ import annotations

from repo_scripts import load_script

arm_order = load_script("benchmarks/run_bench_matrix.py").arm_order


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
