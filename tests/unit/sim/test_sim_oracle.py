"""The oracle arm: every block readable node-locally everywhere, the limit replication can reach."""

from __future__ import annotations

import numpy as np
import pytest

from dsbra.errors import ConfigError
from dsbra.sim.config import SimConfig
from dsbra.sim.engine import Simulation
from dsbra.sim.run import WorkloadSpec, build_workload, simulate

# a small hot-spot setup: 8 nodes, long maps, a few very hot blocks
CLUSTER = dict(nodes=8, slots_per_node=2, racks=2, replication=2, block_size_mb=64,
               task_overhead_s=5.0, read_mbps_local=10.0, read_mbps_rack=5.0,
               read_mbps_remote=2.5)
WORKLOAD = WorkloadSpec(jobs=60, inter_arrival_s=4.0, hot_fraction=0.01, hot_share=0.8,
                        dataset_gb=20.0, bin_scale=0.05)


def test_oracle_is_every_block_on_every_node():
    """The oracle runs as a cluster whose replication equals its node count, without
    materialising the replicas, and reports the storage that would cost."""
    oracle = simulate(SimConfig(**CLUSTER, policy="oracle", seed=3), WORKLOAD).summary
    full = simulate(SimConfig(**{**CLUSTER, "replication": 8}, max_replication=8, seed=3),
                    WORKLOAD).summary
    static = simulate(SimConfig(**CLUSTER, seed=3), WORKLOAD).summary
    assert oracle["node_locality"] == 1.0 and oracle["mean_delay_wait_s"] == 0.0
    assert full["node_locality"] == 1.0
    assert oracle["mean_response_s"] < static["mean_response_s"]
    assert oracle["extra_storage_mean"] == oracle["extra_storage_max"] == pytest.approx(3.0)
    assert oracle["replicas_added"] == 0


@pytest.mark.parametrize("binding", ["yarn-mr", "task"])
def test_oracle_runs_as_full_replication_map_for_map(binding):
    """With the nodes' heartbeats at the same phases, the oracle (asks on every node counted
    once, not per host) and a replication of 8 on 8 nodes launch every map at the same time on
    the same node."""
    oracle = SimConfig(**CLUSTER, policy="oracle", seed=3, binding=binding).validated()
    full = SimConfig(**{**CLUSTER, "replication": 8}, max_replication=8, seed=3,
                     binding=binding).validated()
    wl = build_workload(WORKLOAD, oracle)
    a, b = Simulation(oracle, wl), Simulation(full, wl)
    b.phase = a.phase  # the placement draws differ, and with them the phases drawn after it
    ra, rb = a.run(), b.run()
    assert np.array_equal(ra.task_launch, rb.task_launch)
    assert np.array_equal(ra.task_node, rb.task_node)


def test_oracle_refuses_observed_signals():
    with pytest.raises(ConfigError, match="oracle"):
        SimConfig(policy="oracle", signals="observed").validated()


def _copied_before(res, k) -> list[tuple[str, int]]:
    """(job, block) of the maps whose block k earlier-submitted jobs had asked for."""
    t, j = res.tasks, res.jobs
    blocks_of: dict[str, list[int]] = {}
    for job, b in zip(t["job_id"], t["block_id"]):
        blocks_of.setdefault(job, []).append(int(b))
    asks: dict[int, int] = {}
    out = []
    for _, job in sorted(zip(j["submit_s"], j["job_id"])):
        out += [(job, b) for b in blocks_of[job] if asks.get(b, 0) >= k]
        for b in blocks_of[job]:
            asks[b] = asks.get(b, 0) + 1
    return out


@pytest.mark.parametrize("k", [1, 3])
def test_reactive_oracle_copies_a_block_everywhere_once_k_jobs_asked(k):
    res = simulate(SimConfig(**CLUSTER, policy="oracle-reactive", policy_params={"min_jobs": k},
                             seed=3), WORKLOAD)
    t = res.tasks
    local = {(jb, int(b)): loc == 0 for jb, b, loc in
             zip(t["job_id"], t["block_id"], t["locality"])}
    copied = _copied_before(res, k)
    # a map whose block was copied before its job was submitted is always node-local
    assert copied and all(local[key] for key in copied)
    s = res.summary
    static = simulate(SimConfig(**CLUSTER, seed=3), WORKLOAD).summary
    assert static["node_locality"] < s["node_locality"] <= 1.0
    assert s["mean_response_s"] < static["mean_response_s"]
    # storage grows with the blocks copied, up to the oracle's
    assert 0 < s["extra_storage_mean"] <= s["extra_storage_max"] <= 3.0


def test_reactive_oracle_parameters_are_checked():
    with pytest.raises(ConfigError, match="min_jobs"):
        SimConfig(policy="oracle-reactive", policy_params={"min_jobs": 0}).validated()
    with pytest.raises(ConfigError, match="min_jobs"):
        SimConfig(policy="oracle-reactive", policy_params={"gate": 1}).validated()
    with pytest.raises(ConfigError, match="oracle-reactive"):
        SimConfig(policy="oracle-reactive", signals="observed").validated()
