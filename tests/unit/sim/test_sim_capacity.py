"""`dsbra sim --scheduler capacity`: the Capacity Scheduler's count-based delay, capped by the
cluster's size (RegularContainerAllocator.canAssign, Hadoop 3.4.2)."""

from __future__ import annotations

import pytest

from dsbra.errors import ConfigError
from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.scheduler import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, Job, Scheduler


def level(s: Scheduler, job: Job) -> int:
    """The most remote level the task binding lets the job launch at now."""
    rack_ok, off_ok = s._capacity_allows(job, len(job.by_host) + len(job.by_rack), job.pending)
    return OFF_SWITCH if off_ok else RACK_LOCAL if rack_ok else NODE_LOCAL

CLUSTER = dict(nodes=8, slots_per_node=2, racks=2, replication=2, block_size_mb=64,
               task_overhead_s=5.0, read_mbps_local=10.0, read_mbps_rack=5.0, read_mbps_remote=2.5)
WORKLOAD = WorkloadSpec(jobs=60, inter_arrival_s=4.0, hot_fraction=0.05, hot_share=0.8,
                        dataset_gb=20.0, bin_scale=0.05)


def test_the_node_delay_is_capped_by_the_cluster_and_reset_by_a_local_launch():
    s = Scheduler(policy="capacity", delay_mode="hfs", delay_node_s=0, delay_rack_s=0,
                  yarn_threshold_node=-1, yarn_threshold_rack=-1, nodes=4, rack_of=[0, 0, 1, 1],
                  launched=bytearray(2), node_locality_delay=40, rack_locality_additional_delay=1)
    # one map, split on node 0 only; node 1 is on its rack, nodes 2-3 on the other
    job = Job(0, 0.0, [0, 1], by_host={0: [0, 1]}, by_rack={0: [0, 1]})
    s.add(job)
    levels = []
    for _ in range(6):
        job.opportunities += 1
        levels.append(level(s, job))
    # min(4 nodes, 40) = 4: rack-local after the 5th missed opportunity; off-switch after
    # min(4, 40 + 1) = 4 too (the cap binds both)
    assert levels == [NODE_LOCAL] * 4 + [OFF_SWITCH] * 2
    s.on_launch(job, RACK_LOCAL)
    assert job.opportunities == 0
    job.opportunities = 5
    s.on_launch(job, OFF_SWITCH)  # an off-switch allocation does not reset the count
    assert job.opportunities == 5


def test_a_small_delay_relaxes_to_rack_before_off_switch():
    s = Scheduler(policy="capacity", delay_mode="hfs", delay_node_s=0, delay_rack_s=0,
                  yarn_threshold_node=-1, yarn_threshold_rack=-1, nodes=8, rack_of=[0] * 8,
                  launched=bytearray(1), node_locality_delay=2, rack_locality_additional_delay=3)
    job = Job(0, 0.0, [0], by_host={0: [0]}, by_rack={0: [0]})
    seen = []
    for _ in range(7):
        job.opportunities += 1
        seen.append(level(s, job))
    assert seen == [NODE_LOCAL, NODE_LOCAL, RACK_LOCAL, RACK_LOCAL, RACK_LOCAL, OFF_SWITCH,
                    OFF_SWITCH]


def test_delay_raises_locality_on_a_hot_spot_workload():
    off = simulate(SimConfig(**CLUSTER, scheduler="capacity", node_locality_delay=-1, seed=3),
                   WORKLOAD).summary
    on = simulate(SimConfig(**CLUSTER, scheduler="capacity", node_locality_delay=40, seed=3),
                  WORKLOAD).summary
    assert on["node_locality"] > off["node_locality"]
    assert off["mean_delay_wait_s"] == 0.0 or off["node_locality"] < on["node_locality"]


def test_bad_delays_are_refused():
    with pytest.raises(ConfigError, match="node-locality-delay"):
        SimConfig(**CLUSTER, scheduler="capacity", node_locality_delay=-3).validated()
