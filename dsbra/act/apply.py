"""Apply a file plan through WebHDFS: journal first, then send, never below base."""

from __future__ import annotations

import logging

from dsbra.act.journal import FAILED, SENT, Journal
from dsbra.errors import HadoopError
from dsbra.policy.rails import FilePlan

log = logging.getLogger(__name__)

#: a SETREPLICATION failure that does not say the NameNode refused it: no answer (None), or
#: a standby's refusal after the active one stopped answering mid-request (HdfsCLI tries each
#: NameNode and raises the last error)
UNSURE = (None, "StandbyException", "RetriableException")


def apply_plan(plan: FilePlan, node_names, journal: Journal, actor, *, round_: int,
               apply: bool, refused: str | None = None, log_decision=None) -> list[dict]:
    """Send each changed file's SETREPLICATION (``apply``) or only log it; one record each,
    each logged by ``log_decision(round_, record, target)`` (default: the round's decision line).
    ``refused``: the name of the refusal that keeps a daemon in apply mode from acting now
    (:func:`dsbra.act.health.refusal_name`); its changes are recorded ``refused`` with it, not
    ``dry-run``, and not sent.

    A file's target is refused when it is below the file's base (journal's, else the plan's),
    or when HDFS no longer has the replication the plan started from (someone else changed
    it since the observation). A held-out raise (the experiment's control group) is journaled
    with the target it would have had, outcome ``held-out``, and not sent.
    """
    _log = log_decision or log_round_decision
    out = []
    for rec in plan.to_records(node_names, plan.held_out()):
        rec["base"] = journal.base.get(rec["file"], int(rec["current"]))
        rec["outcome"] = "held-out"
        journal.hold_out(rec["file"], rec["current"], rec["would_target"], rec["reason"], round_)
        _log(round_, rec, rec["would_target"])
        out.append(rec)
    changed = plan.changed()
    # records of the changed rows only: the plan also lists every refused file
    for k, rec in zip(changed, plan.to_records(node_names, changed)):
        path, before, target = rec["file"], rec["current"], rec["target"]
        base = journal.base.get(path, int(plan_base(plan, k)))
        rec["base"] = base
        if target < base:
            rec["outcome"] = "refused: below base"
        elif refused:
            rec["outcome"], rec["refusal"] = "refused", refused
        elif not apply:
            rec["outcome"] = "dry-run"
        else:
            rec["outcome"] = send_change(journal, actor, path, before, target, base, rec["reason"],
                                         round_)
        _log(round_, rec, target)
        out.append(rec)
    return out


def log_round_decision(round_: int, rec: dict, target: int) -> None:
    log.info("decision round=%d file=%s replication=%d->%d base=%d rule=%s rf=%.3f "
             "gavg=%.3f status=%s outcome=%s%s", round_, rec["file"], rec["current"], target,
             rec["base"], rec["reason"]["rule"], rec["reason"]["rf"], rec["reason"]["gavg"],
             rec["status"], rec["outcome"].replace(" ", "_"), refusal_suffix(rec))


def refusal_suffix(rec: dict) -> str:
    """A decision line's last key: the refusal that kept a change from being sent."""
    return f" refusal={rec['refusal']}" if "refusal" in rec else ""


def plan_base(plan: FilePlan, k) -> int:
    """The plan's own base for row ``k``: the current value for raises, the target's floor
    for lowerings (the rails never lower below the file table's base)."""
    return int(min(plan.current[k], plan.target[k]))


def send_change(journal: Journal, actor, path: str, before: int, target: int, base: int,
                reason: dict, round_: int) -> str:
    """Journal, then send one SETREPLICATION; the outcome as the decision records say it
    (``sent``, ``skipped: ...``, ``unsure: ...``, ``failed: ...``). Skipped when HDFS no
    longer has ``before``: someone else changed the file since it was read."""
    try:
        now = actor.replication(path)
    except HadoopError as exc:
        return f"skipped: {exc}"
    if now != before:
        return f"skipped: replication is {now}, not {before}, since the observation"
    action = journal.intent(path, before, target, base, reason, round_)
    try:
        actor.set_replication(path, target)
    except HadoopError as exc:
        if exc.exception in UNSURE:
            # it may have reached the NameNode (which then failed over, or died before it
            # answered): left open, and the next round's reconcile reads the file's
            # replication to close it as sent or cancelled; never sent twice, never lost
            return f"unsure: {exc.exception or 'no answer'}, reconciled next round"
        journal.mark(action, FAILED, str(exc))
        return f"failed: {exc.exception or exc}"
    journal.mark(action, SENT)
    return "sent"
