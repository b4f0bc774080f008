"""The grep data set's pure parts: line format, determinism, sizes (writing it to HDFS runs in
tests/integration/test_bench_cluster.py)."""

from __future__ import annotations

import pytest

import dsbra.bench.data as data_module

from dsbra.bench.data import LINE_BYTES, DatasetPlan, file_content, grep_block
from dsbra.cluster.jobs import PRINTABLE
from dsbra.errors import InputError


def test_lines_have_the_hive_grep_format_with_running_row_ids():
    data = grep_block(2000, seed=5, index=3, first_row=6000)
    lines = data.split(b"\n")[:-1]
    assert len(data) == 2000 * LINE_BYTES and len(lines) == 2000
    allowed = set(PRINTABLE.encode())
    for i, line in enumerate(lines):
        key, rest = line.split(b"\t")
        assert len(key) == 10 and len(rest) == 90 and rest[:10] == b"%010d" % (6000 + i)
        assert set(key) <= allowed and set(rest[10:]) <= allowed


def test_a_file_depends_only_on_seed_and_index():
    plan = DatasetPlan(total_bytes=8 << 20, block_bytes=1 << 20, seed=1)
    assert file_content(plan, 2) == file_content(plan, 2) != file_content(plan, 3)
    other_seed = DatasetPlan(total_bytes=8 << 20, block_bytes=1 << 20, seed=2)
    assert file_content(other_seed, 2) != file_content(plan, 2)


def test_xyz_is_planted_once_per_match_every_records(monkeypatch):
    monkeypatch.setattr(data_module, "MATCH_EVERY", 100)  # the real 108,299 needs 100 MB to see
    lines = grep_block(20_000, seed=0).split(b"\n")
    found = sum(b"XYZ" in line for line in lines)
    assert 150 < found < 260  # 200 planted, about 2 by chance in the filler


def test_plan_fits_whole_lines_in_one_block():
    plan = DatasetPlan(total_bytes=2 << 30, block_bytes=64 << 20)
    assert plan.files == 32 and plan.file_bytes <= 64 << 20 < plan.file_bytes + LINE_BYTES
    assert plan.file_path(7) == "/bench/grep/part-00007"


@pytest.mark.parametrize("fields, message", [
    (dict(total_bytes=1 << 20, block_bytes=2 << 20), "smaller than one block"),
    (dict(block_bytes=1000), "block-size"),
    (dict(path="bench"), "absolute"),
    (dict(replication=0), "replication"),
])
def test_bad_plans_are_input_errors(fields, message):
    with pytest.raises(InputError, match=message):
        DatasetPlan(**fields)
