"""The oracle arm: every block readable node-locally everywhere, the limit replication can reach."""

from __future__ import annotations

import pytest

from dsbra.errors import ConfigError
from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, simulate

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
    # the same schedule, every map node-local at local read speed: the same response times
    # up to which free slot a map takes first
    assert oracle["mean_response_s"] == pytest.approx(full["mean_response_s"], rel=0.02)
    assert oracle["mean_response_s"] < static["mean_response_s"]
    assert oracle["extra_storage_mean"] == oracle["extra_storage_max"] == pytest.approx(3.0)
    assert oracle["replicas_added"] == 0


def test_oracle_refuses_observed_signals():
    with pytest.raises(ConfigError, match="oracle"):
        SimConfig(policy="oracle", signals="observed").validated()
