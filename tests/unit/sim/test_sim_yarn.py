"""The yarn-mr binding rule by rule, on scenarios small enough to check by hand (Hadoop 3.x:
RMContainerRequestor, FSAppAttempt.assignContainer, LocalityAppPlacementAllocator,
RegularContainerAllocator.canAssign, RMContainerAllocator.assignMapsWithLocality), and a property:
no container is ever bound to a map that is not pending.

Nodes 0 and 1 are on rack 0, nodes 2 and 3 on rack 1 throughout."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbra.sim import engine
from dsbra.sim.config import SimConfig
from dsbra.sim.engine import Simulation
from dsbra.sim.replicas import Replicas
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.scheduler import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, Job, Scheduler
from dsbra.sim.workload import Dataset, Workload
from dsbra.sim.yarn import Asks, Container, am_heartbeat, assign_maps

RACK_OF = [0, 0, 1, 1]


def job_with(splits: list[list[int]]) -> Job:
    """One job whose map k reads a block on the hosts ``splits[k]``, as the AM lists them."""
    by_host: dict[int, list[int]] = {}
    by_rack: dict[int, list[int]] = {}
    for t in reversed(range(len(splits))):  # each list pops its first-added map from the end
        for h in splits[t]:
            by_host.setdefault(h, []).append(t)
        for r in sorted({RACK_OF[h] for h in splits[t]}):
            by_rack.setdefault(r, []).append(t)
    job = Job(0, 0.0, list(range(len(splits))), by_host, by_rack)
    job.asks, job.split = Asks(RACK_OF), [list(s) for s in splits]
    for hosts in job.split:
        job.asks.add_map(hosts)
    return job


def bind(splits, nodes, launched=None):
    """[(container node, map, locality)] and the nodes of released containers, for containers
    on ``nodes`` (granted NODE_LOCAL) given to a job with ``splits``."""
    job = job_with(splits)
    launched = launched if launched is not None else bytearray(len(splits))
    bound, left = assign_maps(job, [Container(n, NODE_LOCAL, -1.0) for n in nodes], launched,
                              RACK_OF)
    return [(c.node, t, lvl) for c, t, lvl in bound], [c.node for c in left]


# --- the AM's binding (assignMapsWithLocality) --------------------------------------------
def test_a_container_goes_to_the_map_on_its_host_not_the_first_added():
    assert bind([[1], [0]], [0]) == ([(0, 1, NODE_LOCAL)], [])


def test_of_two_maps_on_the_host_the_first_added_gets_it():
    assert bind([[0, 2], [0]], [0]) == ([(0, 0, NODE_LOCAL)], [])


def test_with_no_map_on_its_host_a_map_on_its_rack_gets_it():
    assert bind([[2], [1]], [0]) == ([(0, 1, RACK_LOCAL)], [])


def test_with_none_on_its_rack_the_earliest_pending_map_gets_it():
    launched = bytearray([1, 0, 0])  # map 0 already runs
    assert bind([[2], [3], [2]], [0], launched) == ([(0, 1, OFF_SWITCH)], [])


def test_every_container_tries_its_host_before_any_tries_its_rack():
    # node 1's container comes first, but node 0's takes map 0 on its host in the first pass;
    # node 1's then finds nothing on rack 0 and takes map 1 off its rack
    assert bind([[0], [2]], [1, 0]) == ([(0, 0, NODE_LOCAL), (1, 1, OFF_SWITCH)], [])


def test_a_container_is_released_only_when_no_map_is_pending():
    # both containers are off map 0's rack; one runs it anyway, the other has nothing to run
    assert bind([[0]], [3, 2]) == ([(3, 0, OFF_SWITCH)], [2])


# --- the asks: the AM's table and the ResourceManager's -----------------------------------
def test_a_grant_takes_one_from_its_node_its_rack_and_any_only():
    asks = Asks(RACK_OF)
    asks.add_map([0, 2])  # one map, a replica on each rack
    asks.add_map([1])
    asks.send()
    assert ([asks.node(n) for n in range(4)], asks.rack(0), asks.rack(1), asks.rm_any) == \
        ([1, 1, 1, 0], 2, 1, 2)
    asks.granted(0, NODE_LOCAL)
    # map 0's other host and rack keep their ask until the AM sends them again
    assert ([asks.node(n) for n in range(4)], asks.rack(0), asks.rack(1), asks.rm_any) == \
        ([0, 1, 1, 0], 1, 1, 1)
    asks.granted(3, RACK_LOCAL)  # a rack-local grant leaves the node's count alone
    assert ([asks.node(n) for n in range(4)], asks.rack(1), asks.rm_any) == ([0, 1, 1, 0], 0, 0)


def test_the_resource_manager_hears_the_asks_only_at_the_am_heartbeat_and_only_what_changed():
    asks = Asks(RACK_OF)
    asks.add_map([0])
    assert (asks.node(0), asks.rm_any) == (0, 0)  # not sent yet
    asks.send()
    assert (asks.node(0), asks.rm_any) == (1, 1)
    asks.granted(0, NODE_LOCAL)
    asks.add_map([2])
    assert (asks.node(0), asks.node(2), asks.rm_any) == (0, 0, 0)
    asks.send()
    # node 2, rack 1 and ANY changed at the AM and are sent; node 0 did not (its map is still
    # pending there: the container granted for it is not bound yet) and keeps the grant's 0
    assert (asks.node(0), asks.node(2), asks.rack(1), asks.rm_any) == (0, 1, 1, 2)


def test_asks_are_sent_before_the_heartbeats_containers_are_bound():
    job = job_with([[0], [1]])
    launched = bytearray(2)
    asks = job.asks
    assert am_heartbeat(job, launched, RACK_OF) == ([], [])
    asks.granted(0, NODE_LOCAL)
    job.granted.append(Container(0, NODE_LOCAL, -1.0))
    bound, _ = am_heartbeat(job, launched, RACK_OF)
    assert [t for _, t, _ in bound] == [0] and asks.rm_any == 1
    asks.granted(1, NODE_LOCAL)
    job.granted.append(Container(1, NODE_LOCAL, -1.0))
    assert asks.rm_any == 0
    bound, _ = am_heartbeat(job, launched, RACK_OF)
    # this heartbeat sent ANY = 1 (map 1 was pending when it was counted), then bound map 1:
    # the ResourceManager asks for a map no longer pending (YARN-1902's over-allocation)
    assert [t for _, t, _ in bound] == [1] and asks.rm_any == 1
    asks.granted(2, OFF_SWITCH)
    job.granted.append(Container(2, OFF_SWITCH, -1.0))
    bound, left = am_heartbeat(job, launched, RACK_OF)
    assert bound == [] and [c.node for c in left] == [2] and asks.rm_any == 0


# --- the ResourceManager's grant (FSAppAttempt.assignContainer, canAssign) ----------------
def scheduler(policy="fair", **kw) -> Scheduler:
    base = dict(delay_mode="hfs", delay_node_s=10.0, delay_rack_s=10.0, yarn_threshold_node=-1.0,
                yarn_threshold_rack=-1.0, nodes=4, rack_of=RACK_OF, launched=bytearray(8),
                binding="yarn-mr")
    return Scheduler(policy=policy, **{**base, **kw})


def offer(s: Scheduler, job: Job, node: int, now: float = 0.0):
    """The level of the container ``node`` earns the job (None: skipped), applied as the
    engine applies it."""
    got = s.grant(node, now)
    if got is None:
        return None
    _, level = got
    job.asks.granted(node, level)
    s.on_grant(job, level)
    return level


def test_a_node_the_job_asks_for_is_granted_node_local_before_any_delay():
    s = scheduler()
    job = job_with([[1], [2]])
    job.asks.send()
    s.add(job)
    assert offer(s, job, 2) == NODE_LOCAL  # the first offer, the level never relaxed


def test_the_fair_schedulers_clock_runs_from_the_last_relaxation_not_the_last_grant():
    s = scheduler()
    job = job_with([[0]] * 5)
    job.asks.send()
    s.add(job)
    assert offer(s, job, 2, 0.0) is None  # the clock starts at the first offer
    assert offer(s, job, 2, 10.0) is None  # not past W1 = 10 s
    assert offer(s, job, 1, 10.5) == RACK_LOCAL  # relaxed to rack at 10.5 s
    assert offer(s, job, 0, 11.0) == NODE_LOCAL  # raises the level back to node-local ...
    assert job.level == NODE_LOCAL
    assert offer(s, job, 1, 20.4) is None  # ... but the clock still runs from 10.5 s:
    assert offer(s, job, 1, 20.6) == RACK_LOCAL  # rack-local 9.6 s after the node-local grant
    assert offer(s, job, 2, 30.5) is None  # no rack-1 ask; off-switch after W2 from 20.6 s
    assert offer(s, job, 2, 30.7) == OFF_SWITCH


def test_the_capacity_schedulers_missed_opportunities():
    s = scheduler("capacity", node_locality_delay=2, rack_locality_additional_delay=1)
    job = job_with([[0]] * 4)
    job.asks.send()
    s.add(job)
    # rack-local once missed > min(4 nodes, 2); the grant resets the count (full reset)
    assert [offer(s, job, 1) for _ in range(3)] == [None, None, RACK_LOCAL]
    assert job.opportunities == 0
    # off-switch once missed > min(4, 2 + 1); an off-switch grant does not reset the count
    assert [offer(s, job, 2) for _ in range(4)] == [None, None, None, OFF_SWITCH]
    assert job.opportunities == 4
    assert offer(s, job, 0) == NODE_LOCAL and job.opportunities == 0


def test_the_capacity_schedulers_wait_factor_may_allow_off_switch_before_rack_local():
    s = scheduler("capacity", node_locality_delay=2, rack_locality_additional_delay=-1)
    job = job_with([[0]])  # asks: node 0, rack 0 -> factor min(2 / 4, 1) = 0.5
    job.asks.send()
    s.add(job)
    # off-switch once missed > min(4, 1 map x 0.5): at the first offer, rack-local not yet
    assert offer(s, job, 1) == OFF_SWITCH


def test_a_job_asking_for_no_host_or_rack_is_never_delayed():
    s = scheduler()
    job = job_with([[]])  # a split without locations: only ANY is asked
    job.asks.send()
    s.add(job)
    assert offer(s, job, 3) == OFF_SWITCH


# --- the whole protocol on one job of two maps ---------------------------------------------
def two_map_run(binding: str):
    """Map 0 reads a block on every node, map 1 one on node 3 only; 1 slot per node, node
    heartbeats at 0.1, 0.2, 0.3, 0.4 s (+ k s), the AM's at 0.5 s (+ k s)."""
    cfg = SimConfig(nodes=4, slots_per_node=1, racks=2, replication=1, max_replication=4,
                    binding=binding, am_heartbeat_s=1.0, task_overhead_s=10.0, seed=0)
    wl = Workload(name="two maps", job_ids=np.array(["j0"], object), submit_s=np.zeros(1),
                  bins=np.array([2], np.int8), task_indptr=np.array([0, 2]),
                  task_block=np.array([0, 1]), task_mb=np.full(2, 64.0),
                  dataset=Dataset.one_block_files(2, 64 << 20))
    sim = Simulation(cfg, wl)
    sim.replicas = Replicas(np.array([[0], [3]]), width=4)
    for n in (1, 2, 3):
        sim.replicas.add(0, n)
    sim.phase = np.array([0.1, 0.2, 0.3, 0.4])
    sim.am_phase = np.array([0.5])
    return sim.run()


