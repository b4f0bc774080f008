"""What benchmarks/replication_changes.py reports (dsbra.bench.churn), on committed real result
sets (docs/benchmark.md 6.10)."""

import subprocess
import sys

from repo_scripts import ROOT

from dsbra.bench.churn import churn_by_run, sent_changes

RESULTS = ROOT / "benchmarks" / "results"


def test_a_runs_raises_and_lowerings_are_read_from_its_daemon_log():
    run = RESULTS / "bench-hotspot-long" / "dsbra-amshare0.75" / "rep1"
    changes = sent_changes(run / "daemon.log")
    assert [(c["round"], c["file"].rsplit("/", 1)[1], c["old"], c["new"]) for c in changes] == [
        (2, "part-00006", 2, 4), (9, "part-00010", 2, 4), (9, "part-00011", 2, 4),
        (12, "part-00011", 4, 3), (14, "part-00011", 3, 2)]
    assert changes[-1]["wall_s"] > changes[0]["wall_s"]


def test_churn_counts_the_first_lowering_after_a_raise_and_a_raise_after_that():
    rows = churn_by_run([RESULTS / "bench-hotspot-long"])
    rep1, rep2 = rows[0], rows[1]
    # the hot file (58 of 60 jobs) is raised and kept; part-00011 (9 jobs) is lowered 3 rounds
    # after its raise, when no job reading it was still to be submitted
    assert rep1["raised"] == [f"/bench/grep/part-000{n}" for n in ("06", "10", "11")]
    assert rep1["lowered_after_rounds"] == {"/bench/grep/part-00011": 3}
    assert rep1["jobs_reading_after_lowering"] == {"/bench/grep/part-00011": 0}
    assert rep1["jobs_after_lowering"] == {"/bench/grep/part-00011": 2}  # of other files
    assert rep1["jobs_reading"]["/bench/grep/part-00006"] == 58 == rep1["hottest_jobs"]
    # part-00010: 2->3 in round 9, 3->2 in round 12, 2->4 in round 13
    assert rep2["raised_again"] == ["/bench/grep/part-00010"]
    assert rep2["lowered_after_rounds"]["/bench/grep/part-00010"] == 3


def test_a_directory_without_a_schedule_is_a_usage_error():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "replication_changes.py"),
                           str(RESULTS / "bench-hotspot-long" / "report")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no schedule.json" in proc.stderr
    assert "Traceback" not in proc.stderr
