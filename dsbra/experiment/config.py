"""The experiment's settings, one class for the daemon (its config's ``experiment:`` section,
docs/daemon.md) and the simulator (``SimConfig.experiment``; ``dsbra sim --holdout``), with one
validation.

No experiment is the default: design ``holdout`` with ``holdout`` 0. A switchback is design
``switchback`` (``period_s`` and ``burn_in_s`` count only then), and the do-no-harm guard
``guard`` on a switchback, at ``guard_margin``.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsbra.errors import ConfigError
from dsbra.validate import at_least, in_range, is_number, one_of

DESIGNS = ("holdout", "switchback")


@dataclass(frozen=True)
class ExperimentConfig:
    #: holdout: a share of the files held out; switchback: whole-cluster periods on and off
    design: str = "holdout"
    #: share of the files the policy decides to raise that are held out as a control group
    #: (never changed, journaled as held-out); 0 = no experiment
    holdout: float = 0.0
    seed: int = 0  #: decides a file's group, or the order of a switchback's periods
    #: the switchback's period: the policy on for one, off for the other of each pair
    period_s: float = 3600.0
    #: the first part of each period left out of the estimate (copies in flight, jobs
    #: submitted in the period before)
    burn_in_s: float = 600.0
    #: the do-no-harm guard: pause the daemon when the switchback shows jobs or maps slower
    #: with the policy on by more than guard_margin (relative), the interval excluding zero
    guard: bool = False
    guard_margin: float = 0.05

    @property
    def switchback(self) -> bool:
        return self.design == "switchback"

    def validated(self) -> ExperimentConfig:
        """Self after checking every value; raises ConfigError naming the first bad one as
        ``experiment.KEY`` (the daemon's key, the simulator's field)."""
        in_range("experiment.holdout", self.holdout, 0, 1, error=ConfigError)
        one_of("experiment.design", self.design, DESIGNS, error=ConfigError)
        if self.switchback and self.holdout:
            raise ConfigError("an experiment is a holdout or a switchback, not both: "
                              "experiment.design switchback runs the whole cluster on and off; "
                              "set experiment.holdout to 0")
        if self.guard and not self.switchback:
            raise ConfigError("experiment.guard reads the switchback's estimate; set "
                              "experiment.design to switchback")
        at_least("experiment.guard_margin", self.guard_margin, 0, error=ConfigError)
        p, b = self.period_s, self.burn_in_s
        if not (is_number(p) and is_number(b) and p > 0 and 0 <= b < p):
            raise ConfigError(f"experiment.period_s must be > 0 and experiment.burn_in_s in "
                              f"[0, period_s), got {p} and {b}")
        return self
