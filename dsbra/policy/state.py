"""Per-block history between rounds, on disk: one Parquet file, replaced atomically.

The file holds one row per block (block_id, y, n, base_replication, file_index, idle_rounds)
and, in the schema metadata, ``dsbra.format_version`` and ``dsbra.round``. A write goes to a
temporary file in the same directory, is fsynced, renamed over the old file, and the directory
is fsynced: a crash leaves either the old state or the new one, never a torn file.
A file of another format version is refused with a StateError naming both versions: there is
one version so far, so there is nothing to migrate from; a format change must add its migration
to ``load_state`` before bumping STATE_FORMAT_VERSION.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dsbra.errors import StateError
from dsbra.policy.api import STATE_FORMAT_VERSION, BlockState

_META_VERSION = b"dsbra.format_version"
_META_ROUND = b"dsbra.round"
_COLUMNS = ("block_id", "y", "n", "base_replication", "file_index", "idle_rounds")


def save_state(path: str | os.PathLike, state: BlockState) -> None:
    """Write ``state`` to ``path`` atomically (temp file + fsync + rename + directory fsync)."""
    path = Path(path)
    ids = state.block_ids
    id_array = pa.array(ids.astype(str) if ids.dtype == object else ids)
    table = pa.table({
        "block_id": id_array,
        "y": pa.array(state.y),
        "n": pa.array(state.n),
        "base_replication": pa.array(state.base_replication),
        "file_index": pa.array(state.file_index),
        "idle_rounds": pa.array(state.idle_rounds),
    }).replace_schema_metadata({_META_VERSION: str(state.format_version).encode(),
                                _META_ROUND: str(state.round).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load_state(path: str | os.PathLike, missing_ok: bool = True) -> BlockState | None:
    """Read a state file; None if it does not exist and ``missing_ok``.

    Raises StateError for an unreadable file, missing columns or another format version.
    """
    path = Path(path)
    if not path.exists():
        if missing_ok:
            return None
        raise StateError(f"state file {path} does not exist")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise StateError(f"state file {path} is unreadable: {exc}") from None
    meta = table.schema.metadata or {}
    raw_version = meta.get(_META_VERSION)
    if raw_version is None:
        raise StateError(f"state file {path} has no dsbra.format_version: not a dsbra state file")
    try:
        version = int(raw_version)
        round_ = int(meta.get(_META_ROUND, b"0"))
    except ValueError:
        raise StateError(f"state file {path} has a malformed format version or round") from None
    if version != STATE_FORMAT_VERSION:
        raise StateError(f"state file {path} has format version {version}; this dsbra reads "
                         f"version {STATE_FORMAT_VERSION} only and cannot migrate it")
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise StateError(f"state file {path} lacks column(s) {', '.join(missing)}")
    ids = table.column("block_id").to_numpy(zero_copy_only=False)
    if ids.dtype.kind not in "iu":
        ids = ids.astype(object)
    col = {c: table.column(c).to_numpy(zero_copy_only=False) for c in _COLUMNS[1:]}
    if len(ids) and (np.any(col["n"] < 0) or np.any(col["base_replication"] < 1)
                     or not np.all(np.isfinite(col["y"]))):
        raise StateError(f"state file {path} holds invalid values (n < 0, base < 1 or bad y)")
    return BlockState(block_ids=ids, y=col["y"], n=col["n"],
                      base_replication=col["base_replication"], file_index=col["file_index"],
                      idle_rounds=col["idle_rounds"], round=round_)
