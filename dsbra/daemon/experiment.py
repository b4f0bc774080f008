"""The experiment's group of each decided file, recorded once, at the file's first raise decision.

``experiment.jsonl`` in the state directory, one fsynced line per file: path, group
(treatment or control), the round and the time of the first decision (the end of that round's
window, ms), and the holdout fraction and seed that assigned it. A file keeps the group it was
given even when the fraction or seed changes later; ``dsbra impact`` counts a file's maps from
its first decision on.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from dsbra.errors import StateError
from dsbra.policy.experiment import CONTROL, TREATMENT, Holdout

log = logging.getLogger(__name__)

ASSIGNMENTS_FILE = "experiment.jsonl"


@dataclass
class Assignments:
    path: Path
    groups: dict[str, str] = field(default_factory=dict)  #: file -> its group

    @classmethod
    def open(cls, path: str | os.PathLike) -> "Assignments":
        a = cls(Path(path))
        if not a.path.exists():
            return a
        try:
            lines = a.path.read_text().splitlines()
        except OSError as exc:
            raise StateError(f"experiment assignments {a.path}: {exc.strerror}") from None
        for no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if rec["group"] not in (TREATMENT, CONTROL):
                    raise ValueError(rec["group"])
                a.groups.setdefault(str(rec["file"]), rec["group"])
            except (ValueError, KeyError, TypeError):
                if no == len(lines):  # a torn last line: the write that crashed
                    log.warning("experiment assignments %s: ignoring a torn last line", a.path)
                    continue
                raise StateError(f"experiment assignments {a.path} line {no} is malformed"
                                 ) from None
        return a

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
        recs = [{"file": f, "group": CONTROL if c else TREATMENT, "round": round_,
                 "first_decision_ms": at_ms, "holdout": holdout.fraction, "seed": holdout.seed}
                for f, c in zip(new, control)]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, "".join(json.dumps(r, sort_keys=True) + "\n" for r in recs).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        for r in recs:
            self.groups[r["file"]] = r["group"]
        return recs
