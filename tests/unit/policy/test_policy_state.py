"""State persistence: round trip, atomic replace, refusing foreign files."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dsbra.errors import StateError
from dsbra.policy import state as state_mod
from dsbra.policy.api import BlockState
from dsbra.policy.state import load_state, save_state


def sample(ids):
    k = len(ids)
    return BlockState(block_ids=ids, y=np.linspace(0, 1, k), n=np.arange(k),
                      base_replication=np.full(k, 3), file_index=np.arange(k) // 2,
                      idle_rounds=np.arange(k) % 4, round=42)


@pytest.mark.parametrize("ids", [np.array([1073741825, 1073741826, 7], np.int64),
                                 np.array(["b1", "b2", "b3"], dtype=object)])
def test_round_trip(tmp_path, ids):
    path = tmp_path / "state.parquet"
    save_state(path, sample(ids))
    got = load_state(path)
    want = sample(ids)
    assert got.round == 42
    for f in ("block_ids", "y", "n", "base_replication", "file_index", "idle_rounds"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    assert [p.name for p in tmp_path.iterdir()] == ["state.parquet"]  # no temp file left


def test_missing_file(tmp_path):
    assert load_state(tmp_path / "none.parquet") is None
    with pytest.raises(StateError, match="does not exist"):
        load_state(tmp_path / "none.parquet", missing_ok=False)


def test_failed_write_keeps_the_old_state(tmp_path, monkeypatch):
    path = tmp_path / "state.parquet"
    save_state(path, sample(np.array([1, 2], np.int64)))
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(state_mod.pq, "write_table", broken)
    with pytest.raises(OSError):
        save_state(path, sample(np.array([5, 6, 7], np.int64)))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["state.parquet"]


def test_other_format_version_is_refused(tmp_path):
    path = tmp_path / "state.parquet"
    save_state(path, sample(np.array([1, 2], np.int64)))
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    meta[b"dsbra.format_version"] = b"99"
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(StateError, match="format version 99"):
        load_state(path)


def test_foreign_and_corrupt_files_are_refused(tmp_path):
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), foreign)
    with pytest.raises(StateError, match="not a dsbra state file"):
        load_state(foreign)
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(StateError, match="unreadable"):
        load_state(corrupt)


def test_saved_file_is_fsynced_and_renamed(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(state_mod.os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(state_mod.os, "replace",
                        lambda a, b: (calls.append("replace"), real_replace(a, b)))
    save_state(tmp_path / "s.parquet", sample(np.array([1], np.int64)))
    assert calls == ["fsync", "replace", "fsync"]  # file, rename, directory


def _write_version_1(path, ids):
    """A state file as dsbra's format version 1 wrote it (the daemon's ids as strings)."""
    st = sample(np.array(ids, dtype=object))
    table = pa.table({"block_id": pa.array(ids, pa.string()), "y": st.y, "n": st.n,
                      "base_replication": st.base_replication, "file_index": st.file_index,
                      "idle_rounds": st.idle_rounds})
    pq.write_table(table.replace_schema_metadata({b"dsbra.format_version": b"1",
                                                  b"dsbra.round": b"42"}), path)
    return st


def test_version_1_block_names_are_migrated_to_their_numbers(tmp_path):
    path = tmp_path / "state.parquet"
    want = _write_version_1(path, ["blk_1073741825", "blk_-9223372036854775792", "blk_7"])
    got = load_state(path)
    assert got.block_ids.dtype == np.int64
    assert list(got.block_ids) == [1073741825, -9223372036854775792, 7]
    assert got.round == 42 and got.format_version == 2
    for f in ("y", "n", "base_replication", "file_index", "idle_rounds"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    save_state(path, got)  # written back as version 2, read back unchanged
    assert pq.read_schema(path).metadata[b"dsbra.format_version"] == b"2"
    np.testing.assert_array_equal(load_state(path).block_ids, got.block_ids)


@pytest.mark.parametrize("ids", [["blk_1", "b2"], ["blk_1", "blk_99999999999999999999"]])
def test_version_1_ids_that_are_not_all_block_names_stay_strings(tmp_path, ids):
    path = tmp_path / "state.parquet"
    _write_version_1(path, ids)
    got = load_state(path)
    assert got.block_ids.dtype == object and list(got.block_ids) == ids


def test_version_2_string_ids_are_not_migrated(tmp_path):
    path = tmp_path / "state.parquet"
    save_state(path, sample(np.array(["blk_1", "blk_2"], dtype=object)))
    assert list(load_state(path).block_ids) == ["blk_1", "blk_2"]


def test_a_state_of_several_read_batches_round_trips(tmp_path):
    path = tmp_path / "state.parquet"
    rows = 3 * state_mod._BATCH_ROWS + 5
    want = sample(np.arange(rows, dtype=np.int64) * 3 - 7)
    save_state(path, want)
    got = load_state(path)
    for f in ("block_ids", "y", "n", "base_replication", "file_index", "idle_rounds"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
