"""dsbra's statistics: t-intervals, a ratio's interval, a bootstrap, how many more units an
undecided comparison needs, a repeated measurement's summary.

Importable without scipy: the daemon, its status page and `dsbra impact` run in the default
install, without the plots extra that brings scipy, so what they use (the tables below,
`mean_t_interval`, `mean_difference_interval`, `pairs_needed`, `bootstrap_ratio_diff`,
`units_needed`) needs only numpy. The functions that need scipy import it when called
(`t_interval`, `fieller_ratio`, `reps_to_separate`): `dsbra report` and the benchmarks, whose
installs have it.

Two t-intervals, on purpose, and their values differ in the third decimal of the quantile:
`mean_t_interval` takes Student's quantile from a table (within 0.001 of the exact one),
`t_interval` from scipy, exactly. The default install's code uses `mean_t_interval`, and so do
the benchmarks that set the experiment's read-out beside other designs
(dsbra.bench.switchback_sitting, dsbra.bench.designs), in the read-out's own numbers; `dsbra
report` and the other benchmarks use `t_interval`, whose values their committed results hold.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

#: two-sided 95% quantiles of Student's t by degrees of freedom (1-30), to three decimals
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
#: two-sided 99% quantiles, the same way
T99 = (63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055,
       3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797,
       2.787, 2.779, 2.771, 2.763, 2.756, 2.750)
#: per two-sided level: the table and the normal quantile the expansion starts from
_LEVELS = {0.95: (T95, 1.959964), 0.99: (T99, 2.575829)}


def t_quantile(df: int, level: float = 0.95) -> float:
    """The two-sided ``level`` (0.95 or 0.99) quantile of Student's t with ``df`` degrees of
    freedom: the table up to 30, beyond it the Cornish-Fisher expansion around the normal
    quantile (within 0.001)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    table, z = _LEVELS[level]
    if df <= len(table):
        return table[df - 1]
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def t95(df: int) -> float:
    """`t_quantile` at 95%."""
    return t_quantile(df, 0.95)


def mean_or_none(values) -> float | None:
    """The mean of ``values``, None for none: a metric of a run with nothing to average."""
    return float(np.mean(values)) if len(values) else None


def mean_t_interval(values, level: float = 0.95) -> tuple[float, float, float, float] | None:
    """(mean, low, high, standard deviation) of ``values`` with a two-sided ``level`` (0.95 or
    0.99) t-interval from the table (`t_quantile`), None for fewer than two values: the interval
    of the default install, which has no scipy (the switchback's read-out, the sittings)."""
    v = np.asarray(values, float)
    if len(v) < 2:
        return None
    mean, sd = float(v.mean()), float(v.std(ddof=1))
    half = t_quantile(len(v) - 1, level) * sd / math.sqrt(len(v))
    return mean, mean - half, mean + half, sd


def mean_difference_interval(a, b) -> tuple[float, float, float, float, str] | None:
    """(mean(a) - mean(b), low, high, degrees of freedom, method) with a 95% interval from the
    table's quantiles: Welch's ("welch") when both samples have two or more values; with one
    value in ``b``, ``a``'s prediction interval for one more draw (its spread times
    sqrt(1 + 1/n): "prediction"), taking ``b``'s value to vary as ``a``'s do; None with fewer
    than two values in ``a`` or none in ``b``. For two designs' estimates of one effect (a
    switchback's blocks against the arms' pairs: dsbra.bench.switchback_sitting)."""
    if len(a) < 2 or not len(b):
        return None
    d = float(np.mean(a) - np.mean(b))
    va = np.var(a, ddof=1) / len(a)
    if len(b) == 1:
        method, df = "prediction", float(len(a) - 1)
        se = math.sqrt(va * (len(a) + 1))
    else:
        vb = np.var(b, ddof=1) / len(b)
        method, se = "welch", math.sqrt(va + vb)
        df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se else 1.0
    half = t_quantile(max(1, int(df))) * se
    return d, d - half, d + half, df, method


#: a baseline-to-oracle gap under this share of the baseline's value is noise: no share is taken
MIN_SHARE_HEADROOM = 0.005


def precision_recall(predicted, actual) -> tuple[int, float | None, float | None]:
    """True positives, precision and recall of the flags ``predicted`` against ``actual``
    (None where nothing was predicted, or nothing was positive): how every rule that says
    "this task waited" is scored against what happened."""
    p, a = np.asarray(predicted, bool), np.asarray(actual, bool)
    tp = int((p & a).sum())
    return tp, tp / int(p.sum()) if p.any() else None, tp / int(a.sum()) if a.any() else None


def captured_share(baseline: float, oracle: float, value: float) -> float | None:
    """The share of the oracle's gain over the baseline that ``value`` captures, (baseline -
    value) / (baseline - oracle), for one pairing (one seed) of a lower-is-better measure; None
    where the oracle's gap is under MIN_SHARE_HEADROOM of the baseline (noise over noise). The
    simulator's matrices take it per seed and report a t-interval over seeds."""
    gap = baseline - oracle
    if abs(gap) <= MIN_SHARE_HEADROOM * abs(baseline):
        return None
    return (baseline - value) / gap


