"""Student's t intervals without scipy: the daemon and `dsbra impact` run without the plots
extra, and a paired experiment's interval must not depend on it."""

from __future__ import annotations

import math

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
    return t_quantile(df, 0.95)


def mean_t_interval(values, level: float = 0.95) -> tuple[float, float, float, float] | None:
    """(mean, low, high, standard deviation) of ``values`` with a two-sided ``level``
    t-interval; None for fewer than two values."""
    v = np.asarray(values, float)
    if len(v) < 2:
        return None
    mean, sd = float(v.mean()), float(v.std(ddof=1))
    half = t_quantile(len(v) - 1, level) * sd / math.sqrt(len(v))
    return mean, mean - half, mean + half, sd


def pairs_needed(n: int, mean: float, sd: float, most: int = 10_000) -> int | None:
    """How many more pairs a paired 95% t-interval of ``n`` pairs needs for its half-width to
    fall below ``|mean|`` at the measured spread ``sd``; None when no number up to ``most``
    does (a zero difference) and 0 when it already does."""
    if mean == 0 or n < 2:
        return None
    for total in range(n, most + 1):
        if t95(total - 1) * sd / math.sqrt(total) < abs(mean):
            return total - n
    return None
