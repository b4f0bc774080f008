"""benchmarks/sim_churn.py and its simulator churn counts (dsbra.bench.churn) on a small grid
(docs/benchmark.md 6.10)."""

import collections
import json
import subprocess
import sys

from repo_scripts import ROOT

from dsbra.bench.churn import evaluate, hot_spot_schedule

FIT = ROOT / "benchmarks" / "results" / "bench-fb2009-40-quiet" / "sim-vs-real.json"


def test_the_churn_counts_are_bounded_by_the_copies_and_removals(tmp_path):
    row = evaluate(json.loads(FIT.read_text()), 60.0, schedules=1, seeds=2, max_am_share=0.75,
                   out=tmp_path)
    assert row["runs"] == 2
    assert row["removed"] > 0
    assert 0 <= row["lowered_with_later_readers"] <= row["removed"]
    assert 0 <= row["raised_after_lowering"] <= row["added"]
    assert set(row["reactive"]) == {"8", "24"}  # the yardsticks, each with its storage
    assert list(tmp_path.iterdir()) == []  # the schedules are rebuilt from their seeds


def test_a_schedules_hot_file_rotates_with_the_hot_period():
    def most_read_by_minute(period):
        reads = collections.defaultdict(collections.Counter)
        for job in hot_spot_schedule(0, period)["jobs"]:
            reads[int(job["submit_s"] // 60)].update(job["inputs"])
        return {c.most_common(1)[0][0] for c in reads.values()}

    assert len(most_read_by_minute(1e6)) == 1
    assert len(most_read_by_minute(60.0)) > 1


def test_a_missing_fit_is_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sim_churn.py"), "--out",
                           str(tmp_path), "--fit", str(tmp_path / "none.json")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
