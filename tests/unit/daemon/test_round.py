"""The daemon's round core: journal base wins, cooling rows added, history kept, never below base."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from dsbra.daemon import round as round_mod
from dsbra.daemon.round import block_numbers, decide, merge_state, top_hot_files
from dsbra.errors import InputError
from dsbra.observe.window import FileBlocks, Window
from dsbra.policy.api import BlockState
from dsbra.policy.rails import Rails

NODES = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def _doc(blocks):
    """A window as `dsbra observe --json` would write it."""
    return Window.from_document({"params": {"delay_threshold_s": 10.0}, "live_nodes": NODES,
                                 "blocks": blocks})


def _block(bid, path, nodes, tasks=0, delayed=0, delay=0.0):
    return {"block_id": bid, "nodes": nodes, "default_replicas": len(nodes), "tasks": tasks,
            "delayed_tasks": delayed, "delay_s": delay, "path": path}


def test_a_raised_file_not_read_is_added_and_lowered_to_its_journal_base():
    doc = _doc([_block("blk_2", "/cold", ["10.0.0.2"], tasks=1)])
    raised = FileBlocks(3, np.array([0]), np.array([100]), ["blk_1"], [NODES])
    doc = doc.with_cooling({"/hot": raised, "/cold": None}, {"/hot": 1})
    assert list(doc.block_ids) == ["blk_2", "blk_1"]
    assert doc.tasks[1] == 0 and doc.replication[1] == 3 and doc.block_bytes[1] == 100
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


def test_block_names_become_hdfs_numeric_ids():
    doc = _doc([_block("blk_1073741825", "/a", ["10.0.0.1"], tasks=1),
                _block("blk_-9223372036854775792", "/b", ["10.0.0.2"])])
    res = decide(doc, None, {}, profile=None, params={}, rails=Rails(),
                 file_bytes={"/a": 100, "/b": 100})
    assert res.ri.block_ids.dtype == np.int64 and res.state.block_ids.dtype == np.int64
    assert list(res.ri.block_ids) == [1073741825, -9223372036854775792]
    with pytest.raises(InputError, match="block id b7 is not an HDFS block name"):
        block_numbers(np.array(["blk_1", "b7"], dtype=object))


def test_the_state_of_numeric_ids_carries_the_history_into_the_next_round():
    doc = _doc([_block("blk_5", "/a", ["10.0.0.1"], tasks=2, delayed=2, delay=20.0)])
    first = decide(doc, None, {}, profile=None, params={}, rails=Rails(), file_bytes={})
    again = decide(doc, first.state, {}, profile=None, params={}, rails=Rails(), file_bytes={})
    assert first.state.n[0] == 1 and again.state.n[0] == 2 and again.state.round == 2


def test_merge_of_numeric_ids_keeps_unseen_rows_in_any_order(monkeypatch):
    monkeypatch.setattr(round_mod, "_SEEN_CHUNK", 2)  # several search chunks
    old = BlockState(block_ids=np.array([9, 4, 7, 1, 3], np.int64), y=[0.9, 0.4, 0.7, 0.1, 0.3],
                     n=[9, 4, 7, 1, 3], base_replication=[1, 1, 1, 1, 1], file_index=[0] * 5,
                     idle_rounds=[0] * 5, round=4)
    new = BlockState(block_ids=np.array([7, 2, 9], np.int64), y=[1.0, 0.2, 2.0], n=[8, 1, 10],
                     base_replication=[2, 2, 2], file_index=[0, 1, 2], idle_rounds=[0] * 3,
                     round=5)
    out = merge_state(new, old)
    assert out.block_ids.dtype == np.int64 and list(out.block_ids) == [7, 2, 9, 4, 1, 3]
    assert list(out.y) == [1.0, 0.2, 2.0, 0.4, 0.1, 0.3] and list(out.n) == [8, 1, 10, 4, 1, 3]
    assert list(out.file_index) == [-1] * 6  # a file row means nothing across rounds
    assert merge_state(new, dataclasses.replace(new, round=4)) is new


def test_top_hot_files_are_the_highest_rf_blocks_read_in_the_window():
    rf = np.array([0.5, 0.9, 0.1, 0.9, 0.7, 0.0])
    tasks = np.array([1, 2, 1, 0, 3, 0])
    res = SimpleNamespace(decision=SimpleNamespace(rf=rf), paths=[f"/f{i}" for i in range(6)],
                          ri=SimpleNamespace(block_ids=np.arange(10, 16), tasks=tasks,
                                             delayed_tasks=tasks))
    top = top_hot_files(res, 3)
    # the three highest: rows 1 and 3 (0.9, lower row first), then 4; row 3 was not read
    assert [(t["file"], t["block_id"], t["rf"]) for t in top] == [("/f1", "blk_11", 0.9),
                                                                 ("/f4", "blk_14", 0.7)]
    assert [t["file"] for t in top_hot_files(res, 10)] == ["/f1", "/f4", "/f0", "/f2"]


def test_split_state_keeps_the_rows_of_the_round_aligned_and_the_others_apart():
    old = BlockState(block_ids=np.array([9, 4, 7], np.int64), y=[0.9, 0.4, 0.7], n=[9, 4, 7],
                     base_replication=[3, 1, 2], file_index=[0, 1, 2], idle_rounds=[1, 2, 3],
                     round=6)
    doc = _doc([_block("blk_7", "/a", ["10.0.0.1"]), _block("blk_8", "/b", ["10.0.0.2"])])
    ri = decide(doc, None, {}, profile=None, params={}, rails=Rails(), file_bytes={}).ri
    aligned, unseen = round_mod.split_state(old, ri)
    assert list(aligned.y) == [0.7, 0.0] and list(aligned.n) == [7, 0] and aligned.round == 6
    assert list(unseen.block_ids) == [9, 4] and list(unseen.idle_rounds) == [1, 2]
    covered = dataclasses.replace(ri, block_ids=np.array([7, 9]))
    assert list(round_mod.split_state(old, covered)[1].block_ids) == [4]
    assert round_mod.split_state(None, ri)[1] is None


def test_a_round_keeps_the_history_of_state_rows_it_did_not_see():
    old = BlockState(block_ids=np.array([9, 5], np.int64), y=[0.9, 0.5], n=[9, 5],
                     base_replication=[3, 1], file_index=[0, 1], idle_rounds=[1, 2], round=6)
    doc = _doc([_block("blk_5", "/a", ["10.0.0.1"], tasks=1)])
    res = decide(doc, old, {}, profile=None, params={}, rails=Rails(), file_bytes={})
    assert list(res.state.block_ids) == [5, 9] and res.state.round == 7
    assert res.state.n[0] == 6 and res.state.y[1] == 0.9 and res.state.idle_rounds[1] == 1


@pytest.mark.parametrize("name, signal, rule", [("dare", "nonlocal_tasks", "nonlocal"),
                                                ("scarlett", "peak_readers", "readers")])
def test_a_baseline_runs_in_the_daemon_round_on_its_own_signal(name, signal, rule):
    hot = _block("blk_1", "/hot", ["10.0.0.1"], tasks=3)
    hot[signal] = 3
    doc = _doc([hot, _block("blk_2", "/cold", ["10.0.0.2"], tasks=1)])
    params = {"p": 1.0} if name == "dare" else {}
    res = decide(doc, None, {}, profile=None, params=params, rails=Rails(),
                 file_bytes={"/hot": 100, "/cold": 100}, stored_bytes=10_000,
                 policy_name=name)
    rows = {str(p): (int(c), int(t)) for p, c, t in
            zip(res.plan.paths, res.plan.current, res.plan.target)}
    assert list(rows) == ["/hot"] and rows["/hot"][1] > rows["/hot"][0] == 1
    assert res.plan.to_records(res.ri.node_names)[0]["reason"]["rule"] == rule


def test_the_heat_document_carries_each_nodes_dnavg_and_the_raised_files():
    doc = _doc([_block("blk_1", "/hot", ["10.0.0.1"], tasks=8, delayed=6, delay=60.0)]
               + [_block(f"blk_{i}", f"/cold-{i}", ["10.0.0.2", "10.0.0.3"], tasks=1)
                  for i in range(2, 8)])
    res = decide(doc, None, {}, profile=None, params={}, rails=Rails(), file_bytes={})
    heat = round_mod.heat_document(res, ["/hot"], [], round_=4, generated_ms=1_700_000_000_000,
                                   interval_s=30, lead_s=1.5)
    assert heat["format"] == "dsbra-heat" and heat["version"] == 1
    assert heat["round"] == 4 and heat["generated_ms"] == 1_700_000_000_000
    assert heat["interval_ms"] == 30_000 and heat["lead_ms"] == 1_500  # the plugin's max age
    assert heat["raised"] == ["/hot"] and heat["lowered"] == [] and heat["lowering"] == {}
    assert heat["blocks"] == {"10.0.0.1": 1, "10.0.0.2": 6, "10.0.0.3": 6}
    raising = res.plan.target > res.plan.current
    assert list(res.plan.paths[raising]) == ["/hot"]
    assert heat["rf"] == {"/hot": round(float(res.plan.rf[raising][0]), 6)}
    assert heat["nodes"] == {n: round(float(h), 6)
                             for n, h in zip(res.ri.node_names, res.decision.dn_avg)}
    # the hot block's holder is the hottest node
    assert max(heat["nodes"], key=heat["nodes"].get) == "10.0.0.1"


def test_the_heat_document_lists_each_lowered_files_new_replication_and_block_holders():
    """The plugin orders a deletion by heat only for a block whose holders and replication
    match a lowering: each block of the file that will lose a replica, holders by name."""
    doc = _doc([_block("blk_3", "/cold", ["10.0.0.3"], tasks=1)])
    raised = FileBlocks(3, np.array([0, 100]), np.array([100, 200]), ["blk_1", "blk_2"],
                        [["10.0.0.3", "10.0.0.1", "10.0.0.2"], ["10.0.0.2", "10.0.0.1"]])
    doc = doc.with_cooling({"/hot": raised}, {"/hot": 1})
    res = decide(doc, None, {"/hot": 1}, profile=None, params={}, rails=Rails(),
                 file_bytes={"/hot": 200, "/cold": 100})
    lowering = res.plan.target < res.plan.current
    assert list(res.plan.paths[lowering]) == ["/hot"] and res.plan.target[lowering][0] == 2
    heat = round_mod.heat_document(res, [], ["/hot"], round_=5, generated_ms=1, interval_s=5)
    # blk_2, already on two nodes, loses nothing at replication 2: not listed
    assert heat["lowering"] == {"/hot": {"replication": 2,
                                         "holders": [["10.0.0.1", "10.0.0.2", "10.0.0.3"]]}}
    assert heat["lowered"] == ["/hot"] and heat["lead_ms"] == 0
    assert set(heat["lowering"]["/hot"]["holders"][0]) <= set(heat["nodes"])
    # a file the plan lowers but the daemon does not act on (dry run, refused): not listed
    quiet = round_mod.heat_document(res, [], [], round_=5, generated_ms=1, interval_s=5)
    assert quiet["lowering"] == {}


def test_an_off_round_takes_every_raised_file_straight_to_base_and_raises_nothing():
    """A switchback's off period (issue 45): the hot file the policy would raise stays, a file
    at 3 over its base 1 goes to 1 in one round, through the rails (a protected file stays)."""
    doc = _doc([_block("blk_1", "/hot", ["10.0.0.1"], tasks=8, delayed=6, delay=60.0),
                _block("blk_7", "/raised", NODES, tasks=1), _block("blk_8", "/kept", NODES, tasks=1)]
               + [_block(f"blk_{i}", f"/cold-{i}", ["10.0.0.2", "10.0.0.3"], tasks=1)
                  for i in range(2, 7)])
    base = {"/raised": 1, "/kept": 1}
    sizes = {}
    on = decide(doc, None, base, profile=None, params={}, rails=Rails(), file_bytes=sizes,
                stored_bytes=10**12)
    assert "/hot" in {str(p) for p, c, t in zip(on.plan.paths, on.plan.current, on.plan.target)
                      if t > c}
    off = decide(doc, None, base, profile=None, params={}, rails=Rails(protected=("/kept",)),
                 file_bytes=sizes, stored_bytes=10**12, off=True)
    rows = {str(p): (int(c), int(t)) for p, c, t in
            zip(off.plan.paths, off.plan.current, off.plan.target)}
    assert rows == {"/raised": (3, 1), "/kept": (3, 3)}
    recs = {r["file"]: r for r in off.plan.to_records(off.ri.node_names)}
    assert recs["/raised"]["reason"]["rule"] == "switched-off"
    # the policy still learned from the window: its state counts the hot blocks' reads
    assert off.state.n.sum() == on.state.n.sum() > 0
