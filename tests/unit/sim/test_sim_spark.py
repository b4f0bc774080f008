"""The spark binding rule by rule on scenarios small enough to check by hand (Spark's
TaskSetManager, TaskSchedulerImpl.resourceOffers, FairSchedulingAlgorithm,
LocalityPreferredContainerPlacementStrategy, ExecutorAllocationManager), and properties of whole
runs: every task launches once, no executor runs more tasks than its cores.

Nodes 0 and 1 are on rack 0, nodes 2 and 3 on rack 1 throughout."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbra.errors import ConfigError
from dsbra.sim import spark
from dsbra.sim.config import SimConfig, SparkSettings
from dsbra.sim.replicas import Replicas
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.scheduler import NODE_LOCAL, RACK_LOCAL, Job
from dsbra.sim.spark import (ANY, Driver, Executor, Pool, SparkSimulation, TaskSet,
                             container_localities, fair_key)
from dsbra.sim.workload import Dataset, Workload

RACK_OF = [0, 0, 1, 1]


def taskset(index: int, hosts: list[list[int]], first: int, pool: Pool, now: float = 0.0
            ) -> TaskSet:
    """Job ``index``'s task set: task ``first + k`` prefers ``hosts[k]``."""
    by_host: dict[int, list[int]] = {}
    by_rack: dict[int, list[int]] = {}
    for k in reversed(range(len(hosts))):  # each list pops its first-added task from the end
        for h in hosts[k]:
            by_host.setdefault(h, []).append(first + k)
        for r in sorted({RACK_OF[h] for h in hosts[k]}):
            by_rack.setdefault(r, []).append(first + k)
    job = Job(index, now, list(range(first, first + len(hosts))), by_host, by_rack)
    counts: dict[int, int] = {}
    for hs in hosts:
        for h in hs:
            counts[h] = counts.get(h, 0) + 1
    return TaskSet(job, pool, set(counts), {RACK_OF[h] for h in counts}, counts, now)


def driver(n_tasks: int, executors: list[int], **settings) -> tuple[Driver, list[Executor]]:
    """A driver with one-core executors registered on ``executors``' nodes."""
    d = Driver(SparkSettings(**settings), bytearray(n_tasks), np.random.default_rng(0))
    es = [Executor(i, n, RACK_OF[n], 1) for i, n in enumerate(executors)]
    for e in es:
        d.add_executor(e)
    return d, es


def launches(d: Driver, offers, now: float, all_free: bool = True):
    return [(t, e.node, level) for _, t, e, level, _ in d.resource_offers(offers, now, all_free)]


def finish(ts: TaskSet, e: Executor) -> None:
    """A task of ``ts`` ends on ``e``."""
    ts.job.running -= 1
    ts.pool.running -= 1
    e.free += 1
    e.running -= 1


# --- delay scheduling in one task set (TaskSetManager) --------------------------------------
def test_a_task_whose_holder_is_busy_waits_the_locality_wait_then_runs_on_its_rack():
    d, (busy, other) = driver(2, [0, 1])
    ts = taskset(0, [[0], [0]], 0, d.pool("default"))
    d.submit(ts)
    assert launches(d, [busy, other], 0.0) == [(0, 0, NODE_LOCAL)]  # node 1 declined
    assert ts.job.skip_start == 0.0
    for t in (1.0, 2.0, 2.9):
        assert launches(d, [busy, other], t) == []
    assert launches(d, [busy, other], 3.0) == [(1, 1, RACK_LOCAL)]


def test_a_level_is_valid_only_with_an_executor_alive_there():
    # tasks prefer node 0; an executor on node 1 makes RACK_LOCAL the first valid level, and a
    # task runs there at once; one on node 2 (the other rack) leaves ANY alone
    d, (e,) = driver(1, [1])
    ts = taskset(0, [[0]], 0, d.pool("default"))
    d.submit(ts)
    assert ts.levels == [RACK_LOCAL, ANY]
    assert launches(d, [e], 0.0) == [(0, 1, RACK_LOCAL)]
    d, (e,) = driver(1, [2])
    ts = taskset(0, [[0]], 0, d.pool("default"))
    d.submit(ts)
    assert ts.levels == [ANY]
    assert launches(d, [e], 0.0) == [(0, 2, ANY)]


def test_an_executor_on_the_holder_makes_node_local_valid_again():
    d, (e,) = driver(2, [2])
    ts = taskset(0, [[0], [0]], 0, d.pool("default"))
    d.submit(ts)
    assert ts.levels == [ANY]
    d.add_executor(Executor(9, 0, 0, 1))
    assert ts.levels == [NODE_LOCAL, RACK_LOCAL, ANY]


