"""Hand the files back (`dsbra restore`): every file dsbra left above its base set back to it.

What an operator runs before uninstalling dsbra, or to undo what it did. The journal says
which files dsbra left raised, each one's base (its replication before dsbra's first change)
and the replication dsbra last set. A file whose replication is no longer what dsbra set was
changed by someone else since, and is left as it is; a deleted file is skipped. Each change is
journaled before it is sent, as the daemon's are, so a daemon started later on the same state
directory knows of it. Nothing goes below a base, and no file dsbra never raised is touched.
"""

from __future__ import annotations

import time

from dsbra.act.apply import send_change
from dsbra.act.journal import CANCELLED, Journal
from dsbra.errors import HadoopError

#: the rule a restore's journal records name (the daemon's rules are the policy's)
RESTORE_RULE = "restore"
SENT_OUTCOME = "sent"


def restore_bases(journal: Journal, actor, *, apply: bool) -> list[dict]:
    """One record per file dsbra left above its base: ``file``, ``base``, ``dsbra_set``,
    ``current`` (None: deleted) and ``outcome`` (``sent``, ``dry-run`` or why it was skipped).
    A NameNode that cannot be asked raises HadoopError; what was sent before stays journaled,
    and running it again carries on from there."""
    out = []
    for path, base in sorted(journal.raised_files().items()):
        ours = journal.replication[path]
        rec = {"file": path, "base": base, "dsbra_set": ours, "current": None}
        try:
            rec["current"] = now = actor.replication(path)
        except HadoopError as exc:
            if exc.exception != "FileNotFoundException":
                raise
            rec["outcome"] = "skipped: file deleted"
            out.append(rec)
            continue
        if now != ours:
            rec["outcome"] = (f"skipped: replication is {now}, dsbra set {ours}: changed by "
                              "someone else since, left as it is")
        elif not apply:
            rec["outcome"] = "dry-run"
        else:
            # dsbra's own change still copying is superseded: the NameNode has its setting
            for a in journal.pending():
                if a.path == path:
                    journal.mark(a, CANCELLED, "superseded: restored to base")
            rec["outcome"] = send_change(journal, actor, path, now, base, base,
                                         {"rule": RESTORE_RULE}, 0)
        out.append(rec)
    return out


def wait_settled(journal: Journal, actor, paths: set[str], timeout_s: float,
                 every_s: float = 5.0, clock=time.monotonic, sleep=time.sleep) -> set[str]:
    """Wait until the NameNode reports each of ``paths``' blocks at its base (the journal's
    actions settled); the paths still above it when ``timeout_s`` ran out."""
    deadline = clock() + timeout_s
    while True:
        journal.settle(actor)
        left = {a.path for a in journal.pending() if a.path in paths}
        if not left or clock() >= deadline:
            return left
        sleep(every_s)
