"""`dsbra report` on committed simulator result sets (the same schema as a real replay's)."""

from __future__ import annotations

import os
import shutil
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsbra.cli import cli
from dsbra.errors import InputError
from dsbra.report.paper import captured_interval, paired_difference, report
from dsbra.report.runs import arm_table, find_runs

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
SIM = RESULTS / "sim-paper-h1"
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
    table = md.split("## Against static, paired by repetition")[0]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines()
            if line.startswith("| ") and " | 5 | " in line}
    assert set(rows) == {"static", "dsbra", "oracle", "scarlett"}
    # the captured share is 100% for the oracle itself and 0% for the baseline
    assert rows["oracle"].endswith("| 100 | 100 |") and rows["static"].endswith("| 0 | 0 |")
    assert "| mean job response time | -13% |" in md and "| extra storage, max | 27% |" in md
    for png in ("response-cdf.png", "locality-by-bin.png", "delay-by-bin.png",
                "storage-over-time.png"):
        assert f"![{png}]({png})" in md and (tmp_path / png).stat().st_size > 0


def test_arms_against_static_are_paired_by_repetition(tmp_path):
    arms = find_runs(ARMS)
    # by hand: seed<k> of the oracle minus seed<k> of static, over the five seeds, as % of static
    by_seed = {a: {r.path.name: r.metrics()["mean_response_s"] for r in arms[a]} for a in ("static", "oracle")}
    diffs = [by_seed["oracle"][k] - by_seed["static"][k] for k in sorted(by_seed["static"])]
    mean, low, high, pairs = paired_difference(arms, "oracle", "static", "mean_response_s", relative=True)
    assert pairs == 5
    assert mean == pytest.approx(100 * statistics.fmean(diffs) / statistics.fmean(by_seed["static"].values()))
    assert low < mean < high
    # the oracle captures all of its own gain, with no spread; the baseline none of it
    assert captured_interval(arms, "oracle", "static", "oracle")[:3] == pytest.approx((100, 100, 100))
    assert captured_interval(arms, "static", "static", "oracle")[:3] == pytest.approx((0, 0, 0))
    md = report(ARMS, tmp_path).read_text()
    section = md.split("## Against static, paired by repetition")[1].split("## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and " | 5 | " in line]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == ["dsbra", "oracle", "scarlett"]


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


def test_a_captured_share_without_an_interval_says_why(tmp_path):
    # the real 3-repetition arms of 2026-11-26: in rep1 the oracle was slower than static, and
    # over the three its gain is not separated from 0, so no finite interval holds the share
    # (a bootstrap used to print "nan [nan, nan]")
    real = RESULTS / "bench-hotspot-amshare0.75"
    dirs = [real / f"{a}-amshare0.75" for a in ("static", "dsbra", "oracle")]
    share, low, high, n = captured_interval(find_runs(dirs), "dsbra-amshare0.75", "static-amshare0.75",
                                            "oracle-amshare0.75")
    assert n == 3 and low is None and high is None and share < 0
    md = report(dirs, tmp_path,
                arm="dsbra-amshare0.75", baseline="static-amshare0.75", oracle="oracle-amshare0.75").read_text()
    assert "(unbounded: the oracle's gain is not separated from 0)" in md and "nan" not in md


def test_the_daemons_cost_is_its_cpu_per_round_and_its_share_of_the_machine(tmp_path):
    """Arms whose runs recorded a daemon's CPU (`bench replay`'s summary.json) get a row; the
    others none."""
    import json

    from dsbra.bench.replay import daemon_cost

    log = RESULTS / "bench-hotspot-holdout-static/dsbra-amshare0.75/rep9/daemon.log"  # 5 rounds
    for arm in ("static", "dsbra-dry-run"):
        for k, cpu_s in ((1, 2.0), (2, 3.0)):
            run = tmp_path / "runs" / arm / f"rep{k}"
            shutil.copytree(SIM / "static" / f"seed10{k - 1}", run)
            if arm != "static":
                (run / "summary.json").write_text(json.dumps(daemon_cost(cpu_s, 50.0, log)))
    md = report([tmp_path / "runs" / a for a in ("static", "dsbra-dry-run")], tmp_path / "out").read_text()
    section = md.split("## The daemon's own cost")[1].split("## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    share = [100 * c / (50 * os.cpu_count()) for c in (2.0, 3.0)]
    assert rows == [f"| dsbra-dry-run | 2 | 0.500 ± 0.141 | 5.0 ± 0.0 | 2.5 ± 0.7 | "
                    f"{statistics.fmean(share):.2f} ± {statistics.stdev(share):.2f} |"]
