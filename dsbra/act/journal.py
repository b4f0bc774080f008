"""The action journal: an append-only JSONL file, one fsynced line per step of an action.

A SETREPLICATION is written as ``intent`` (path, before, target, base, reason) before it is
sent, ``sent`` once the NameNode accepted it, and ``done`` when the NameNode reports the new
replica count on every block of the file. ``cancelled`` closes an intent that never reached
the NameNode, ``failed`` one it refused. ``held-out`` records a raise the experiment's control
group did not get (dsbra.experiment.design): a decision, not an action; nothing was sent. It
is written when the target it would have had changes, not every round. On restart
:meth:`Journal.reconcile` closes the open intents against what HDFS now says, and never
sends anything again: no change is applied twice, and none is forgotten (every intent ends in
sent/done, cancelled or failed).

The journal also remembers each file's base replication (the replication it had before our
first change), so a file we raised is lowered back to that base and never below it, even when
its blocks left the policy's state; and which of the daemon's two deciders holds a file above
it (:meth:`Journal.demand_held`: the fast poll, dsbra.daemon.fastpoll, or the round).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from dsbra.errors import HadoopError, StateError
from dsbra.policy.api import RULE_DEMAND, RULE_DEMAND_GONE, RULE_NAMES

log = logging.getLogger(__name__)

OPEN, SENT, DONE, CANCELLED, FAILED = "intent", "sent", "done", "cancelled", "failed"
HELD_OUT = "held-out"
#: the rules of the fast poll's changes (dsbra.policy.demand): a file they raised is its to hold
DEMAND_RULES = (RULE_NAMES[RULE_DEMAND], RULE_NAMES[RULE_DEMAND_GONE])


def replay_jsonl(path: Path, what: str, apply) -> None:
    """Feed each record of an append-only JSONL state file to ``apply`` (nothing when the file
    does not exist). A malformed last line is the write a crash tore: skipped with a warning;
    any other malformed line, or a record ``apply`` cannot take, is a StateError naming it."""
    if not path.exists():
        return
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise StateError(f"{what} {path}: {exc.strerror}") from None
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            apply(json.loads(line))
        except (ValueError, KeyError, TypeError):
            if no == len(lines):  # a torn last line: the write that crashed
                log.warning("%s %s: ignoring a torn last line", what, path)
                continue
            raise StateError(f"{what} {path} line {no} is malformed") from None


def append_jsonl(path: Path, recs: list[dict]) -> None:
    """Append records to a JSONL state file, one line each, fsynced before returning."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(rec, sort_keys=True) + "\n" for rec in recs)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Action:
    id: int
    path: str
    before: int
    target: int
    base: int
    reason: dict
    round: int
    state: str = OPEN
    detail: str = ""

    @property
    def pending(self) -> bool:
        """Sent, but the NameNode does not report the new replica count yet (or unsent)."""
        return self.state in (OPEN, SENT)


