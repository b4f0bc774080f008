"""The container-grant analysis benchmarks/container_grants.py drives (dsbra.bench.grants,
dsbra.bench.analysis) on a committed sitting (benchmarks/results/bench-hotspot-long-grants,
recorded with run_bench_matrix.py --record-grants on the bundled cluster) and on allocation
lines of that cluster's ResourceManager log."""

from __future__ import annotations

import json

import pytest

from dsbra.errors import InputError

from repo_scripts import ROOT

from dsbra.bench.analysis import classify, paired_causes
from dsbra.bench.grants import allocations, log_time_ms

RESULTS = ROOT / "benchmarks" / "results" / "bench-hotspot-long-grants"
RUNS = sorted(d for d in RESULTS.glob("*/rep*") if (d / "grants.json").exists())
#: lines of the ResourceManager's log in that sitting (FSAppAttempt at DEBUG): an AM and a map
RM_LINES = [
    "2026-11-27 15:18:12,401 DEBUG fair.FSAppAttempt: allocate: applicationAttemptId=appattempt_1795792528659_0001_"
    "000001 container=container_1795792528659_0001_01_000001 host=10.77.0.14 type=OFF_SWITCH",
    "2026-11-27 15:18:14,903 INFO fair.FSAppAttempt: a line at another level",
    "2026-11-27 15:18:16,409 DEBUG fair.FSAppAttempt: allocate: applicationAttemptId=appattempt_1795792528659_0001_"
    "000001 container=container_1795792528659_0001_01_000002 host=10.77.0.11 type=NODE_LOCAL",
    "2026-11-27 15:18:17,002 DEBUG fair.FSAppAttempt: allocate: applicationAttemptId=appattempt_1795792528659_0002_"
    "000001 container=container_1795792528659_0002_01_000001 host=10.77.0.12 type=OFF_SWITCH",
]


def test_allocations_are_read_for_the_runs_jobs_from_its_start(tmp_path):
    log = tmp_path / "resourcemanager.log"
    log.write_text("\n".join(RM_LINES) + "\n")
    rows = allocations(log, {"job_1795792528659_0001"}, since_ms=log_time_ms("2026-11-27 15:18:13,000"))
    assert rows == [[log_time_ms("2026-11-27 15:18:16,409"), "container_1795792528659_0001_01_000002", "10.77.0.11",
                     "job_1795792528659_0001", "NODE_LOCAL"]]


def test_the_sitting_recorded_grants_for_every_run():
    assert {d.parent.name for d in RUNS} >= {"static-amshare0.75", "dsbra-amshare0.75"}
    assert len(RUNS) >= 5


@pytest.mark.parametrize("run_dir", RUNS, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_map_is_matched_to_a_granted_container(run_dir):
    got = classify(run_dir)
    counts = got["by_locality_and_grant"]
    assert got["unmatched"] == 0
    assert sum(sum(c.values()) for c in counts.values()) + got["ambiguous"] == got["maps"]
    # a map in a container granted below NODE_LOCAL cannot be node-local: the scheduler found
    # no ask of the job on that node
    assert counts["node_local"]["RACK_LOCAL"] == counts["node_local"]["OFF_SWITCH"] == 0
    off = counts["rack_local"], counts["off_switch"]
    assert got["handed_on"] + got["delay_expired"] == sum(sum(c.values()) for c in off)


def test_the_committed_analysis_is_what_the_runs_give():
    doc = json.loads((RESULTS / "container-grants.json").read_text())
    assert doc["runs"] == {str(d.relative_to(RESULTS)): classify(d) for d in RUNS}
    assert set(doc["paired"]) == {"dsbra-amshare0.75"}
    assert doc["paired"] == paired_causes(doc["runs"], doc["paired_with"])


def test_pairing_names_a_missing_baseline():
    with pytest.raises(InputError, match="no such arm"):
        paired_causes({"static/rep1": {"handed_on": 1, "delay_expired": 0}}, "oracle")
