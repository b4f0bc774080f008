"""The Spark collector on a real application's replies, audit lines and driver log, captured
from the bundled cluster (tests/fixtures/spark/4.0.1/grep-hot, tools/capture_spark_fixtures.py):
a grep over a hot file (one replica) and a cold one (three), four one-core executors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dsbra.bench import spark_truth as truth
from dsbra.errors import HadoopError, StateError
from dsbra.hadoop.rest import ResourceManager, SparkApi
from dsbra.observe import spark as sp
from dsbra.observe.http_fixtures import Replayer, session_for
from dsbra.observe.window import attribute_spark, file_blocks

GREP = Path(__file__).parents[2] / "fixtures" / "spark" / "4.0.1" / "grep-hot"
EXPECTED = json.loads((GREP / "expected.json").read_text())
APP = EXPECTED["app_id"]
HISTORY, RM = "http://10.77.0.1:18080", "http://10.77.0.1:8088"
RACKS = {"10.77.0.11": "/rack1", "10.77.0.12": "/rack1", "10.77.0.13": "/rack2", "10.77.0.14": "/rack2"}


def history() -> SparkApi:
    return SparkApi.history(HISTORY, session=session_for(Replayer(GREP)))


def audit_lines() -> list[str]:
    return (GREP / "audit.log").read_text().splitlines()


def files() -> dict[str, dict]:
    return {p: {"located": v, "replication": 1} for p, v in EXPECTED["block_locations"].items()}


def judged_from_history():
    api = history()
    tasks = sp.tasks_from_stages(APP, api.stages(APP))
    executors = sp.executors_from_reply(api.executors(APP))
    opened = {(t.app_id, t.task_id): t.path for line in audit_lines() if (t := sp.parse_audit_line(line))}
    lengths, block_size = sp._file_facts(files())
    where = sp.locate_tasks(tasks, opened, lengths, block_size)
    blocks = {p: file_blocks(v["located"], 1) for p, v in files().items()}
    holders = [blocks[p].hosts[blocks[p].find(s)] if p and s is not None else None for p, s in where]
    return tasks, executors, where, holders


def test_tasks_and_executors_as_the_history_server_gave_them():
    tasks, executors, _, _ = judged_from_history()
    assert [t.task_id for t in tasks] == list(range(8))
    assert {t.partition for t in tasks} == set(range(8))
    assert all(t.stage_tasks == 8 and t.status == "SUCCESS" and t.duration_ms > 0 for t in tasks)
    assert sorted(e.host for e in executors) == sorted(RACKS)  # the driver left out
    assert all(e.cores == 1 for e in executors)


def test_the_audit_log_names_each_tasks_file():
    opens = [t for line in audit_lines() if (t := sp.parse_audit_line(line))]
    assert sorted(t.task_id for t in opens) == list(range(8))
    assert {t.path for t in opens} == set(EXPECTED["inputs"])
    assert all(t.app_id == APP and t.stage == 0 for t in opens)
    # every other line of the captured log (DataNodes, YARN, the staging files) is not a task's
    assert sum(sp.parse_audit_line(line) is not None for line in audit_lines()) == 8 < len(audit_lines())


def test_each_split_is_recomputed_to_its_block():
    """textFile over the two files: partitions 0-3 the hot file's four splits, 4-7 the cold
    file's (its 62-byte tail joins the last split: FileInputFormat's 1.1 slop)."""
    tasks, _, where, _ = judged_from_history()
    block = EXPECTED["block_size"]
    by_partition = {t.partition: where[j] for j, t in enumerate(tasks)}
    hot, cold = EXPECTED["inputs"]
    assert by_partition == {**{i: (hot, i * block) for i in range(4)}, **{4 + i: (cold, i * block) for i in range(4)}}


def test_a_split_waits_for_its_whole_stage():
    """Until every partition of the stage opened its file, no split is guessed."""
    tasks, _, _, _ = judged_from_history()
    opened = {(t.app_id, t.task_id): t.path for line in audit_lines() if (t := sp.parse_audit_line(line))}
    partial = dict(list(opened.items())[:5])
    lengths, block_size = sp._file_facts(files())
    where = sp.locate_tasks(tasks, partial, lengths, block_size)
    assert all(start is None for _, start in where)
    assert sum(path is not None for path, _ in where) == 5


def test_hadoop_split_starts_follow_the_slop_rule():
    assert sp.hadoop_split_starts(100, 30) == [0, 30, 60, 90]  # 40 left at 60: 40/30 > 1.1
    assert sp.hadoop_split_starts(92, 30) == [0, 30, 60]  # 32 left at 60: 32/30 < 1.1, one split
    assert sp.hadoop_split_starts(10, 30) == [0]


def test_the_judged_waits_agree_with_the_drivers_levels():
    """One task (hot block 3) waited 0.59 s while executors of the other rack idled: the driver
    held its task set at RACK_LOCAL then; the rest launched without an idle core elsewhere."""
    tasks, executors, _, holders = judged_from_history()
    end = max(t.launch_ms + t.duration_ms for t in tasks)
    judged = sp.attribute(tasks, holders, executors, end)
    log = truth.parse_driver_log((GREP / "driver.log").read_text())
    real = truth.true_waits(log, {t.task_id: holders[j] for j, t in enumerate(tasks)},
                            {e.executor_id: (e.host, e.cores, e.add_ms) for e in executors}, RACKS, end,
                            sp.MIN_IDLE_S)
    inferred = {t.task_id: (bool(judged["delayed"][j]), float(judged["delay_s"][j])) for j, t in enumerate(tasks)}
    score = truth.compare(inferred, real)
    assert (score["delayed_inferred"], score["delayed_true"], score["true_positives"]) == (1, 1, 1)
    assert abs(score["wait_error"]) < 0.05
    assert [t.partition for j, t in enumerate(tasks) if judged["delayed"][j]] == [3]
    assert judged["local"].sum() == sum(t.locality == "NODE_LOCAL" for t in tasks)


def test_the_drivers_levels_per_task_set():
    log = truth.parse_driver_log((GREP / "driver.log").read_text())
    assert list(log.sets) == [(0, 0)]
    # the set waited out NODE_LOCAL, went to ANY, was put back at NODE_LOCAL by a node-local
    # launch (no line of its own), and ran out of tasks
    assert [level for _, level in log.sets[(0, 0)].levels] == ["NODE_LOCAL", "RACK_LOCAL", "ANY", "NODE_LOCAL",
                                                              "RACK_LOCAL", "ANY"]
    assert len(log.tasks) == 8 and all(t["finish_ms"] for t in log.tasks.values())


class Clock:
    def __init__(self, t: float):
        self.t = t

    def __call__(self) -> float:
        return self.t


def poll_until_done(collector, clock) -> None:
    """The captured polls in order (the replayer answers each request with its next recorded
    reply), until the collector read the finished application."""
    for _ in range(200):
        collector.poll()
        if APP in collector.done_apps:
            break
    clock.t += 3600


def replayed_collector(tmp_path, audit=True, state_path=None):
    replayer = Replayer(GREP)
    session = session_for(replayer)
    log = tmp_path / "namenode-audit.log"
    log.write_text("")
    tail = sp.AuditTail.at_end(log) if audit else None
    start = min(e["at"] for e in json.loads((GREP / "manifest.json").read_text())["exchanges"])
    clock = Clock(start - 30)
    collector = sp.SparkCollector(ResourceManager(RM, session=session), SparkApi.proxy(RM, session=session),
                                  SparkApi.history(HISTORY, session=session), tail, clock=clock,
                                  state_path=state_path)
    return collector, log, clock, replayer


def test_the_collector_hands_each_task_out_once_with_its_file(tmp_path, caplog):
    """Polls replayed in their captured order: the proxy's 500 before the driver's UI was up is
    a logged skip; the finished application comes from the History Server; each task once."""
    collector, log, clock, _ = replayed_collector(tmp_path)
    with open(log, "a") as handle:
        handle.write("\n".join(audit_lines()) + "\n")
    caplog.set_level("INFO", logger="dsbra")
    poll_until_done(collector, clock)
    assert any("HTTP 500" in r.getMessage() for r in caplog.records)
    watch = collector.apps[APP]
    assert watch.done and watch.node_wait_s == 3.0
    obs = collector.take(files())
    assert sorted(o.attempt_id for o in obs) == sorted(f"{APP}:tid{i}" for i in range(8))
    assert all(o.engine == "spark" and o.path in EXPECTED["inputs"] and o.start is not None for o in obs)
    judged = attribute_spark(obs, [None] * len(obs), collector, int(clock.t * 1000), sp.MIN_IDLE_S)
    assert not judged["delayed"].any()  # no holders known: never judged delayed
    assert collector.take(files()) == [] and APP not in collector.apps


def test_a_skipped_round_gets_its_tasks_again(tmp_path):
    collector, log, clock, _ = replayed_collector(tmp_path)
    log.write_text("\n".join(audit_lines()) + "\n")
    poll_until_done(collector, clock)
    obs = collector.take(files())
    collector.give_back(obs[:3])
    again = collector.take(files())
    assert sorted(o.attempt_id for o in again) == sorted(o.attempt_id for o in obs[:3])


def test_a_restarted_daemon_hands_out_what_its_collector_had_not_and_nothing_twice(tmp_path):
    """The daemon restarts between two rounds: a collector from the same state file has the
    finished application, each task's file from the audit lines read before the restart, and
    what was handed out already."""
    state = tmp_path / "spark.json"
    first, log, clock, _ = replayed_collector(tmp_path, state_path=state)
    log.write_text("\n".join(audit_lines()) + "\n")
    poll_until_done(first, clock)
    assert len(first.take(files())) == 8
    again = sp.SparkCollector(first.rm, first.proxy, first.history, sp.AuditTail.at_end(log), clock=clock,
                              state_path=state)
    assert again.since_ms == first.since_ms and APP in again.done_apps
    assert again.take(files()) == [] and again.apps == {}  # handed out before the restart
    # a restart before the round that takes them: all eight, once, with their files
    (tmp_path / "b").mkdir()
    fresh, log, clock, _ = replayed_collector(tmp_path / "b", state_path=tmp_path / "b.json")
    log.write_text("\n".join(audit_lines()) + "\n")
    poll_until_done(fresh, clock)
    restarted = sp.SparkCollector(fresh.rm, fresh.proxy, fresh.history, sp.AuditTail.at_end(log), clock=clock,
                                  state_path=tmp_path / "b.json")
    obs = restarted.take(files())
    assert sorted(o.attempt_id for o in obs) == sorted(f"{APP}:tid{i}" for i in range(8))
    assert all(o.path in EXPECTED["inputs"] for o in obs)


def test_an_unreadable_collector_state_is_one_error(tmp_path):
    state = tmp_path / "spark.json"
    state.write_text('{"version": 1, "since_ms": "x"')
    with pytest.raises(StateError, match="spark.json is unreadable"):
        replayed_collector(tmp_path, state_path=state)


def test_without_an_audit_log_tasks_are_counted_without_files(tmp_path, caplog):
    collector, _, clock, _ = replayed_collector(tmp_path, audit=False)
    caplog.set_level("WARNING", logger="dsbra")
    poll_until_done(collector, clock)
    obs = collector.take(files())
    assert len(obs) == 8 and all(o.path is None for o in obs)
    assert sum("no NameNode audit log" in r.getMessage() for r in caplog.records) == 1


def test_the_audit_tail_follows_a_rotation_and_a_missing_file(tmp_path, caplog):
    """log4j's rolling appender renames the file to .1 and starts anew: the rest of the old one
    is read from .1, then the new one; a file gone is one warning, not a crash."""
    lines = audit_lines()
    spark_lines = [line for line in lines if sp.parse_audit_line(line)]
    log = tmp_path / "namenode-audit.log"
    log.write_text(spark_lines[0] + "\n")
    tail = sp.AuditTail(log)
    assert len(tail.read()) == 1
    with open(log, "a") as handle:
        handle.write(spark_lines[1] + "\n" + spark_lines[2][:40])  # a line still being written
    os.rename(log, tmp_path / "namenode-audit.log.1")
    with open(tmp_path / "namenode-audit.log.1", "a") as handle:
        handle.write(spark_lines[2][40:] + "\n")
    log.write_text("\n".join(spark_lines[3:]) + "\n")
    got = tail.read()
    assert [t.task_id for t in got] == [sp.parse_audit_line(x).task_id for x in spark_lines[1:]]
    log.unlink()
    caplog.set_level("WARNING", logger="dsbra")
    assert tail.read() == [] and tail.read() == []
    assert sum("cannot be read" in r.getMessage() for r in caplog.records) == 1


def test_the_proxy_of_a_finished_application_is_an_error_not_a_crash():
    """After the end, the RM's proxy redirects to the History Server's HTML page: a HadoopError
    the collector logs and retries, never a traceback."""
    api = SparkApi.proxy(RM, session=session_for(Replayer(GREP)))
    with pytest.raises(HadoopError):
        for _ in range(50):  # the captured answers in order: JSON while it ran, then the page
            api.stages(APP)