def test_a_map_on_every_node_earns_a_container_that_the_am_hands_to_the_other_map():
    raw = two_map_run("yarn-mr")
    # the AM asks at 0.5 s; node 0 is granted NODE_LOCAL at 1.1 s (map 0's ask; rack 0's
    # count, one per map, falls to 0, so node 1 at 1.2 s is not), node 2 NODE_LOCAL at 1.3 s
    # (map 0's ask again); the AM binds both at 1.5 s: node 0's to map 0, node 2's to map 1,
    # on its rack: handed on
    assert raw.task_node.tolist() == [0, 2]
    assert raw.task_launch.tolist() == [1.5, 1.5]
    assert raw.task_locality.tolist() == [NODE_LOCAL, RACK_LOCAL]
    assert raw.task_grant.tolist() == [NODE_LOCAL, NODE_LOCAL]


def test_the_same_maps_handed_slots_by_task_both_run_node_local():
    raw = two_map_run("task")
    # node 0 runs map 0 at 0.1 s; nodes 1 and 2 hold nothing map 1 reads and wait (W1 = 5 s);
    # node 3 runs map 1 at 0.4 s
    assert raw.task_node.tolist() == [0, 3]
    assert raw.task_locality.tolist() == [NODE_LOCAL, NODE_LOCAL]


