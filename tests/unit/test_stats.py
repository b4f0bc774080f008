"""dsbra.stats: Student's t from the table, the two t-intervals, Fieller's ratio, the bootstrap
over units, the units, pairs and repetitions a comparison still needs, a repeated measurement's
summary; and the module without scipy (the default install)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as scipy_stats

from dsbra.stats import (bootstrap_ratio_diff, captured_share, fieller_ratio,
                         mean_difference_interval, mean_t_interval, pairs_needed, precision_recall,
                         repeats_summary, reps_to_separate, t95, t_interval, t_quantile, units_needed)


def test_t95_matches_scipy_within_a_thousandth():
    for df in (1, 2, 5, 29, 30, 31, 40, 80, 200, 5000):
        assert t95(df) == pytest.approx(scipy_stats.t.ppf(0.975, df), abs=1e-3)
    with pytest.raises(ValueError):
        t95(0)


def test_mean_t_interval_and_the_pairs_an_interval_needs():
    mean, lo, hi, sd = mean_t_interval([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and sd == pytest.approx(np.std([1, 2, 3, 4], ddof=1))
    assert (lo, hi) == pytest.approx(scipy_stats.t.interval(0.95, 3, loc=2.5, scale=sd / 2),
                                     abs=1e-3)
    assert mean_t_interval([1.0]) is None
    # at this spread the half-width drops below 0.5 with n pairs where t95(n-1)/sqrt(n) < 0.5
    more = pairs_needed(4, 0.5, 1.0)
    n = 4 + more
    assert t95(n - 1) / np.sqrt(n) < 0.5 <= t95(n - 2) / np.sqrt(n - 1)
    assert pairs_needed(4, 0.0, 1.0) is None


def test_t_interval_is_scipys_and_the_tables_within_a_thousandth_of_a_spread():
    values = [1.0, 2.0, 3.0, 4.0]
    mean, lo, hi = t_interval(values)
    sd = float(np.std(values, ddof=1))
    assert (mean, lo, hi) == pytest.approx((2.5, *scipy_stats.t.interval(0.95, 3, loc=2.5, scale=sd / 2)))
    assert mean_t_interval(values)[:3] == pytest.approx((mean, lo, hi), abs=1e-3 * sd / 2)
    assert t_interval([1.0]) is None


def test_two_samples_means_differ_by_welchs_interval_or_one_value_by_a_prediction_interval():
    a, b = [1.0, 2.0, 3.0, 5.0], [2.0, 4.0, 4.5]
    d, lo, hi, df, method = mean_difference_interval(a, b)
    welch = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert method == "welch" and df == pytest.approx(welch.df) and d == pytest.approx(2.75 - 3.5)
    # the quantile at Welch's degrees of freedom rounded down, from the table
    half = t_quantile(int(welch.df)) * (np.var(a, ddof=1) / 4 + np.var(b, ddof=1) / 3) ** 0.5
    assert (lo, hi) == pytest.approx((d - half, d + half))
    d, lo, hi, df, method = mean_difference_interval(a, [4.0])
    half = t_quantile(3) * np.std(a, ddof=1) * (1 + 1 / 4) ** 0.5
    assert method == "prediction" and df == 3 and (lo, hi) == pytest.approx((d - half, d + half))
    assert mean_difference_interval([1.0], b) is None and mean_difference_interval(a, []) is None


def test_reps_to_separate_is_the_paired_t_tests_sample_size():
    # an effect of half a standard deviation: 34 pairs for 80% power at 5%, two-sided (the
    # textbook value, e.g. G*Power's for a paired t-test with d = 0.5)
    assert reps_to_separate([1 - 2 / 2 ** 0.5, 1 + 2 / 2 ** 0.5]) == 34
    assert reps_to_separate([1.0, 1.0]) is None and reps_to_separate([0.5]) is None


def test_the_fieller_bounds_are_where_the_paired_t_test_of_the_ratio_turns_significant():
    # Fieller's set is every ratio r with mean(num - r * den) not separated from 0 by a t-test:
    # so at each bound that test's p-value is exactly 5%, and at the point estimate it is 1
    num = [4.1, 7.9, 2.2, 6.5, 5.0, 3.3]
    den = [8.0, 11.5, 6.1, 12.2, 9.4, 7.7]
    low, high = fieller_ratio(num, den)
    point = statistics.fmean(num) / statistics.fmean(den)
    assert low < point < high
    assert scipy_stats.ttest_1samp([x - point * y for x, y in zip(num, den)], 0).pvalue == pytest.approx(1)
    for bound in (low, high):
        diff = [x - bound * y for x, y in zip(num, den)]
        assert scipy_stats.ttest_1samp(diff, 0).pvalue == pytest.approx(0.05)
    # a denominator its own t-test does not separate from 0: no finite interval holds the ratio
    assert scipy_stats.ttest_1samp([3.0, -2.0, 1.0], 0).pvalue > 0.05
    assert fieller_ratio([1.0, 2.0, 1.5], [3.0, -2.0, 1.0]) == (None, None)


def test_the_bootstrap_resamples_units_and_is_reproducible():
    # five files a group, ten maps each: node-local maps over maps, 0.9 against 0.2
    treated = (np.array([9.0, 8, 10, 9, 9]), np.full(5, 10))
    control = (np.array([2.0, 3, 1, 2, 2]), np.full(5, 10))
    lo, hi = bootstrap_ratio_diff(treated, control)
    assert 0 < lo < 0.7 < hi < 0.9
    assert bootstrap_ratio_diff(treated, control) == (lo, hi)
    # units without a denominator in every resample: no ratio to take a difference of
    assert bootstrap_ratio_diff(treated, (np.zeros(5), np.zeros(5))) is None


def test_units_needed_scale_with_the_square_of_the_interval_to_the_difference():
    assert units_needed(20, 0.1, (-0.1, 0.3)) == 60  # half-width 0.2: 4x the units
    assert units_needed(20, 0.1, (0.05, 0.15)) == 0
    assert units_needed(20, 0.0, (-0.1, 0.1)) is None


def test_a_repeated_measurement_is_its_runs_median_and_range_to_two_decimals():
    assert repeats_summary([3.14159, 1.0, 2.005]) == {"runs": [3.14, 1.0, 2.0], "median": 2.0,
                                                      "min": 1.0, "max": 3.14}


def test_without_scipy_the_tables_serve_and_the_exact_quantile_refuses():
    """The default install has no scipy: the daemon and `dsbra impact` import this module."""
    script = ("import json, sys\nsys.modules['scipy'] = None\n"
              "from dsbra.stats import mean_t_interval, t_interval\n"
              "print(json.dumps(mean_t_interval([1.0, 2.0, 3.0])[:3]))\n"
              "try:\n    t_interval([1.0, 2.0])\nexcept ModuleNotFoundError as exc:\n    print(exc.name)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    interval, missing = done.stdout.splitlines()
    half = 4.303 / 3 ** 0.5  # T95 at 2 degrees of freedom, a spread of 1, 3 values
    assert json.loads(interval) == pytest.approx((2.0, 2.0 - half, 2.0 + half)) and missing == "scipy"


def test_a_captured_share_is_the_oracles_gap_closed_and_none_without_headroom():
    assert captured_share(100.0, 80.0, 90.0) == 0.5
    assert captured_share(100.0, 80.0, 110.0) == -0.5  # worse than the baseline
    assert captured_share(100.0, 99.6, 90.0) is None  # a gap of 0.4% of the baseline: noise


def test_precision_and_recall_count_the_flags_both_raised():
    assert precision_recall([True, True, False, False], [True, False, True, False]) == (1, 0.5, 0.5)
    assert precision_recall([False, False], [True, False]) == (0, None, 0.0)  # nothing predicted
    assert precision_recall(np.array([True]), np.array([False])) == (0, 0.0, None)  # nothing positive
