"""The live-demand rule (issue 68, dsbra.policy.demand): each step on rounds small enough to
work by hand, then the policy's raises and lowers, and the simulator's signal."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from policy_helpers import dereplicate_map, make_round, replicate_map

from dsbra.errors import InputError
from dsbra.policy.api import RULE_DEMAND, RULE_DEMAND_GONE, LiveDemand
from dsbra.policy.demand import (DemandPolicy, busiest_holder, copies_for, due_within_delay,
                                 servable_within_delay, shortfall, waiting_per_node)
from dsbra.policy.registry import make_policy
from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, simulate

NODES = ["n0", "n1", "n2", "n3"]


def demand(jobs, free, running, mean_map_s=None, job_running=None):
    """``jobs``: per job, the block rows of its pending maps."""
    counts = [len(j) for j in jobs]
    return LiveDemand(job_indptr=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
                      job_blocks=np.array([b for j in jobs for b in j], np.int64),
                      job_running=job_running if job_running is not None else [0] * len(jobs),
                      free_containers=free, running_maps=running, mean_map_s=mean_map_s)


def with_demand(ri, live):
    return dataclasses.replace(ri, demand=live)


def test_a_node_serves_its_free_containers_and_the_running_maps_that_end_within_d():
    live = demand([], free=[2, 0, 1, 0], running=[0, 2, 1, 4], mean_map_s=10.0)
    assert servable_within_delay(live, 5.0).tolist() == [2.0, 1.0, 1.5, 2.0]
    assert servable_within_delay(live, 20.0).tolist() == [2.0, 2.0, 2.0, 4.0]  # at most all
    # before any map has finished, every running map counts as freeing
    unknown = demand([], free=[0, 0, 0, 0], running=[1, 2, 0, 0])
    assert servable_within_delay(unknown, 5.0).tolist() == [1.0, 2.0, 0.0, 0.0]


def test_due_maps_are_the_fair_schedulers_next_as_many_as_the_cluster_hands_out():
    # job 0 holds 3 containers, job 1 none: job 1's two maps come first, then half of job 0's
    live = demand([[0, 0, 1, 1], [2, 2]], free=[0] * 4, running=[1] * 4, job_running=[3, 0])
    due = due_within_delay(live, np.array([1.0, 1.0, 1.0, 1.0]), 3)
    assert due.tolist() == [1.0, 1.0, 2.0]
    # room for every pending map: all of them are due
    assert due_within_delay(live, np.full(4, 5.0), 3).tolist() == [2.0, 2.0, 2.0]
    assert live.pending_maps(3).tolist() == [2, 2, 2]


def test_waiting_maps_spread_over_holders_and_each_holder_serves_its_share():
    indptr, nodes = np.array([0, 2, 4]), np.array([0, 1, 1, 2])
    pending = np.array([4.0, 2.0])
    waiting = waiting_per_node(pending, indptr, nodes, 4)
    assert waiting.tolist() == [2.0, 3.0, 1.0, 0.0]
    servable = np.array([1.0, 3.0, 1.0, 0.0])
    # block 0: n0 gives its 1 (alone there), n1 gives 2 of 3 (2 of its 3 waiting) -> 4 - 3
    # block 1: n1 gives 1 of 3, n2 gives 1 -> 2 - 2
    assert shortfall(pending, indptr, nodes, servable, waiting).tolist() == [1.0, 0.0]


def test_copies_walk_the_freest_non_holders_until_the_shortfall_is_covered():
    indptr, nodes = np.array([0, 1, 2]), np.array([0, 3])
    servable = np.array([2.0, 1.0, 2.0, 0.0])
    spare = np.array([1.0, 0.5, 1.5, -1.0])
    ip, chosen = copies_for(np.array([0, 1]), np.array([2.5, 1.0]), np.array([3, 3]), indptr,
                            nodes, servable, spare)
    # block 0 (on n0): n2 (2) then n1 (1) cover 2.5; n3 hands out nothing and is never taken
    # block 1 (on n3): n2 alone covers 1
    assert ip.tolist() == [0, 2, 3] and chosen.tolist() == [2, 1, 2]
    ip, chosen = copies_for(np.array([0]), np.array([9.0]), np.array([1]), indptr, nodes,
                            servable, spare)
    assert chosen.tolist() == [2]  # at most the room left under the ceiling


def test_the_lowered_replica_is_on_the_busiest_holder():
    indptr, nodes = np.array([0, 3]), np.array([0, 1, 2])
    assert busiest_holder(indptr, nodes, np.array([0]), np.array([1.0, 3.0, 3.0, 0.0])).tolist() == [2]


def hot_round(pending_jobs, free, running, base=2, holders=("n0", "n1")):
    ri = make_round(NODES, [{"id": "hot", "nodes": list(holders), "base": base},
                            {"id": "cold", "nodes": ["n2", "n3"]}])
    return with_demand(ri, demand(pending_jobs, free=free, running=running, mean_map_s=10.0))


def test_a_block_its_holders_cannot_serve_in_time_is_raised_onto_free_nodes():
    policy = DemandPolicy(delay_threshold_s=5.0, max_replication=10)
    # 4 maps of the hot block wait; its holders are full (each frees 1 within D), n2 and n3
    # are free: 2 short, covered by n2 or n3 alone (2 free each)
    ri = hot_round([[0, 0, 0, 0]], free=[0, 0, 2, 2], running=[2, 2, 0, 0])
    d, st = policy.decide(ri, None)
    assert replicate_map(ri, d) == {"hot": ["n2"]}
    assert d.rule[0] == RULE_DEMAND and d.rf[0] == pytest.approx(2.0)
    assert st.idle_rounds.tolist() == [0, 1]


def test_demand_its_holders_serve_within_d_raises_nothing():
    policy = DemandPolicy(delay_threshold_s=5.0)
    ri = hot_round([[0, 0]], free=[1, 1, 2, 2], running=[1, 1, 0, 0])
    d, _ = policy.decide(ri, None)
    assert len(d.replicate_block) == 0 and len(d.dereplicate_block) == 0


def test_copies_follow_the_concurrent_demand_up_to_the_ceiling():
    ri = hot_round([[0] * 12], free=[0, 0, 2, 2], running=[2, 2, 0, 0])
    d, _ = DemandPolicy(delay_threshold_s=5.0).decide(ri, None)
    assert replicate_map(ri, d) == {"hot": ["n2", "n3"]}  # every free node, no more exist
    d, _ = DemandPolicy(delay_threshold_s=5.0, max_replication=3).decide(ri, None)
    assert replicate_map(ri, d) == {"hot": ["n2"]}


def test_a_raised_block_goes_back_to_base_once_its_demand_is_gone_one_replica_a_poll():
    policy = DemandPolicy(delay_threshold_s=5.0, idle_polls=2)
    ri = hot_round([], free=[2, 2, 2, 2], running=[0] * 4, holders=("n0", "n1", "n2", "n3"))
    d, st = policy.decide(ri, None)
    assert len(d.dereplicate_block) == 0  # one idle poll so far
    d, st = policy.decide(ri, st)
    assert dereplicate_map(ri, d) == {"hot": "n3"} and d.rule[0] == RULE_DEMAND_GONE
    # at base: nothing more goes, whatever the idle polls
    at_base = hot_round([], free=[2] * 4, running=[0] * 4, base=2)
    d, _ = policy.decide(at_base, st)
    assert len(d.dereplicate_block) == 0


def test_without_a_poll_the_policy_only_lowers():
    ri = make_round(NODES, [{"id": "b", "nodes": NODES, "base": 2, "tasks": 9, "delayed": 9,
                             "delay": 45.0}])
    policy = DemandPolicy(delay_threshold_s=5.0, idle_polls=1)
    d, _ = policy.decide(ri, None)
    assert len(d.replicate_block) == 0 and dereplicate_map(ri, d) == {"b": "n3"}


def test_bad_parameters_and_signals_are_one_line_errors():
    with pytest.raises(InputError, match="delay_threshold_s"):
        DemandPolicy(delay_threshold_s=0)
    with pytest.raises(InputError, match="min_shortfall"):
        DemandPolicy(delay_threshold_s=5, min_shortfall=0)
    with pytest.raises(InputError, match="no parameter"):
        make_policy("dsbra-demand", delay_threshold_s=5, gate=1)
    ri = make_round(NODES, [{"id": "b", "nodes": ["n0"]}])
    bad = with_demand(ri, demand([[3]], free=[0] * 4, running=[0] * 4))
    with pytest.raises(InputError, match="job_blocks out of range"):
        DemandPolicy(delay_threshold_s=5).decide(bad, None)
    bad = with_demand(ri, demand([[0]], free=[0] * 3, running=[0] * 4))
    with pytest.raises(InputError, match="free_containers has shape"):
        DemandPolicy(delay_threshold_s=5).decide(bad, None)


def test_the_simulator_polls_the_live_demand_and_stays_within_the_rails():
    cluster = dict(nodes=8, slots_per_node=2, racks=2, replication=2, block_size_mb=64,
                   task_overhead_s=5.0, read_mbps_local=10.0, read_mbps_rack=5.0,
                   read_mbps_remote=2.5, max_replication=512)
    workload = WorkloadSpec(jobs=60, inter_arrival_s=4.0, hot_fraction=0.01, hot_share=0.8,
                            dataset_gb=20.0, bin_scale=0.05)
    res = simulate(SimConfig(**cluster, policy="dsbra-demand", interval_s=3.0,
                             delay_node_s=5.0, delay_rack_s=5.0, seed=3), workload)
    s = res.summary
    assert s["replicas_added"] > 0 and s["replicas_removed"] > 0
    assert s["policy_rounds"] == len(res.rounds) and res.rounds[1]["time_s"] == 6.0
    assert s["extra_storage_mean"] >= 0 and s["stale_reads"] >= 0
    assert s["config"]["policy_params_used"]["delay_threshold_s"] == 5.0