def test_the_summary_classifies_off_node_maps_by_their_grant():
    res = simulate(SimConfig(nodes=8, slots_per_node=2, racks=2, seed=1),
                   WorkloadSpec(jobs=60, inter_arrival_s=2, hot_fraction=0.01, hot_share=0.9,
                                dataset_gb=8))
    g = res.summary["container_grants"]
    loc, grant = np.asarray(res.tasks["locality"]), np.asarray(res.tasks["grant"])
    assert g["handed_on"] == int(((loc > 0) & (grant == NODE_LOCAL)).sum()) > 0
    assert g["delay_expired"] == int(((loc > 0) & (grant > NODE_LOCAL)).sum())
    assert g["containers_granted"] == g["containers_released"] + len(loc)
    # a map bound on its host always ran in a container granted NODE_LOCAL
    assert sum(g["by_locality_and_grant"]["node_local"].values()) == \
        g["by_locality_and_grant"]["node_local"]["NODE_LOCAL"]


# --- property: a container is bound only to a pending map ---------------------------------
@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(2, 6), slots=st.integers(1, 3), racks=st.integers(1, 2),
       scheduler_name=st.sampled_from(["fair", "capacity", "fifo"]),
       delay=st.sampled_from([0.0, 1.0, 5.0]), am_hb=st.sampled_from([0.1, 0.5, 1.0, 2.0]),
       assign_multiple=st.booleans(), am=st.booleans(), policy=st.sampled_from(["static", "oracle"]),
       jobs=st.integers(1, 25), gap=st.sampled_from([0.5, 2.0, 6.0]), seed=st.integers(0, 10**6))
