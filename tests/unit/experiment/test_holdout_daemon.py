"""The daemon's experiment: groups recorded once and kept, held-out raises journaled and not
sent, the observed maps kept as Parquet within their retention."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from dsbra.act.apply import apply_plan
from dsbra.act.journal import Journal
from dsbra.daemon.config import load_config
from dsbra.experiment.assignment import Assignments
from dsbra.experiment.records import MAP_RECORD_SCHEMA, RecordStore, map_records, read_map_records
from dsbra.daemon.round import decide
from dsbra.errors import ConfigError, StateError
from dsbra.observe.collector import MapObservation
from dsbra.observe.window import Window
from dsbra.experiment.design import CONTROL, TREATMENT, Holdout
from dsbra.policy.rails import Rails

NODES = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
DAY_MS = 86_400_000


def test_a_file_keeps_its_first_group_across_restarts_and_fraction_changes(tmp_path):
    path = tmp_path / "experiment.jsonl"
    a = Assignments.open(path)
    h = a.holdout(0.5, seed=11)
    files = [f"/d/f{i}" for i in range(40)]
    recs = a.assign(files, h, round_=3, at_ms=1000)
    assert {r["group"] for r in recs} == {TREATMENT, CONTROL}
    assert a.assign(files[:5], h, round_=4, at_ms=2000) == []  # assigned once
    again = Assignments.open(path)  # a restart
    assert again.groups == a.groups and sum(again.counts().values()) == 40
    # a new fraction and seed: earlier files keep their group, new ones follow the new draw
    changed = again.holdout(0.9, seed=12)
    assert list(changed.is_control(files)) == [a.groups[f] == CONTROL for f in files]
    first = [json.loads(line) for line in path.read_text().splitlines()]
    assert first[0]["first_decision_ms"] == 1000 and first[0]["round"] == 3
    assert (first[0]["holdout"], first[0]["seed"]) == (0.5, 11)


def test_a_torn_last_line_is_skipped_and_a_bad_middle_line_refused(tmp_path):
    path = tmp_path / "experiment.jsonl"
    good = json.dumps({"file": "/a", "group": "control", "round": 1, "first_decision_ms": 5,
                       "holdout": 0.5, "seed": 0})
    path.write_text(good + "\n" + '{"file": "/b", "gro')
    assert Assignments.open(path).groups == {"/a": CONTROL}
    path.write_text('{"file": "/b", "group": "maybe"}\n' + good + "\n")
    with pytest.raises(StateError, match="line 1"):
        Assignments.open(path)


def _doc():
    """Two hot one-block files, each on one node, and six cold ones setting the window's mean
    low: the policy raises both hot files."""
    def block(bid, path, node, tasks, delayed, delay):
        return {"block_id": bid, "nodes": [node], "default_replicas": 1, "tasks": tasks,
                "delayed_tasks": delayed, "delay_s": delay, "path": path}

    return Window.from_document({
        "params": {"delay_threshold_s": 10.0}, "live_nodes": NODES,
        "blocks": [block("blk_1", "/hot-a", NODES[0], 12, 8, 60.0),
                   block("blk_2", "/hot-b", NODES[1], 12, 8, 60.0),
                   *(block(f"blk_{3 + i}", f"/cold-{i}", NODES[2 + i % 2], 1, 0, 0.0)
                     for i in range(6))]})


def test_a_held_out_raise_is_journaled_and_not_sent(tmp_path):
    journal = Journal.open(tmp_path / "journal.jsonl")
    holdout = Holdout(0.5, assigned={"/hot-a": CONTROL, "/hot-b": TREATMENT})
    res = decide(_doc(), None, {}, profile=None, params={}, rails=Rails(),
                 file_bytes={}, stored_bytes=1 << 40, holdout=holdout)
    assert {str(p) for p in res.plan.paths[res.plan.would_target > res.plan.current]} == {
        "/hot-a", "/hot-b"}
    out = apply_plan(res.plan, res.ri.node_names, journal, actor=None, round_=1, apply=False)
    by_file = {d["file"]: d for d in out}
    assert by_file["/hot-a"]["outcome"] == "held-out"
    assert by_file["/hot-a"]["target"] == 1 < by_file["/hot-a"]["would_target"]
    assert by_file["/hot-b"]["outcome"] == "dry-run" and by_file["/hot-b"]["target"] > 1
    lines = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert [(r["op"], r["path"]) for r in lines] == [("held-out", "/hot-a")]
    again = Journal.open(tmp_path / "journal.jsonl")
    assert again.actions == {} and again.raised_files() == {}
    assert again.held_out == {"/hot-a": by_file["/hot-a"]["would_target"]}
    # the next round holds it out at the same target: logged, not journaled again
    apply_plan(res.plan, res.ri.node_names, again, actor=None, round_=2, apply=False)
    assert len((tmp_path / "journal.jsonl").read_text().splitlines()) == 1


def _obs(i, launch_s, finish_s, path="/hot-a"):
    return MapObservation("job_1_0001", f"task_{i}", f"attempt_{i}", 1000, launch_s * 1000,
                          None if finish_s is None else finish_s * 1000, NODES[i % 4],
                          "NODE_LOCAL" if i % 2 == 0 else "RACK_LOCAL", [NODES[0]], 512,
                          path=path, start=0, length=10)


def test_map_records_pair_each_observation_with_its_attribution():
    obs = [_obs(0, 2, 9), _obs(1, 3, None, path=None)]
    rows = [{"block_id": "blk_1073741825", "local": True, "delayed": False, "delay_s": 0.0,
             "replica_local": True},
            {"block_id": None, "local": False, "delayed": True, "delay_s": 4.5,
             "replica_local": None}]
    t = map_records(obs, rows, 50_000)
    assert t.schema.equals(MAP_RECORD_SCHEMA)
    r = t.to_pylist()
    assert r[0]["block_id"] == 1073741825 and r[0]["split_local"] and r[0]["replica_local"] and r[0]["finish_ms"] == 9000
    assert r[1]["file"] is None and r[1]["finish_ms"] is None and r[1]["delay_wait_s"] == 4.5
    assert r[1]["replica_local"] is None and r[1]["scheduler_locality"] == "RACK_LOCAL" and r[0]["window_end_ms"] == 50_000
    with pytest.raises(ValueError):
        map_records(obs, rows[:1], 0)


def _table(n, end_ms):
    obs = [_obs(i, 2, 9) for i in range(n)]
    rows = [{"block_id": "blk_1", "local": True, "delayed": False, "delay_s": 0.0,
             "replica_local": True}] * n
    return map_records(obs, rows, end_ms)


def test_records_are_kept_per_round_and_pruned_by_age_then_size(tmp_path):
    store = RecordStore(tmp_path / "maps", max_age_s=2 * 86400, max_bytes=1 << 30)
    t0 = 1_700_000_000_000
    for k in range(4):  # one round a day
        assert store.write(_table(3, t0 + k * DAY_MS), t0 + k * DAY_MS) is not None
    assert store.write(_table(0, t0 + 4 * DAY_MS), t0 + 4 * DAY_MS) is None  # no maps, no file
    # after the write of day 3: days 0 is older than two days, gone
    assert [end for end, _ in store.files()] == [t0 + k * DAY_MS for k in (1, 2, 3)]
    assert read_map_records(tmp_path / "maps").num_rows == 9
    one = store.files()[0][1].stat().st_size
    store.max_bytes = 2 * one
    assert store.prune(t0 + 3 * DAY_MS) == 1  # size: the oldest goes first
    assert [end for end, _ in store.files()] == [t0 + k * DAY_MS for k in (2, 3)]
    assert sorted(os.listdir(tmp_path / "maps")) == sorted(
        {p.parent.name for _, p in store.files()})  # emptied day directories removed
    assert read_map_records(tmp_path / "nothing").num_rows == 0


def test_map_record_bytes_per_map_are_what_the_retention_doc_says(tmp_path):
    """dsbra/experiment/records.py sizes its default retention at about 60 bytes a map."""
    store = RecordStore(tmp_path / "maps", max_age_s=1e9, max_bytes=1 << 40)
    obs = [MapObservation(f"job_1700000000000_{i // 40:04d}", f"task_{i}",
                          f"attempt_1700000000000_{i // 40:04d}_m_{i % 40:06d}_0",
                          1_700_000_000_000 + 7 * i, 1_700_000_000_000 + 7 * i + 900,
                          1_700_000_000_000 + 7 * i + 5000, NODES[i % 4], "NODE_LOCAL",
                          [NODES[i % 4]], 512, path=f"/warehouse/t/part-{i % 300:05d}")
           for i in range(20_000)]
    rows = [{"block_id": f"blk_{1073741825 + i % 300}", "local": i % 3 > 0,
             "replica_local": i % 3 > 0 or i % 7 == 0, "delayed": i % 5 == 0,
             "delay_s": float(i % 5 == 0) * 3.2} for i in range(20_000)]
    path = store.write(map_records(obs, rows, 1_700_000_200_000), 1_700_000_200_000)
    assert path.stat().st_size / 20_000 < 60


def test_experiment_and_retention_settings_are_validated():
    cfg = load_config(None, env={"DSBRA_EXPERIMENT__HOLDOUT": "0.5"})
    assert cfg.experiment.holdout == 0.5 and cfg.experiment.seed == 0
    assert cfg.map_records.enabled and cfg.map_records.max_bytes == 1 << 30
    for env, word in (({"DSBRA_EXPERIMENT__HOLDOUT": "1.5"}, "experiment.holdout"),
                      ({"DSBRA_EXPERIMENT__HOLDOUT": "-0.1"}, "experiment.holdout"),
                      ({"DSBRA_MAP_RECORDS__MAX_BYTES": "0"}, "map_records"),
                      ({"DSBRA_EXPERIMENT__SHARE": "0.1"}, "experiment.share")):
        with pytest.raises(ConfigError, match=word):
            load_config(None, env=env)
    assert np.isclose(load_config(None, env={"DSBRA_EXPERIMENT__HOLDOUT": "1"}).experiment.holdout, 1)


def test_metrics_count_held_out_decisions_and_each_groups_files(tmp_path):
    from prometheus_client import generate_latest

    from dsbra.daemon.prometheus import Metrics

    m = Metrics()
    info = {"decisions": [{"outcome": "held-out", "current": 1, "target": 1}],
            "map_tasks": 4, "unmapped_tasks": 0, "input_gone_tasks": 0, "gavg": 0.2,
            "blocks": 3, "window_end_ms": 1_000,
            "experiment": {"holdout": 0.5, "seed": 0, "files": {"treatment": 3, "control": 2}}}
    m.observe_round(info, Journal.open(tmp_path / "journal.jsonl"))
    text = generate_latest(m.registry).decode()
    assert 'dsbra_actions_total{outcome="held-out"} 1.0' in text
    assert 'dsbra_experiment_files{group="control"} 2.0' in text
    assert 'dsbra_experiment_files{group="treatment"} 3.0' in text


def test_impact_reads_a_replay_dirs_daemon_state(tmp_path):
    """`dsbra bench replay --daemon-config` (run_bench_matrix.py) keeps the daemon's state in
    DIR/daemon-state; the recorded state dir stands in for one."""
    import shutil

    from dsbra.experiment.impact import impact

    recorded = Path(__file__).parents[2] / "fixtures" / "impact" / "daemon-holdout"
    shutil.copytree(recorded, tmp_path / "rep1" / "daemon-state")
    assert impact(tmp_path / "rep1")["files"] == impact(recorded)["files"]
