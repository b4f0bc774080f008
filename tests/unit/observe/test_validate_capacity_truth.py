"""The Capacity Scheduler's ground truth of benchmarks/validate_attribution.py (issue 22;
dsbra.bench.ground_truth), on
what the bundled Hadoop 3.4.2 cluster really logged and replied:
tests/fixtures/capacity-3.4.2/validate/ (see its README for how it was captured)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dsbra.bench import ground_truth

ROOT = Path(__file__).resolve().parents[3]
CAPTURED = ROOT / "tests" / "fixtures" / "capacity-3.4.2" / "validate"
APP = "application_1795621587904_0001"


@pytest.fixture
def utc(monkeypatch):
    """The cluster logged in UTC; the log's stamps are read in the local zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _log():
    with open(CAPTURED / "rm-debug.log") as f:
        return ground_truth.capacity_log(f, 0)


def _reply() -> dict:
    return json.loads((CAPTURED / f"app-activities-{APP}.json").read_text())


def test_an_offer_ended_without_a_try_or_a_skip_is_a_decline(utc):
    out = _log()
    # 15:48:50,188: 10.93.0.12 (512 MB free) offered in FIFO order; app 1 asks for nothing
    # ("Skip app_attempt"), app 2 gets no "assignContainers" line: it declined the node
    assert out["declines"][0] == [1795621730188, "10.93.0.12", 512, 0, "job_1795621587904_0002"]
    # 15:48:56,754-756 on 10.93.0.13: app 1 declines it in three rounds of one heartbeat, app 3
    # once, after taking a node-local container there
    assert [(d[1], d[2], d[4][-4:]) for d in out["declines"][1:]] == [
        ("10.93.0.13", 2048, "0001"), ("10.93.0.13", 1536, "0001"), ("10.93.0.13", 1024, "0001"),
        ("10.93.0.13", 1024, "0003")]
    assert len(out["heartbeats"]) == 7
    assert {t[4] for t in out["tries"]} == {"NODE_LOCAL"}
    assert {t[3] for t in out["tries"]} == {20}


def test_an_application_that_asks_for_nothing_or_takes_the_node_does_not_decline(utc):
    declined = {(d[0], d[4]) for d in _log()["declines"]}
    # app 1 logged "Skip app_attempt ... doesn't need more resource" at 15:48:50
    assert not any(job.endswith("0001") and ms < 1795621736000 for ms, job in declined)
    # app 2's node-local tries at 15:48:50,184 and ,186 were not declines
    assert (1795621730184, "job_1795621587904_0002") not in declined


def test_lines_before_the_window_are_dropped(utc):
    with open(CAPTURED / "rm-debug.log") as f:
        out = ground_truth.capacity_log(f, 1795621736000)
    assert all(row[0] >= 1795621736000 for rows in out.values() for row in rows)
    assert len(out["declines"]) == 4


def test_the_activities_reply_gives_the_off_switch_delay_skips():
    acts = ground_truth.AppActivities("http://unused")
    acts.add(APP, _reply())
    declines = ground_truth.activity_declines(acts.as_json(), 0)
    assert declines == [[1795621736754, "10.93.0.13", "job_1795621587904_0001"],
                        [1795621736754, "10.93.0.13", "job_1795621587904_0001"],
                        [1795621736755, "10.93.0.13", "job_1795621587904_0001"],
                        [1795621737756, "10.93.0.13", "job_1795621587904_0001"],
                        [1795621738760, "10.93.0.13", "job_1795621587904_0001"]]
    # the reply's other skips are not for locality
    rows = acts.as_json()["records"]["job_1795621587904_0001"]
    assert len(rows) == 16
    assert {d for *_, diags in rows for _, d in diags} >= {ground_truth.OFF_SWITCH_DELAY}


def test_a_reply_seen_twice_is_kept_once_and_alike_attempts_twice():
    acts = ground_truth.AppActivities("http://unused")
    acts.add(APP, _reply())
    acts.add(APP, _reply())
    rows = acts.as_json()["records"]["job_1795621587904_0001"]
    assert len(rows) == 16
    assert sum(1 for r in rows if r[0] == 1795621736754) == 2


def test_the_log_and_the_activities_agree_on_the_heartbeat_both_saw(utc):
    log = [(d[0], d[1], d[4]) for d in _log()["declines"] if d[4].endswith("0001")]
    acts = ground_truth.AppActivities("http://unused")
    acts.add(APP, _reply())
    act = [tuple(d) for d in ground_truth.activity_declines(acts.as_json(), 0) if d[0] <= 1795621736756]
    assert log == act