def test_no_container_is_bound_to_a_map_that_is_not_pending(nodes, slots, racks, scheduler_name,
                                                            delay, am_hb, assign_multiple,
                                                            am, policy, jobs, gap, seed):
    cfg = SimConfig(nodes=nodes, slots_per_node=slots, racks=racks, replication=min(2, nodes),
                    block_size_mb=8, scheduler=scheduler_name, delay_node_s=delay,
                    delay_rack_s=delay, am_heartbeat_s=am_hb, assign_multiple=assign_multiple,
                    am_slots=1.0 if am and slots > 1 else 0.0, am_startup_s=1.0, max_am_share=0.5,
                    policy=policy,
                    seed=seed)
    bound_maps: list[int] = []

    def checked(job, launched, rack_of):
        pending = {t for t in job.tasks if not launched[t]}
        received = list(job.granted)
        bound, left = am_heartbeat(job, launched, rack_of)
        maps = [t for _, t, _ in bound]
        assert set(maps) <= pending and len(set(maps)) == len(maps)
        assert len(bound) == min(len(received), len(pending))
        assert not left or len(bound) == len(pending)  # released only with no map pending
        assert all(launched[t] for t in maps)
        bound_maps.extend(maps)
        return bound, left

    spec = WorkloadSpec(jobs=jobs, inter_arrival_s=gap, hot_fraction=0.05, hot_share=0.7,
                        dataset_gb=0.5, bin_scale=0.02)
    with mock.patch.object(engine, "am_heartbeat", checked):
        res = simulate(cfg, spec)
    n = len(res.tasks["task_id"])
    assert sorted(bound_maps) == list(range(n))  # every map bound once
    t = res.tasks
    assert (t["launch_s"] >= t["scheduled_s"]).all()
    g = res.summary["container_grants"]
    assert g["containers_granted"] == n + g["containers_released"]


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_the_am_heartbeat_must_be_positive(bad):
    with pytest.raises(Exception, match="am-heartbeat-s must be > 0"):
        SimConfig(am_heartbeat_s=bad).validated()
