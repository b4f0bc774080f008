"""The Spark rule's launch clause (dsbra.observe.spark.waited_out_node_level) on the validation
run recorded on the bundled cluster (benchmarks/validate_spark_waits.py --tag hot1: two
applications, their tasks, executors and drivers' DEBUG logs): a task that ran off its data
after its node-level wait, with an executor up on a holder, had waited that wait out."""

from __future__ import annotations

import dataclasses
import gzip
import json

import pytest

from dsbra.bench import spark_truth as truth
from dsbra.observe import spark as sp
from dsbra.observe.collector import MapObservation
from dsbra.observe.window import map_to_blocks
from repo_scripts import ROOT, load_script

RAW = ROOT / "benchmarks" / "results" / "spark-waits-hot1.raw.json.gz"
NODE_WAIT_S = 3.0  #: the bundled cluster's spark.locality.wait, the run's


@pytest.fixture(scope="module")
def raw() -> dict:
    with gzip.open(RAW, "rt") as f:
        return json.load(f)


def off_data_tasks(raw: dict):
    """(task, its block's holders, its application's executors, the driver log's truth) of each
    recorded task that ran on a host holding none of its block's replicas."""
    obs = [MapObservation(**o) for o in raw["obs"]]
    blocks = map_to_blocks(obs, raw["files"])
    holders = [blocks.rows[b][1] if b >= 0 else None for b in blocks.block_of]
    out = []
    for app, timeline in raw["timelines"].items():
        tasks = [sp.SparkTask(**t) for t in timeline["tasks"]]
        executors = [sp.Executor(**e) for e in timeline["executors"]]
        where = {sp.task_of(o.attempt_id)[1]: holders[j] for j, o in enumerate(obs) if o.job_id == app}
        real = truth.true_waits(truth.parse_driver_log(raw["driver_logs"][app]),
                                {tid: h for tid, h in where.items() if h},
                                {e.executor_id: (e.host, e.cores, e.add_ms) for e in executors},
                                raw["racks"], raw["end_ms"], sp.MIN_IDLE_S)
        out += [(t, where[t.task_id], executors, real[t.task_id]) for t in tasks
                if where.get(t.task_id) and t.host not in where[t.task_id]]
    return out


def test_every_recorded_task_off_its_data_had_waited_out_its_node_level_as_its_driver_logged(raw):
    off = off_data_tasks(raw)
    assert len(off) == 6  # 4 RACK_LOCAL, 2 ANY
    for task, holders, executors, (truly_delayed, true_wait_s) in off:
        assert sp.waited_out_node_level(task, holders, executors, NODE_WAIT_S), task
        assert truly_delayed and true_wait_s >= NODE_WAIT_S, (task, true_wait_s)


def test_the_launch_clause_needs_the_wait_an_executor_on_a_holder_and_an_off_data_launch(raw):
    task, holders, executors, _ = off_data_tasks(raw)[0]
    pending_s = (task.launch_ms - task.submitted_ms) / 1000
    assert sp.waited_out_node_level(task, holders, executors, NODE_WAIT_S)
    assert not sp.waited_out_node_level(task, holders, executors, pending_s + 0.1)  # launched sooner
    assert not sp.waited_out_node_level(task, holders, executors, 0.0)  # delay scheduling off
    assert not sp.waited_out_node_level(task, holders, [e for e in executors if e.host not in holders],
                                        NODE_WAIT_S)  # no executor could run it node-local
    assert not sp.waited_out_node_level(dataclasses.replace(task, host=holders[0], locality="NODE_LOCAL"),
                                        holders, executors, NODE_WAIT_S)


def test_the_launch_clause_judges_a_task_when_no_core_of_the_application_ever_idled(raw):
    """A busy application: the holder's executor runs another task from its start to the end,
    the task's own executor only it. No idle core anywhere, and the task still waited out its
    wait (the idle rule sees nothing; the launch clause sees it)."""
    task, holders, executors, _ = off_data_tasks(raw)[0]
    end = task.launch_ms + task.duration_ms
    on_holder = next(e for e in executors if e.host in holders)
    busy = [dataclasses.replace(on_holder, cores=1, remove_ms=None),
            dataclasses.replace(next(e for e in executors if e.executor_id == task.executor),
                                cores=1, add_ms=task.launch_ms, remove_ms=None)]
    other = dataclasses.replace(task, task_id=-1, executor=on_holder.executor_id, host=on_holder.host,
                                locality="NODE_LOCAL", launch_ms=on_holder.add_ms,
                                duration_ms=end - on_holder.add_ms)
    assert sp.idle_intervals([task, other], busy, end) == []
    judged = sp.attribute([task, other], [holders, holders], busy, end, node_wait_s=NODE_WAIT_S)
    assert judged["delayed"].tolist() == [True, False] and judged["delay_s"][0] == NODE_WAIT_S
    assert not sp.attribute([task, other], [holders, holders], busy, end)["delayed"].any()


def test_the_recorded_validation_scores_as_committed_with_and_without_the_launch_clause(raw):
    """Here the idle-core rule had already judged the six off-data tasks: both scores agree."""
    score = load_script("benchmarks/validate_spark_waits.py").score(raw)
    committed = json.loads((ROOT / "benchmarks" / "results" / "spark-waits-hot1.json").read_text())
    for key in [k for k in committed if k.startswith("min_idle_")]:
        assert score[key] == committed[key], key
    assert score["min_idle_0.5s"] == score["min_idle_0.5s_idle_only"]
