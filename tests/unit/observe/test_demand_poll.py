"""The live demand poll's reading of the ResourceManager's and the ApplicationMaster's replies,
captured from the bundled cluster (tests/fixtures/demand, tools/capture_demand_fixture.py)."""

from __future__ import annotations

import json
from pathlib import Path

from dsbra.observe.demand import ask_signature, pending_indexes, wants_containers

POLL = json.loads((Path(__file__).parents[2] / "fixtures" / "demand" / "hadoop-3.4.2" / "poll.json").read_text())


def test_the_asks_say_who_still_wants_containers():
    asking = {a["id"]: wants_containers(ask_signature(a)) for a in POLL["apps"]}
    assert all(asking.values()) and len(asking) == 2
    sig = ask_signature(POLL["apps"][0])
    assert (20, "*", 3) in sig and sig == tuple(sorted(sig))


def test_pending_maps_are_the_scheduled_tasks_by_index():
    pending = {app: pending_indexes(tasks) for app, tasks in POLL["tasks"].items()}
    assert sorted(pending.values()) == [[0, 1, 2, 3, 4], [2, 3]]


def test_the_star_ask_can_count_more_than_the_pending_maps():
    """The MapReduce AM decrements its asks lazily (design/hadoop-notes.md): a job's ``*``
    count is above its SCHEDULED tasks for a while, so the tasks, not the asks, say which maps."""
    for app in POLL["apps"]:
        star = next(n for _, name, n in ask_signature(app) if name == "*")
        assert star >= len(pending_indexes(POLL["tasks"][app["id"]]))
    assert any(next(n for _, name, n in ask_signature(a) if name == "*") > len(pending_indexes(POLL["tasks"][a["id"]]))
               for a in POLL["apps"])


def test_a_malformed_reply_is_no_pending_map():
    assert pending_indexes([{"id": None, "state": "SCHEDULED"}, {"state": "SCHEDULED"}, "x"]) == []
    assert ask_signature({"resourceRequests": "x"}) == () and not wants_containers(ask_signature({}))
