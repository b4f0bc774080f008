"""The Capacity Scheduler's reported locality skips (dsbra.observe.activities), from an
app-activities reply captured on the bundled cluster (tests/fixtures/capacity-3.4.2/validate,
its README says how), and what the attribution makes of them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dsbra.observe.activities import OFF_SWITCH_DELAY, locality_skips
from dsbra.signals import AttributionParams, Containers, MapTasks, attribute

REPLY = (Path(__file__).parents[2] / "fixtures" / "capacity-3.4.2" / "validate"
         / "app-activities-application_1795621587904_0001.json")


def test_the_off_switch_delay_attempts_of_a_captured_reply_are_the_skips():
    reply = json.loads(REPLY.read_text())
    attempts = reply["appActivities"]["allocations"]
    skips = locality_skips(reply)
    # 16 attempts kept, 5 of them the off-switch delay, all on node 10.93.0.13, two of them in
    # one millisecond (a heartbeat offering the node again)
    assert len(attempts) == 16 and len(skips) == 5
    assert {h for _, h in skips} == {"10.93.0.13"}
    assert sorted(ms for ms, _ in skips) == [1795621736754, 1795621736754, 1795621736755,
                                             1795621737756, 1795621738760]
    assert sum(json.dumps(a).count(OFF_SWITCH_DELAY) for a in attempts) == 5


def test_a_malformed_reply_has_no_skips():
    for reply in (None, [], {"appActivities": None}, {"appActivities": {"allocations": "x"}},
                  {"appActivities": {"allocations": [{"timestamp": "soon"}, 7]}}):
        assert locality_skips(reply) == []


def _one_task(app: int = 0):
    """A map of application ``app`` scheduled at 0 s, launched at 6 s on node 0, which holds
    its split; nodes 1 and 2 are full all along (no room anywhere else to infer a decline)."""
    tasks = MapTasks(np.array([0], np.int64), np.array([6000], np.int64), np.array([0], np.int32),
                     np.array([1024], np.int64), np.array([0, 1], np.int64),
                     np.array([0], np.int32), np.array([app], np.int32))
    full = np.array([[n, -10_000, 30_000] for n in (0, 0, 1, 1, 2, 2)], np.int64)
    return tasks, Containers(full[:, 0].astype(np.int32), full[:, 1], full[:, 2],
                             np.full(6, 1024, np.int64), np.array([1, 1, 1, 1, 1, 1], np.int32))


P = AttributionParams(delay_threshold_s=4.0, grace_s=2.0, settle_s=2.0, passed_over=False)
CAP = np.array([2048, 2048, 2048])


def test_a_reported_skip_of_another_node_while_the_map_waits_is_delay():
    tasks, cont = _one_task()
    assert not attribute(tasks, cont, CAP, P, end_ms=30_000)[1][0]  # nothing to infer from
    delay, delayed, *_ = attribute(tasks, cont, CAP, P, end_ms=30_000,
                                   reported=np.array([[0, 2, 1500]]))
    assert delayed[0] and delay[0] == 4.0  # 4.5 s from the skip to the launch, capped at D


def test_a_reported_skip_of_a_replica_node_or_by_another_application_is_not():
    tasks, cont = _one_task()
    for row in ([0, 0, 1500], [1, 2, 1500], [0, 2, 7000]):  # its own node, app 1, after launch
        assert not attribute(tasks, cont, CAP, P, end_ms=30_000, reported=np.array([row]))[1][0]
