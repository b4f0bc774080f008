"""Per-block history between rounds, on disk: one Parquet file, replaced atomically.

The file holds one row per block (block_id, y, n, base_replication, file_index, idle_rounds,
and the hysteresis column hot_history, optional on read: a file without it loads as blocks
without hot rounds, and a reader that does not know it ignores it, as this one ignores the
since_hot column files written before 2026-12-07 hold) and,
in the schema metadata, ``dsbra.format_version`` and ``dsbra.round``. A write goes to a
temporary file in the same directory, is fsynced, renamed over the old file, and the directory
is fsynced: a crash leaves either the old state or the new one, never a torn file.
A file of another format version is refused with a StateError naming both versions; a format
change adds its migration to ``load_state`` before bumping STATE_FORMAT_VERSION.

Versions: 1 held the daemon's block ids as HDFS's "blk_<n>" names (strings); 2 holds them as
the numeric ids (int64), one Python string per block less in memory. A version 1 file whose
ids are all "blk_<n>" names is read as version 2 (the numbers); other string ids stay strings.

Columns are read one at a time, a batch at a time, straight into the final numpy arrays, so
loading holds the state once plus one batch, not an Arrow table beside its numpy copy.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dsbra.errors import StateError
from dsbra.policy.api import STATE_FORMAT_VERSION, BlockState
from dsbra.statedir import atomic_file

_META_VERSION = b"dsbra.format_version"
_META_ROUND = b"dsbra.round"
_COLUMNS = ("block_id", "y", "n", "base_replication", "file_index", "idle_rounds")
_DTYPES = {"y": np.float64, "n": np.int32, "base_replication": np.int16,
           "file_index": np.int32, "idle_rounds": np.int32}
_OPTIONAL = {"hot_history": np.uint8}  #: absent from older files (their since_hot is not read)
_NAMES_VERSION = 1  #: the last version holding the daemon's ids as "blk_<n>" names
_BATCH_ROWS = 1 << 16


def save_state(path: str | os.PathLike, state: BlockState) -> None:
    """Write ``state`` to ``path`` atomically (temp file + fsync + rename + directory fsync)."""
    path = Path(path)
    table = pa.table({
        "block_id": as_arrow_ids(state.block_ids),
        "y": pa.array(state.y),
        "n": pa.array(state.n),
        "base_replication": pa.array(state.base_replication),
        "file_index": pa.array(state.file_index),
        "idle_rounds": pa.array(state.idle_rounds),
        "hot_history": pa.array(state.hot_history),
    }).replace_schema_metadata({_META_VERSION: str(state.format_version).encode(),
                                _META_ROUND: str(state.round).encode()})
    with atomic_file(path, "wb") as fh:
        # no dictionary pages: ids and histories are mostly distinct, and building them cost
        # memory, time and bytes (zstd alone makes the smaller file)
        pq.write_table(table, fh, compression="zstd", use_dictionary=False)
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
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise StateError(f"state file {path} is unreadable: {exc}") from None
    meta = pf.schema_arrow.metadata or {}
    raw_version = meta.get(_META_VERSION)
    if raw_version is None:
        raise StateError(f"state file {path} has no dsbra.format_version: not a dsbra state file")
    try:
        version = int(raw_version)
        round_ = int(meta.get(_META_ROUND, b"0"))
    except ValueError:
        raise StateError(f"state file {path} has a malformed format version or round") from None
    if version not in (_NAMES_VERSION, STATE_FORMAT_VERSION):
        raise StateError(f"state file {path} has format version {version}; this dsbra reads "
                         f"version {STATE_FORMAT_VERSION} (and migrates version "
                         f"{_NAMES_VERSION}) only")
    missing = [c for c in _COLUMNS if c not in pf.schema_arrow.names]
    if missing:
        raise StateError(f"state file {path} lacks column(s) {', '.join(missing)}")
    rows = pf.metadata.num_rows
    try:
        with pf:
            ids = _read_block_ids(pf, rows, names_to_numbers=version == _NAMES_VERSION)
            col = {c: _read_column(pf, c, np.empty(rows, dt)) for c, dt in _DTYPES.items()}
            col.update({c: _read_column(pf, c, np.empty(rows, dt)) for c, dt in _OPTIONAL.items()
                        if c in pf.schema_arrow.names})
    except (OSError, pa.ArrowException) as exc:
        raise StateError(f"state file {path} is unreadable: {exc}") from None
    pa.default_memory_pool().release_unused()  # the read buffers: the round allocates via numpy
    if rows and (np.any(col["n"] < 0) or np.any(col["base_replication"] < 1)
                 or not np.all(np.isfinite(col["y"]))):
        raise StateError(f"state file {path} holds invalid values (n < 0, base < 1 or bad y)")
    return BlockState(block_ids=ids, y=col["y"], n=col["n"],
                      base_replication=col["base_replication"], file_index=col["file_index"],
                      idle_rounds=col["idle_rounds"], round=round_,
                      hot_history=col.get("hot_history"))


def as_arrow_ids(ids: np.ndarray) -> pa.Array:
    """Block ids as an Arrow array without a copy of numeric ids (strings for object ids)."""
    if ids.dtype != object:
        return pa.array(ids)
    try:
        return pa.array(ids, pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(ids.astype(str))


def _batches(pf: pq.ParquetFile, name: str):
    return (b.column(0) for b in pf.iter_batches(batch_size=_BATCH_ROWS, columns=[name],
                                                  use_threads=False))


def _read_column(pf: pq.ParquetFile, name: str, out: np.ndarray) -> np.ndarray:
    """Column ``name`` into ``out`` (cast to its dtype), batch by batch."""
    at = 0
    for chunk in _batches(pf, name):
        out[at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
        at += len(chunk)
    return out


def _read_block_ids(pf: pq.ParquetFile, rows: int, names_to_numbers: bool) -> np.ndarray:
    """int64 ids as they are; "blk_<n>" names as their numbers when migrating (if every id is
    one); other strings as an object array."""
    if pa.types.is_integer(pf.schema_arrow.field("block_id").type):
        return _read_column(pf, "block_id", np.empty(rows, np.int64))
    if names_to_numbers:
        numbers = _block_numbers(pf, rows)
        if numbers is not None:
            return numbers
    return _read_column(pf, "block_id", np.empty(rows, object))


def _block_numbers(pf: pq.ParquetFile, rows: int) -> np.ndarray | None:
    """The numbers of "blk_<n>" ids (int64), or None at the first id that is not one."""
    numbers = np.empty(rows, np.int64)
    at = 0
    for chunk in _batches(pf, "block_id"):
        if chunk.null_count or not pc.all(
                pc.match_substring_regex(chunk, r"^blk_-?[0-9]{1,19}$")).as_py():
            return None
        try:
            numbers[at:at + len(chunk)] = pc.cast(pc.utf8_slice_codeunits(chunk, 4),
                                                  pa.int64()).to_numpy()
        except pa.ArrowInvalid:  # beyond int64: not an HDFS block id
            return None
        at += len(chunk)
    return numbers
