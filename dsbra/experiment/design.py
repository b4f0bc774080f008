"""The experiments' designs: which files (a holdout) or which periods (a switchback) the policy
leaves alone, to measure it by.

A file the policy wants to raise is in the control group when a stable hash of the seed and
its path falls below the holdout fraction. The hash (BLAKE2b, not Python's salted ``hash``)
gives the same answer in every round, process and host, so a file keeps its group across
restarts without any state, and the daemon and the simulator split the same paths alike.
The daemon also records each file's group at its first decision (dsbra/experiment/assignment.py),
so a later change of fraction or seed does not move files already assigned.

A switchback alternates whole-cluster periods with the policy on and off, so the estimate takes
in what a holdout cannot: the raised files' copies taking locality from every other file (held
out ones included) and the daemon's own cost. Periods come in blocks of two, one on and one
off, the order drawn per block from the seed (the same hash), so each block is a pair taken
under the load of the same hour; the first ``burn_in_s`` of each period (copies in flight,
jobs straddling the switch) is left out of the estimate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dsbra.errors import InputError

TREATMENT, CONTROL = "treatment", "control"
ON, OFF = "on", "off"


def stable_draw(seed: int, key: str) -> float:
    """A point in [0, 1) for ``seed`` and ``key``: the same in every process and host."""
    digest = hashlib.blake2b(f"{seed}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


@dataclass(frozen=True)
class Holdout:
    fraction: float = 0.0  #: share of decided files held out; 0 = no experiment
    seed: int = 0
    #: file -> group given earlier (the daemon's record): wins over the hash while enabled
    assigned: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        if not 0.0 <= self.fraction <= 1.0:
            raise InputError(f"holdout fraction must be in [0, 1], got {self.fraction!r}")

    @property
    def enabled(self) -> bool:
        return self.fraction > 0

    def draw(self, path: str) -> float:
        """The path's point in [0, 1): the same for a seed and path everywhere."""
        return stable_draw(self.seed, path)

    def is_control(self, paths) -> np.ndarray:
        """Per path, whether it belongs to the control group (none while disabled: turning
        the experiment off releases the control group to the policy)."""
        if not self.enabled:
            return np.zeros(len(paths), bool)
        return np.fromiter((self._group(str(p)) == CONTROL for p in paths), bool, len(paths))

    def _group(self, path: str) -> str:
        group = self.assigned.get(path)
        if group is None:
            group = CONTROL if self.draw(path) < self.fraction else TREATMENT
        return group


@dataclass(frozen=True)
class Switchback:
    """Periods of ``period_s`` from ``start_ms`` (period 0 starts there), on or off by block."""

    period_s: float
    seed: int = 0
    start_ms: int = 0  #: when the experiment began (the daemon's first round, recorded)
    burn_in_s: float = 0.0  #: the first part of each period, left out of the estimate

    def __post_init__(self):
        if not self.period_s > 0:
            raise InputError(f"switchback period must be > 0 s, got {self.period_s!r}")
        if not 0 <= self.burn_in_s < self.period_s:
            raise InputError(f"switchback burn-in must be in [0, period), got {self.burn_in_s!r} "
                             f"with a period of {self.period_s} s")

    def period(self, t_ms) -> np.ndarray:
        """The period of each time (ms); -1 before the start."""
        t = np.asarray(t_ms, np.int64) - self.start_ms
        return np.where(t >= 0, t // int(round(self.period_s * 1000)), -1)

    def on_first(self, block: int) -> bool:
        """Whether block ``block`` (periods 2b and 2b+1) starts with the policy on."""
        return stable_draw(self.seed, f"switchback-block-{block}") < 0.5

    def is_on(self, periods) -> np.ndarray:
        """Per period (>= 0), whether the policy is on in it."""
        p = np.asarray(periods, np.int64)
        first = np.fromiter((self.on_first(int(b)) for b in (p // 2).ravel()), bool, p.size)
        return (first.reshape(p.shape)) == (p % 2 == 0)

    def arm_at(self, t_ms: int) -> str:
        """ON or OFF at ``t_ms`` (ON before the start: no experiment yet)."""
        k = int(self.period(t_ms))
        return ON if k < 0 or bool(self.is_on(k)) else OFF

    def in_burn_in(self, t_ms) -> np.ndarray:
        """Per time, whether it falls in its period's burn-in (or before the start)."""
        t = np.asarray(t_ms, np.int64) - self.start_ms
        return (t < 0) | (t % int(round(self.period_s * 1000)) < int(round(self.burn_in_s * 1000)))