def reset_rule_case(legacy: bool):
    """Tasks all prefer node 0; one executor there, one on node 2 (another rack), no wait at
    rack level. Node 0's executor runs a task at 0 s, which ends at 2 s: the executor alone is
    offered and runs the next local task. At 3 s the revive offers both."""
    d, (local, remote) = driver(4, [0, 2], locality_wait_rack_s=0.0, legacy_reset=legacy)
    ts = taskset(0, [[0]] * 4, 0, d.pool("default"))
    d.submit(ts)
    assert launches(d, [local, remote], 0.0) == [(0, 0, NODE_LOCAL)]  # the remote declined
    assert launches(d, [local, remote], 1.0) == []
    finish(ts, local)
    assert launches(d, [local], 2.0, all_free=False) == [(1, 0, NODE_LOCAL)]
    return launches(d, [local, remote], 3.0)


def test_since_spark_3_1_a_local_launch_after_a_decline_does_not_reset_the_timer():
    # SPARK-18886: the launch at 2 s came after the remote executor was declined, in an offer of
    # one executor: the timer runs from 0 s, and at 3 s the waiting task goes to the remote one
    assert reset_rule_case(legacy=False) == [(2, 2, ANY)]


def test_the_legacy_rule_resets_on_every_launch_and_keeps_the_remote_executor_idle():
    assert reset_rule_case(legacy=True) == []


def test_a_full_offer_round_without_declines_resets_the_timer_to_its_most_local_launch():
    d, (e0, e1) = driver(3, [0, 1])
    ts = taskset(0, [[0], [1], [0]], 0, d.pool("default"))
    d.submit(ts)
    # at 5 s the node wait has run out (RACK_LOCAL allowed, its clock from 3 s); both executors
    # still run a local task each and nothing is declined: the timer restarts at NODE_LOCAL
    assert sorted(launches(d, [e0, e1], 5.0)) == [(0, 0, NODE_LOCAL), (1, 1, NODE_LOCAL)]
    assert ts.levels[ts.index] == NODE_LOCAL and ts.reset_time == 5.0


# --- pools (FairSchedulingAlgorithm) -------------------------------------------------------
def two_jobs(mode: str) -> list:
    """Jobs 0 and 1 in pools of their own, each with tasks local to both executors; job 0 takes
    both, then one of its tasks ends: which job's task runs next?"""
    d, (e0, e1) = driver(8, [0, 1], scheduling_mode=mode)
    ts0 = taskset(0, [[0, 1]] * 4, 0, d.pool("pool0"))
    d.submit(ts0)
    assert len(launches(d, [e0, e1], 0.0)) == 2
    ts1 = taskset(1, [[0, 1]] * 4, 4, d.pool("pool1"))
    d.submit(ts1)
    finish(ts0, e0)
    return [t for t, _, _ in launches(d, [e0], 1.0, all_free=False)]


def test_fair_pools_give_a_freed_core_to_the_pool_running_fewer_tasks():
    assert two_jobs("fair") == [4]


def test_fifo_gives_it_to_the_earlier_job():
    assert two_jobs("fifo") == [2]


def test_a_pool_below_its_min_share_comes_first_then_running_per_weight_then_name():
    needy, busy, idle = Pool("b", 2), Pool("a", 0), Pool("c", 0)
    needy.running, busy.running, idle.running = 1, 3, 0
    assert [p.name for p in sorted([busy, idle, needy], key=fair_key)] == ["b", "c", "a"]
    tie = Pool("a", 0)
    assert [p.name for p in sorted([idle, tie], key=fair_key)] == ["a", "c"]


# --- the allocator's locality (LocalityPreferredContainerPlacementStrategy) -----------------
def test_requests_go_to_the_hinted_hosts_in_proportion_the_rest_ask_for_none():
    # 6 tasks on host 0 and 2 on host 1 at 2 cores: 4 executors needed, expected 3 on host 0 and
    # 1 on host 1; the ratios scaled to 4 requests (4 and 2) give each request the hosts still
    # above zero
    assert container_localities(4, {0: 6, 1: 2}, 8, 2, {}) == [[0, 1], [0, 1], [0], [0]]
    # host 0 already holds its 3: one request for host 1, three for no host
    assert container_localities(4, {0: 6, 1: 2}, 8, 2, {0: 3}) == [[], [], [], [1]]


