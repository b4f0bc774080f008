"""The cluster's state file: what `up` created (network, processes), so `down` can undo it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dsbra.errors import StateError

FORMAT = 1


def load(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise StateError(f"cannot read cluster state {path}: {exc}; remove it or run 'dsbra cluster down --purge'")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StateError(f"cluster state {path} has an unknown format; run 'dsbra cluster down --purge'")
    data.setdefault("network", {"bridge": None, "netns": [], "veths": []})
    data.setdefault("daemons", {})
    return data


def save(path: Path, data: dict) -> None:
    """Atomic write, so a crash never leaves half a state file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)


def new(spec: dict, **extra) -> dict:
    return {"format": FORMAT, "spec": spec, "network": {"bridge": None, "netns": [], "veths": []},
            "daemons": {}, **extra}