def t_interval(values) -> tuple[float, float, float] | None:
    """(mean, low, high) of ``values`` with a 95% t-interval from scipy's exact quantile, None
    for fewer than two: the interval of `dsbra report` and the benchmarks (needs the plots
    extra; without scipy, `mean_t_interval`)."""
    from scipy import stats as scipy_stats  # the plots extra, with matplotlib

    v = np.asarray(values, float)
    if len(v) < 2:
        return None
    m, half = float(v.mean()), float(scipy_stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return m, m - half, m + half


def fieller_ratio(num, den) -> tuple[float | None, float | None]:
    """95% Fieller interval of mean(num) / mean(den) for paired samples (exact for bivariate
    normal pairs, where a bootstrap over 3-6 repetitions undercovers): `dsbra report`'s captured
    share of the oracle's gain. Bounded exactly when mean(den) is itself separated from zero by
    its t-test; otherwise the set is unbounded and both bounds are None."""
    from scipy import stats as scipy_stats

    x, y = np.asarray(num, float), np.asarray(den, float)
    n = len(x)
    sxx, sxy, syy = (np.cov(x, y, ddof=1) / n).ravel()[[0, 1, 3]]
    t2 = scipy_stats.t.ppf(0.975, n - 1) ** 2
    a, b, c = y.mean() ** 2 - t2 * syy, x.mean() * y.mean() - t2 * sxy, x.mean() ** 2 - t2 * sxx
    if a <= 0:
        return None, None
    half = np.sqrt(max(b * b - a * c, 0.0))  # >= 0 whenever a > 0: the point estimate lies inside
    return float((b - half) / a), float((b + half) / a)


#: the bootstrap's resamples, and its seed: the same records give the same interval every time
BOOTSTRAP_DRAWS, BOOTSTRAP_SEED = 2000, 0


def bootstrap_ratio_diff(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
                         draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED
                         ) -> tuple[float, float] | None:
    """The 95% percentile interval of sum(num) / sum(den) of sample ``a`` minus that of ``b``,
    each a (numerators, denominators) pair of arrays with one entry per unit, units resampled
    with replacement within each sample; None when no resample has both ratios. For rates
    whose draws are not independent but whose units are (`dsbra impact`: the maps of one file
    share its replicas and its jobs; the files are the units)."""
    rng = np.random.default_rng(seed)

    def ratios(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        pick = rng.integers(0, len(num), size=(draws, len(num)))
        with np.errstate(invalid="ignore", divide="ignore"):
            return num[pick].sum(axis=1) / den[pick].sum(axis=1)

    diff = ratios(*a) - ratios(*b)
    diff = diff[~np.isnan(diff)]
    if not len(diff):
        return None
    lo, hi = np.percentile(diff, [2.5, 97.5])
    return float(lo), float(hi)


def units_needed(n: int, diff: float | None, ci: tuple[float, float] | None) -> int | None:
    """More units (at the same split) for an interval ``ci`` of ``n`` units around ``diff`` to
    exclude zero at the measured spread, its half-width shrinking as one over the square root
    of the units: 0 when it already does, None without a difference or an interval (`dsbra
    impact`'s files)."""
    if diff is None or ci is None or diff == 0:
        return None
    half = (ci[1] - ci[0]) / 2
    if half < abs(diff):
        return 0
    return max(math.ceil(n * (half / abs(diff)) ** 2) - n, 1)


def pairs_needed(n: int, mean: float, sd: float, most: int = 10_000) -> int | None:
    """How many more pairs a paired 95% t-interval of ``n`` pairs needs for its half-width to
    fall below ``|mean|`` at the measured spread ``sd`` (the table's quantiles, no scipy: the
    switchback's read-out); None when no number up to ``most`` does (a zero difference) and 0
    when it already does."""
    if mean == 0 or n < 2:
        return None
    for total in range(n, most + 1):
        if t95(total - 1) * sd / math.sqrt(total) < abs(mean):
            return total - n
    return None


#: the power the repetitions-needed estimate aims at, and where it stops counting
POWER, MAX_REPS = 0.8, 1000


def reps_to_separate(diffs) -> int | None:
    """Repetitions a paired t-test at 5% would need to tell the arm from the baseline with
    POWER, if the true difference and its spread were the measured ones (noncentral t): `dsbra
    report`'s paired comparison. None without a spread, or beyond MAX_REPS."""
    from scipy import stats as scipy_stats

    d = np.asarray(diffs, float)
    if len(d) < 2 or d.std(ddof=1) == 0 or d.mean() == 0:
        return None
    effect = abs(d.mean()) / d.std(ddof=1)
    for n in range(2, MAX_REPS + 1):
        crit, nc = scipy_stats.t.ppf(0.975, n - 1), effect * np.sqrt(n)
        if scipy_stats.nct.sf(crit, n - 1, nc) + scipy_stats.nct.cdf(-crit, n - 1, nc) >= POWER:
            return n
    return None


def repeats_summary(values: list[float], digits: int = 2) -> dict:
    """A measurement repeated: every run's value, the median, min and max (to ``digits``
    decimals), as the benchmarks record their timings and memory (too few runs, on a shared
    machine, for a mean and its interval)."""
    return {"runs": [round(v, digits) for v in values],
            "median": round(statistics.median(values), digits),
            "min": round(min(values), digits), "max": round(max(values), digits)}
