"""A round that may not act: its decision lines and records say ``refused`` and why, where a
dry run's say ``dry-run`` (the line operators grep for what the daemon would have done)."""

from __future__ import annotations

import logging

from dsbra.act.apply import apply_plan
from dsbra.act.health import refusal_name
from dsbra.act.journal import Journal
from dsbra.daemon.round import decide
from dsbra.observe.window import Window
from dsbra.policy.rails import Rails

NODES = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]


def _raising_plan():
    """One hot one-block file on one node among six cold ones: the default raises it."""
    def block(bid, path, node, tasks, delayed, delay):
        return {"block_id": bid, "nodes": [node], "default_replicas": 1, "tasks": tasks,
                "delayed_tasks": delayed, "delay_s": delay, "path": path}

    res = decide(Window.from_document({
        "params": {"delay_threshold_s": 10.0}, "live_nodes": NODES,
        "blocks": [block("blk_1", "/hot", NODES[0], 12, 8, 60.0),
                   *(block(f"blk_{2 + i}", f"/cold-{i}", NODES[1 + i % 3], 1, 0, 0.0)
                     for i in range(6))]}),
        None, {}, profile=None, params={}, rails=Rails(), file_bytes={}, stored_bytes=1 << 40)
    assert [str(p) for p in res.plan.paths[res.plan.target > res.plan.current]] == ["/hot"]
    return res


def _decision_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("decision ")]


def test_a_refused_round_says_refused_and_its_refusal_and_sends_nothing(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="dsbra.act.apply")
    res = _raising_plan()
    journal = Journal.open(tmp_path / "journal.jsonl")
    refused = refusal_name("safe-mode: the NameNode is in safe mode")
    out = apply_plan(res.plan, res.ri.node_names, journal, actor=None, round_=4, apply=False,
                     refused=refused)
    assert [(d["file"], d["outcome"], d["refusal"]) for d in out] == [("/hot", "refused", "safe-mode")]
    [line] = _decision_lines(caplog)
    assert line.startswith("decision round=4 file=/hot replication=1->") and line.endswith(
        "outcome=refused refusal=safe-mode"), line
    assert journal.actions == {}  # nothing journaled, nothing sent (actor None would fail)


def test_a_dry_run_says_dry_run_and_names_no_refusal(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="dsbra.act.apply")
    res = _raising_plan()
    out = apply_plan(res.plan, res.ri.node_names, Journal.open(tmp_path / "j.jsonl"), actor=None,
                     round_=1, apply=False)
    assert [(d["outcome"], "refusal" in d) for d in out] == [("dry-run", False)]
    [line] = _decision_lines(caplog)
    assert line.endswith("outcome=dry-run"), line


def test_a_refusals_name_is_one_token():
    assert refusal_name("paused: operator (resume with dsbra resume)") == "paused"
    assert refusal_name("scheduler FairScheduler: no delay-scheduling signal") == "scheduler_FairScheduler"
