"""`dsbra report` on committed simulator result sets (the same schema as a real replay's)."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsbra.cli import cli
from dsbra.errors import InputError
from dsbra.report import arm_table, find_runs, report

SIM = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "sim-paper-h1"
ARMS = [SIM / a for a in ("static", "dsbra", "oracle", "scarlett")]


def test_arms_are_directories_and_seeds_their_repetitions():
    arms = find_runs(ARMS)
    assert list(arms) == ["static", "dsbra", "oracle", "scarlett"]
    assert all(len(runs) == 5 for runs in arms.values())
    table = arm_table(arms)
    # every block on every node: 9 extra replicas of each two (20 nodes, replication 2)
    assert statistics.fmean(table["oracle"]["extra_storage_mean"]) == pytest.approx(900)
    assert statistics.fmean(table["static"]["extra_storage_max"]) == 0


def test_report_has_the_table_the_claims_and_the_figures(tmp_path):
    md = report(ARMS, tmp_path).read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines()
            if line.startswith("| ") and " | 5 | " in line}
    assert set(rows) == {"static", "dsbra", "oracle", "scarlett"}
    # the captured share is 100% for the oracle itself and 0% for the baseline
    assert rows["oracle"].endswith("| 100 | 100 |") and rows["static"].endswith("| 0 | 0 |")
    assert "| mean job response time | -13% |" in md and "| extra storage, max | 27% |" in md
    for png in ("response-cdf.png", "locality-by-bin.png", "delay-by-bin.png",
                "storage-over-time.png"):
        assert f"![{png}]({png})" in md and (tmp_path / png).stat().st_size > 0


def test_without_the_claims_arms_it_says_so(tmp_path):
    md = report([SIM / "scarlett"], tmp_path).read_text()
    assert "No claims table: it needs the arms `dsbra` and `static`; found scarlett" in md


def test_bad_input_is_one_line(tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["report", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")],
                        standalone_mode=False)
    assert isinstance(res.exception, InputError) and "no such results directory" in str(res.exception)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no run found"):
        find_runs([tmp_path / "empty"])
    broken = tmp_path / "broken" / "seed1"
    shutil.copytree(SIM / "static" / "seed100", broken)
    (broken / "tasks.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="not a readable result set"):
        find_runs([tmp_path / "broken"])
