"""The held-out control group: which raised files the policy leaves alone, to measure it by.

A file the policy wants to raise is in the control group when a stable hash of the seed and
its path falls below the holdout fraction. The hash (BLAKE2b, not Python's salted ``hash``)
gives the same answer in every round, process and host, so a file keeps its group across
restarts without any state, and the daemon and the simulator split the same paths alike.
The daemon also records each file's group at its first decision (dsbra/daemon/experiment.py),
so a later change of fraction or seed does not move files already assigned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dsbra.errors import InputError

TREATMENT, CONTROL = "treatment", "control"


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
        digest = hashlib.blake2b(f"{self.seed}\0{path}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2.0**64

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
