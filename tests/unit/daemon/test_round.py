"""The daemon's round core: journal base wins, cooling rows added, history kept, never below base."""

from __future__ import annotations

import numpy as np

from dsbra.daemon.round import add_cooling_blocks, decide, merge_state
from dsbra.observe.window import FileBlocks
from dsbra.policy.api import BlockState
from dsbra.policy.rails import Rails

NODES = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def _doc(blocks):
    return {"params": {"delay_threshold_s": 10.0}, "live_nodes": NODES, "blocks": blocks}


def _block(bid, path, nodes, tasks=0, delayed=0, delay=0.0):
    return {"block_id": bid, "nodes": nodes, "default_replicas": len(nodes), "tasks": tasks,
            "delayed_tasks": delayed, "delay_s": delay, "path": path}


def test_a_raised_file_not_read_is_added_and_lowered_to_its_journal_base():
    doc = _doc([_block("blk_2", "/cold", ["10.0.0.2"], tasks=1)])
    raised = FileBlocks(3, np.array([0]), np.array([100]), ["blk_1"], [NODES])
    add_cooling_blocks(doc, {"/hot": raised, "/cold": None}, {"/hot": 1})
    assert [b["block_id"] for b in doc["blocks"]] == ["blk_2", "blk_1"]
    assert doc["blocks"][1]["tasks"] == 0 and doc["blocks"][1]["default_replicas"] == 3
    res = decide(doc, None, {"/hot": 1}, profile=None, params={}, rails=Rails(),
                 file_bytes={"/hot": 100, "/cold": 100})
    assert res.state.base_replication[1] == 1  # the journal's base, not the observed 3
    rows = {str(p): (int(c), int(t)) for p, c, t in
            zip(res.plan.paths, res.plan.current, res.plan.target)}
    assert rows == {"/hot": (3, 2)}  # an unread round drops one replica, toward base 1
    rec = res.plan.to_records(res.ri.node_names)[0]
    assert rec["reason"]["rule"] in ("cold", "cool")


def test_merge_keeps_the_history_of_blocks_this_round_did_not_see():
    old = BlockState(block_ids=np.array(["a", "b"], dtype=object), y=[0.5, 2.0], n=[3, 4],
                     base_replication=[1, 2], file_index=[0, 1], idle_rounds=[0, 0], round=4)
    new = BlockState(block_ids=np.array(["b", "c"], dtype=object), y=[1.0, 0.1], n=[5, 1],
                     base_replication=[2, 1], file_index=[0, 1], idle_rounds=[0, 0], round=5)
    out = merge_state(new, old)
    assert list(out.block_ids) == ["b", "c", "a"] and out.round == 5
    assert list(out.y) == [1.0, 0.1, 0.5] and list(out.base_replication) == [2, 1, 1]
