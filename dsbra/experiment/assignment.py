"""The experiment's group of each decided file, recorded once, at the file's first raise decision.

``experiment.jsonl`` in the state directory, one fsynced line per file: path, group
(treatment or control), the round and the time of the first decision (the end of that round's
window, ms), and the holdout fraction and seed that assigned it. A file keeps the group it was
given even when the fraction or seed changes later; ``dsbra impact`` counts a file's maps from
its first decision on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from dsbra.act.journal import append_jsonl, replay_jsonl
from dsbra.experiment.design import CONTROL, TREATMENT, Holdout, Switchback

ASSIGNMENTS_FILE = "experiment.jsonl"


@dataclass
class Assignments:
    path: Path
    groups: dict[str, str] = field(default_factory=dict)  #: file -> its group
    first_decision_ms: dict[str, int] = field(default_factory=dict)  #: file -> when assigned
    seeds: dict[str, int] = field(default_factory=dict)  #: file -> the seed that assigned it

    @classmethod
    def open(cls, path: str | os.PathLike) -> "Assignments":
        a = cls(Path(path))
        replay_jsonl(a.path, "experiment assignments", a._add)
        return a

    def _add(self, rec: dict) -> None:
        """Take one record; a file's first record wins."""
        if rec["group"] not in (TREATMENT, CONTROL):
            raise ValueError(rec["group"])
        f = str(rec["file"])
        if f not in self.groups:
            self.groups[f] = rec["group"]
            self.first_decision_ms[f] = int(rec["first_decision_ms"])
            self.seeds[f] = int(rec["seed"])

    def counts(self) -> dict[str, int]:
        groups = list(self.groups.values())
        return {TREATMENT: groups.count(TREATMENT), CONTROL: groups.count(CONTROL)}

    def holdout(self, fraction: float, seed: int) -> Holdout:
        """The experiment at this fraction and seed, files keeping the groups recorded."""
        return Holdout(fraction, seed, assigned=self.groups)

    def assign(self, files, holdout: Holdout, *, round_: int, at_ms: int) -> list[dict]:
        """Record the group of each of ``files`` not assigned yet; the new records."""
        new = [f for f in dict.fromkeys(map(str, files)) if f not in self.groups]
        if not new:
            return []
        control = holdout.is_control(new)
        return self.record([(f, CONTROL if c else TREATMENT) for f, c in zip(new, control)],
                           holdout, round_=round_, at_ms=at_ms)

    def record(self, groups: list[tuple[str, str]], holdout: Holdout, *, round_: int,
               at_ms: int) -> list[dict]:
        """Record (file, group) pairs decided at ``at_ms`` in round ``round_``; the records."""
        recs = [{"file": f, "group": g, "round": round_, "first_decision_ms": at_ms,
                 "holdout": holdout.fraction, "seed": holdout.seed} for f, g in groups]
        append_jsonl(self.path, recs)
        for r in recs:
            self._add(r)
        return recs


SWITCHBACK_FILE = "switchback.jsonl"


def switchback_of(state_dir: Path, period_s: float, burn_in_s: float, seed: int,
                  now_ms: int) -> tuple[Switchback, bool]:
    """The switchback the daemon runs: the one recorded in ``switchback.jsonl`` when its
    settings are these (a restart continues its periods), else a new one starting now,
    recorded (fsynced) before its first round. Returns it and whether it is new."""
    runs = recorded_switchbacks(state_dir)
    want = Switchback(float(period_s), int(seed), int(now_ms), float(burn_in_s))
    if runs and (runs[-1].period_s, runs[-1].burn_in_s, runs[-1].seed) == \
            (want.period_s, want.burn_in_s, want.seed):
        return runs[-1], False
    append_jsonl(state_dir / SWITCHBACK_FILE, [{"start_ms": want.start_ms, "period_s": want.period_s,
                                                "burn_in_s": want.burn_in_s, "seed": want.seed}])
    return want, True


def recorded_switchbacks(state_dir: Path) -> list[Switchback]:
    """Every switchback recorded in the state dir, oldest first (a change of settings starts
    a new one)."""
    recs: list[dict] = []
    replay_jsonl(state_dir / SWITCHBACK_FILE, "switchback experiments", recs.append)
    return [Switchback(float(r["period_s"]), int(r["seed"]), int(r["start_ms"]),
                       float(r["burn_in_s"])) for r in recs]