@dataclass
class Journal:
    path: Path
    actions: dict[int, Action] = field(default_factory=dict)
    base: dict[str, int] = field(default_factory=dict)  #: file -> base replication
    replication: dict[str, int] = field(default_factory=dict)  #: file -> last target we set
    held_out: dict[str, int] = field(default_factory=dict)  #: file -> last held-out target
    #: file -> records about it so far: a file's reads taken at one count are current until it
    #: changes (the fast poll's cache)
    touched: dict[str, int] = field(default_factory=dict)
    #: file -> the replication the fast poll's hold of it started from (its floor)
    demand_floor: dict[str, int] = field(default_factory=dict)

    @classmethod
    def open(cls, path: str | os.PathLike) -> "Journal":
        j = cls(Path(path))
        replay_jsonl(j.path, "journal", j._replay)
        return j

    def _replay(self, rec: dict) -> None:
        op = rec["op"]
        if op == HELD_OUT:
            self.held_out[rec["path"]] = int(rec["target"])
            return
        if op == OPEN:
            a = Action(id=int(rec["id"]), path=rec["path"], before=int(rec["before"]),
                       target=int(rec["target"]), base=int(rec["base"]),
                       reason=rec.get("reason", {}), round=int(rec.get("round", 0)))
            self.actions[a.id] = a
            self.base.setdefault(a.path, a.base)
        else:
            a = self.actions[int(rec["id"])]
            a.state, a.detail = op, rec.get("detail", "")
            if op in (SENT, DONE):
                self.replication[a.path] = a.target
            if op == SENT:
                self._hold(a)
        self.touched[a.path] = self.touched.get(a.path, 0) + 1

    def _hold(self, a: Action) -> None:
        """Who holds ``a``'s file now that HDFS took ``a``: a change of the fast poll's starts
        its hold from the replication before it (or keeps the hold it continues); any other
        rule's change hands the file to the round."""
        if (a.reason or {}).get("rule") not in DEMAND_RULES:
            self.demand_floor.pop(a.path, None)
            return
        floor = self.demand_floor.get(a.path)
        if floor is None or a.before <= floor:
            self.demand_floor[a.path] = min(a.before, a.target)

    def _append(self, rec: dict) -> None:
        append_jsonl(self.path, [rec])
        self._replay(rec)

    def intent(self, path: str, before: int, target: int, base: int, reason: dict,
               round_: int) -> Action:
        """Record a change before it is sent; the base kept is the first one seen for the file."""
        aid = max(self.actions, default=0) + 1
        self._append({"op": OPEN, "id": aid, "ts": time.time(), "path": path,
                      "before": before, "target": target, "base": self.base.get(path, base),
                      "reason": reason, "round": round_})
        return self.actions[aid]

    def hold_out(self, path: str, before: int, would_target: int, reason: dict,
                 round_: int) -> None:
        """Record a raise held out for the experiment (nothing is sent); a file held out at the
        same target as last time is not recorded again, so a control file hot for days adds a
        line per change of its would-be target, not per round."""
        if self.held_out.get(path) == would_target:
            return
        self._append({"op": HELD_OUT, "ts": time.time(), "path": path, "before": before,
                      "target": would_target, "reason": reason, "round": round_})

    def mark(self, action: Action, op: str, detail: str = "") -> None:
        self._append({"op": op, "id": action.id, "ts": time.time(), "detail": detail})

    def pending(self) -> list[Action]:
        return [a for a in self.actions.values() if a.pending]

    def pending_raises(self) -> list[Action]:
        """Pending raises: copies the NameNode may still be making (network and disk in use).
        A pending lowering only keeps an extra replica until the NameNode deletes it, which after
        a NameNode failover waits for each DataNode's next full block report (HDFS postpones
        excess replicas on storages it has no report from; dfs.blockreport.intervalMsec, 6 h by
        default), so it must not hold the daemon back."""
        return [a for a in self.pending() if a.target > a.before]

    def raised_files(self) -> dict[str, int]:
        """Files whose replication we left above their base: path -> base."""
        return {p: self.base[p] for p, r in self.replication.items() if r > self.base[p]}

    def demand_held(self) -> dict[str, int]:
        """Files the fast poll holds above the replication its hold started from: path -> that
        floor. Only the fast poll lowers them (to the floor at most), and the round does not
        until the hold ends; the round's own raises stay the round's to lower."""
        return {p: f for p, f in self.demand_floor.items() if self.replication.get(p, f) > f}

    def settle(self, actor) -> list[Action]:
        """Mark sent actions done once every block reports the target replica count."""
        done = []
        for a in self.pending():
            if a.state != SENT:
                continue
            try:
                counts = actor.live_replicas(a.path)
            except HadoopError as exc:
                if exc.exception == "FileNotFoundException":
                    self.mark(a, CANCELLED, "file deleted")
                continue
            if counts and (min(counts) >= a.target if a.target > a.before
                           else max(counts) <= a.target):
                self.mark(a, DONE, f"replicas {counts}")
                done.append(a)
        return done

    def reconcile(self, actor) -> list[Action]:
        """After a restart: close intents that may or may not have reached the NameNode.

        The file's replication setting says which: at the target, it was sent (then
        :meth:`settle` waits for the copies); at the value before, it never arrived and is
        cancelled (the next round decides again from fresh observations); anything else was
        changed by someone else and is cancelled as superseded. Nothing is re-sent.
        """
        closed = []
        for a in [a for a in self.pending() if a.state == OPEN]:
            try:
                now = actor.replication(a.path)
            except HadoopError as exc:
                if exc.exception == "FileNotFoundException":
                    self.mark(a, CANCELLED, "file deleted")
                    closed.append(a)
                    continue
                raise
            if now == a.target:
                self.mark(a, SENT, "reconciled: the NameNode has the target")
            elif now == a.before:
                self.mark(a, CANCELLED, "reconciled: never reached the NameNode")
            else:
                self.mark(a, CANCELLED, f"reconciled: superseded, replication is {now}")
            closed.append(a)
        return closed