# --- whole runs ----------------------------------------------------------------------------
def small_workload(submits: list[float], blocks: list[list[int]]) -> Workload:
    """Job k submitted at ``submits[k]``, reading one-block files ``blocks[k]``."""
    indptr = np.cumsum([0] + [len(b) for b in blocks])
    task_block = np.concatenate([np.asarray(b, np.int64) for b in blocks])
    n = int(task_block.max()) + 1
    return Workload(name="hand-built", job_ids=np.array([f"j{k}" for k in range(len(blocks))],
                                                         object),
                    submit_s=np.asarray(submits, float), bins=np.full(len(blocks), 3, np.int8),
                    task_indptr=indptr, task_block=task_block,
                    task_mb=np.full(len(task_block), 64.0),
                    dataset=Dataset.one_block_files(n, 64 << 20))


def spark_run(wl: Workload, holders: list[int], **settings) -> SparkSimulation:
    """A run on 4 nodes of 2 slots, block b on node ``holders[b]`` only."""
    cfg = SimConfig(nodes=4, slots_per_node=2, racks=2, replication=1, max_replication=4,
                    binding="spark", spark=SparkSettings(**settings), task_overhead_s=10.0,
                    seed=0)
    sim = SparkSimulation(cfg, wl)
    sim.replicas = Replicas(np.array(holders)[:, None], width=4)
    sim.run()
    return sim


def test_dynamic_allocation_asks_for_executors_on_the_hinted_hosts():
    # two tasks on blocks of node 1, two on node 3, two cores an executor: each of the two
    # requests asks for nodes 1 and 3, and YARN's node wait keeps them off nodes 0 and 2
    wl = small_workload([0.0], [[0, 1, 2, 3]])
    sim = spark_run(wl, [1, 1, 3, 3], dynamic=True, executors=0, executor_cores=2)
    assert np.frombuffer(sim.t_node, np.int32).tolist() == [1, 1, 3, 3]
    assert (np.frombuffer(sim.t_level, np.int8) == NODE_LOCAL).all()
    assert sim.next_eid == 2


@pytest.mark.parametrize("idle_timeout_s, acquired", [(10.0, 2), (1000.0, 1)])
def test_dynamic_allocation_releases_an_idle_executor(idle_timeout_s, acquired):
    # one-task jobs 100 s apart: the executor idle in between is released after the timeout
    # and a new one asked for, or kept
    wl = small_workload([0.0, 100.0], [[0], [1]])
    sim = spark_run(wl, [1, 1], dynamic=True, executors=0, idle_timeout_s=idle_timeout_s)
    assert sim.next_eid == acquired


def test_static_executors_are_held_for_the_shared_applications_life():
    wl = small_workload([0.0, 100.0], [[0], [1]])
    sim = spark_run(wl, [1, 1], executors=3)
    assert sim.next_eid == 3 and len(sim.apps[0].held) == 3


@pytest.mark.parametrize("mode", ["fair", "fifo"])
def test_two_concurrent_jobs_share_the_shared_applications_executors_under_fair_pools(mode):
    # job 0's six tasks fill both cores at 0 s; job 1 arrives at 1 s. Fair pools give it the
    # first freed core; FIFO only the first core freed after job 0's last task launched
    wl = small_workload([0.0, 1.0], [list(range(6)), list(range(6, 12))])
    sim = spark_run(wl, [0] * 12, executors=2, locality_wait_s=0.0, scheduling_mode=mode)
    launch, finish = np.frombuffer(sim.t_launch), np.frombuffer(sim.t_finish)
    if mode == "fair":
        assert launch[6] == finish[:6].min()
        assert launch[6] < launch[5]
    else:
        assert launch[6] >= launch[:6].max()


def test_per_job_applications_each_acquire_their_own_executors():
    wl = small_workload([0.0, 100.0], [[0], [1]])
    sim = spark_run(wl, [1, 1], app="per-job", executors=2)
    assert sim.next_eid == 4 and not sim.apps


def test_applicationmasters_leaving_no_room_for_an_executor_are_an_error_not_a_hang():
    # one-slot AMs on each of the 4 nodes leave one slot a node: no two-core executor fits
    wl = small_workload([0.0, 0.0, 0.0, 0.0], [[0], [1], [2], [3]])
    cfg = SimConfig(nodes=4, slots_per_node=2, racks=2, replication=1, binding="spark",
                    am_slots=1.0, spark=SparkSettings(app="per-job", executor_cores=2))
    with pytest.raises(ConfigError, match="no node has 2 free slots for an executor"):
        SparkSimulation(cfg, wl).run()


def hot_run(seed: int, **settings):
    cfg = SimConfig(binding="spark", spark=SparkSettings(**settings), seed=seed)
    return simulate(cfg, WorkloadSpec(jobs=30, inter_arrival_s=3.0, hot_fraction=0.01,
                                      hot_share=0.8, dataset_gb=5.0, bin_scale=0.05))


