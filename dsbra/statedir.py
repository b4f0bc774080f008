"""The files of the daemon's state directory that more than the daemon reads (`dsbra status`,
`dsbra pause`, `dsbra impact`, the status page): their names in one place; and how a JSON file
there is written, so a crash never leaves half of one."""

import contextlib
import json
import os
import tempfile
from pathlib import Path

PAUSE_FILE = "paused"  #: present while `dsbra pause` holds the daemon
STATUS_FILE = "status.json"  #: the last round's status document (/status)
LOCK_FILE = "dsbra.lock"  #: one daemon per state directory
HEAT_FILE = "heat.json"  #: the placement plugin's heat document, unless placement.heat_file
JOURNAL_FILE = "journal.jsonl"  #: every replication change, before it is sent


@contextlib.contextmanager
def atomic_file(path: Path, mode: str = "w"):
    """A file object whose contents replace ``path`` all or nothing: a temporary file beside
    it, synced and renamed over it on a clean exit, removed if anything fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, doc, *, compact: bool = False) -> None:
    """``doc`` as JSON in ``path``, all or nothing (:func:`atomic_file`). ``compact``: no
    whitespace (the collectors' state); else one-space indents (the status and heat documents
    people read)."""
    with atomic_file(path) as fh:
        if compact:
            json.dump(doc, fh, separators=(",", ":"))
        else:
            json.dump(doc, fh, indent=1)