def test_a_run_is_determined_by_its_seed():
    a, b, c = hot_run(1, executors=10), hot_run(1, executors=10), hot_run(2, executors=10)
    for col in ("node", "launch_s", "locality", "delay_wait_s"):
        assert list(a.tasks[col]) == list(b.tasks[col])
    assert list(a.tasks["launch_s"]) != list(c.tasks["launch_s"])
    assert a.summary["binding"] == "spark" and a.summary["config"]["spark"]["executors"] == 10


def test_the_outputs_are_the_simulators_schema():
    res = hot_run(0, executors=10)
    assert set(res.tasks["locality"].tolist()) <= {0, 1, 2}
    d = res.summary["container_grants"]
    assert d["containers_released"] == 0  # a core goes to a task: nothing to release


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 1000), app=st.sampled_from(["shared", "per-job"]),
       dynamic=st.booleans(), legacy=st.booleans(), cores=st.integers(1, 2),
       executors=st.integers(1, 6), wait=st.sampled_from([0.0, 1.0, 3.0]),
       mode=st.sampled_from(["fair", "fifo"]), pools=st.integers(0, 3))
def test_every_task_launches_once_and_no_executor_runs_more_than_its_cores(
        seed, app, dynamic, legacy, cores, executors, wait, mode, pools):
    cfg = SimConfig(nodes=6, slots_per_node=2, racks=2, binding="spark", seed=seed,
                    spark=SparkSettings(app=app, dynamic=dynamic, legacy_reset=legacy,
                                        executor_cores=cores, executors=executors,
                                        locality_wait_s=wait, scheduling_mode=mode,
                                        pools=pools, max_executors=8 if dynamic else None,
                                        executor_startup_s=0.5))
    launched: list[int] = []
    real = Driver.resource_offers

    def checked(self, offers, now, all_free):
        out = real(self, offers, now, all_free)
        assert all(0 <= e.free and e.running <= e.cores and e.alive for e in offers)
        launched.extend(t for _, t, _, _, _ in out)
        return out

    spec = WorkloadSpec(jobs=15, inter_arrival_s=4.0, hot_fraction=0.05, hot_share=0.7,
                        dataset_gb=1.0, bin_scale=0.1)
    with mock.patch.object(spark.Driver, "resource_offers", checked):
        res = simulate(cfg, spec)
    t = res.tasks
    assert sorted(launched) == list(range(len(t["task_id"])))  # every task once
    assert (t["launch_s"] >= t["scheduled_s"]).all() and (t["finish_s"] > t["launch_s"]).all()
    # at no time more tasks on a node than its slots
    for node in set(t["node"].tolist()):
        on = t["node"] == node
        times = np.concatenate([t["launch_s"][on], t["finish_s"][on]])
        steps = np.concatenate([np.ones(on.sum()), -np.ones(on.sum())])
        order = np.lexsort((steps, times))  # an end before a start at the same time
        assert np.cumsum(steps[order]).max() <= 2


# --- settings ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, message", [
    ({"binding": "yarn-mr", "spark": SparkSettings(executors=8)},
     "spark-\\* options set the Spark application: use --binding spark"),
    ({"binding": "spark", "spark": SparkSettings(executor_cores=3)},
     "spark-executor-cores must be an integer in \\[1, 2\\]"),
    ({"binding": "spark", "spark": SparkSettings(app="thrift")}, "spark-app must be one of"),
    ({"binding": "spark", "spark": SparkSettings(locality_wait_s=-1.0)},
     "spark-locality-wait-s must be >= 0"),
    ({"binding": "spark", "spark": SparkSettings(executors=0)},
     "spark-executors must be >= 1 without dynamic allocation"),
    ({"binding": "spark", "spark": SparkSettings(dynamic=True, executors=1, min_executors=2)},
     "spark-executors \\(1\\) is below spark-min-executors \\(2\\)"),
    ({"binding": "spark", "signals": "observed"}, "under --binding spark use --signals scheduler"),
])
def test_bad_settings_are_one_line_errors(kw, message):
    with pytest.raises(ConfigError, match=message):
        SimConfig(**kw).validated()


def test_the_delay_threshold_is_sparks_node_wait():
    cfg = SimConfig(binding="spark", spark=SparkSettings(locality_wait_node_s=1.5))
    assert cfg.effective_delay_threshold_s == 1.5
    assert "spark" not in SimConfig().as_dict() and "spark" in cfg.as_dict()
