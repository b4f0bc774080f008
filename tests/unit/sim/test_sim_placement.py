"""`dsbra sim --placement`: the policy's nodes (heat, a NameNode with the placement plugin)
against the stock NameNode's BlockPlacementPolicyDefault (default)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dsbra.errors import ConfigError
from dsbra.policy.api import Decision
from dsbra.sim.cli import sim
from dsbra.sim.config import SimConfig
from dsbra.sim.replicas import Replicas, Topology, default_add_targets, default_drop_nodes
from dsbra.sim.policy_driver import PolicyDriver
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.workload import Dataset

MB = 1 << 20
# 6 nodes: 0-2 on rack 0, 3-5 on rack 1
TOPO = Topology(6, 2)
# the holdout test's small hot-spot setup (tests/unit/sim/test_sim_holdout.py)
CLUSTER = dict(nodes=8, slots_per_node=2, racks=2, replication=2, block_size_mb=64,
               task_overhead_s=5.0, read_mbps_local=10.0, read_mbps_rack=5.0,
               read_mbps_remote=2.5, interval_s=20.0)
WORKLOAD = WorkloadSpec(jobs=60, inter_arrival_s=4.0, hot_fraction=0.05, hot_share=0.8,
                        dataset_gb=20.0, bin_scale=0.05)


class Scripted:
    """A policy that returns the decision it is given."""

    name = "scripted"

    def __init__(self, decision: Decision):
        self.decision = decision

    def decide(self, ri, state):
        return self.decision, state


class QuietWindow:
    """A window in which every block was read once, each by a job of its own."""

    def __init__(self, n_blocks: int):
        self.n = n_blocks

    def drain(self, attributed=None):
        ones, zeros = np.ones(self.n, np.int32), np.zeros(self.n, np.int32)
        return {"tasks": ones, "delayed_tasks": zeros, "delay_s": np.zeros(self.n),
                "nonlocal_tasks": zeros, "peak_readers": zeros,
                "task_job": np.arange(self.n), "task_block": np.arange(self.n)}


def decision(n_blocks, raise_=(), lower=()):
    """``raise_``: (block, [nodes]); ``lower``: (block, node)."""
    nodes = [list(n) for _, n in raise_]
    return Decision(policy="scripted", replicate_block=[b for b, _ in raise_],
                    replicate_indptr=np.concatenate([[0], np.cumsum([len(n) for n in nodes])]),
                    replicate_nodes=[x for n in nodes for x in n],
                    dereplicate_block=[b for b, _ in lower],
                    dereplicate_node=[n for _, n in lower], rf=np.zeros(n_blocks),
                    rule=np.zeros(n_blocks, np.int8), gavg=0.0, dn_avg=np.zeros(TOPO.nodes))


def driver(initial, extra=(), placement="heat", seed=0):
    """A driver on TOPO over one-block files placed at ``initial`` (base replication = its
    width), plus the ``extra`` (block, node) replicas above base."""
    initial = np.asarray(initial)
    reps = Replicas(initial, width=5)
    for blk, node in extra:
        assert reps.add(blk, node)
    ds = Dataset.one_block_files(len(initial), 64 * MB)
    return PolicyDriver("static", {}, TOPO, ds, reps, copy_mbps=64.0, placement=placement,
                        rng=np.random.default_rng(seed))


def apply(drv, dec, in_flight=None):
    drv.policy = Scripted(dec)
    return drv.round(60.0, QuietWindow(len(drv.replicas)), in_flight or {})


def test_heat_applies_the_policys_nodes():
    drv = driver([[0, 3], [1, 4], [2, 5]], extra=[(1, 0)])
    rec = apply(drv, decision(3, raise_=[(0, [5, 1]), (2, [4])], lower=[(1, 4)]))
    assert [(b, n) for b, n, _ in rec["copies"]] == [(0, 5), (0, 1), (2, 4)]
    assert all(s == 1.0 for _, _, s in rec["copies"])  # 64 MB at 64 MB/s
    assert sorted(drv.replicas.holders(1).tolist()) == [0, 1] and rec["removed"] == 1
    assert rec["raised_blocks"] == [0, 2] and rec["lowered_blocks"] == [1]
    # a copy in flight counts toward the block's request: only the rest starts
    rec = apply(drv, decision(3, raise_=[(0, [5, 1])]), in_flight={0: [2]})
    assert [(b, n) for b, n, _ in rec["copies"]] == [(0, 5)]


def test_default_drops_from_a_shared_rack_then_the_fullest_node():
    # block 0 on 0 and 1 (rack 0) and 3 (rack 1); node 3 stores the most of all, but its
    # rack holds one replica of the block: the drop is on rack 0, on its fuller node 1
    holders = np.array([[0, 1, 3, -1]])
    stored = np.array([10.0, 20.0, 0, 99.0, 0, 0])
    for seed in range(20):
        assert default_drop_nodes(holders, np.array([3]), TOPO.rack_of, stored,
                                  np.random.default_rng(seed)).tolist() == [1]
    # one replica per rack: the fullest holder of all; equally full: either, at random
    rows = np.array([[0, 3]])
    assert {int(default_drop_nodes(rows, np.array([2]), TOPO.rack_of,
                                   np.array([5.0, 0, 0, 9.0, 0, 0]),
                                   np.random.default_rng(seed))[0]) for seed in range(20)} == {3}
    tied = {int(default_drop_nodes(rows, np.array([2]), TOPO.rack_of, np.ones(6),
                                   np.random.default_rng(seed))[0]) for seed in range(40)}
    assert tied == {0, 3}


def test_default_adds_go_to_non_holders_another_rack_first():
    holders = np.array([[0, 1, -1], [0, 3, -1], [2, -1, -1]])
    busy = (np.array([2]), np.array([5]))  # a copy of block 2 to node 5 is under way
    seen = [set(), set(), set()]
    for seed in range(200):
        indptr, nodes = default_add_targets(holders, np.array([2, 2, 1]), np.array([3, 2, 2]),
                                            busy, TOPO.rack_of, np.random.default_rng(seed))
        rows = [nodes[indptr[k]:indptr[k + 1]].tolist() for k in range(3)]
        assert [len(r) for r in rows] == [3, 2, 2]
        for k, r in enumerate(rows):
            assert len(set(r)) == len(r)
            assert not set(r) & set(holders[k][holders[k] >= 0].tolist())
            seen[k].update(r)
        # holders on one rack: the first new replica on the other rack
        assert TOPO.rack_of[rows[0][0]] == 1 and TOPO.rack_of[rows[2][0]] == 1
        assert 5 not in rows[2]
    # otherwise random: every eligible node is drawn sometimes
    assert seen == [{2, 3, 4, 5}, {1, 2, 4, 5}, {0, 1, 3, 4}]


def test_default_keeps_the_policys_counts_not_its_nodes():
    drv = driver([[0, 1], [1, 4], [2, 5], [3, 4]], extra=[(1, 0), (1, 2)], placement="default")
    rec = apply(drv, decision(4, raise_=[(0, [2, 5, 4]), (3, [0])], lower=[(1, 4), (2, 5)]))
    copies = [(b, n) for b, n, _ in rec["copies"]]
    assert [b for b, _ in copies] == [0, 0, 0, 3]
    assert TOPO.rack_of[copies[0][1]] == 1  # block 0 sat on rack 0 only
    assert all(not drv.replicas.holds(b, n) for b, n in copies)
    # block 1 on 0, 1, 2 (rack 0) and 4: the drop is on rack 0, not the policy's node 4;
    # block 2 is at its base replication: nothing is dropped
    assert rec["removed"] == 1 and rec["lowered_blocks"] == [1]  # not block 2, at its base
    assert 4 in drv.replicas.holders(1).tolist() and len(drv.replicas.holders(1)) == 3
    assert sorted(drv.replicas.holders(2).tolist()) == [2, 5]


def test_default_is_deterministic_never_below_base_and_differs_from_heat(monkeypatch):
    applied = []
    copies = PolicyDriver._copies

    def record(self, dec, held, in_flight):
        out = copies(self, dec, held, in_flight)
        ip, nodes = dec.replicate_indptr, dec.replicate_nodes
        chosen = {int(b): set(nodes[ip[k]:ip[k + 1]].tolist())
                  for k, b in enumerate(dec.replicate_block)}
        applied.append((self.placement, [(b, n in chosen[b]) for b, n, _ in out]))
        assert (self.replicas.count >= self.replicas.base).all()
        return out

    monkeypatch.setattr(PolicyDriver, "_copies", record)
    # 16 nodes: a hot block raised to 10 replicas leaves the NameNode other nodes to choose
    cluster = {**CLUSTER, "nodes": 16}
    runs = {p: simulate(SimConfig(**cluster, policy="dsbra", seed=3, placement=p), WORKLOAD)
            for p in ("heat", "default")}
    again = simulate(SimConfig(**cluster, policy="dsbra", seed=3, placement="default"),
                     WORKLOAD)
    assert runs["default"].summary["replicas_added"] > 0
    for key in ("node_locality", "mean_response_s", "replicas_added", "replicas_removed",
                "extra_storage_mean"):
        assert again.summary[key] == runs["default"].summary[key]
    assert np.array_equal(again.tasks["node"], runs["default"].tasks["node"])
    assert not np.array_equal(runs["heat"].tasks["node"], runs["default"].tasks["node"])
    heat = [ok for p, c in applied if p == "heat" for _, ok in c]
    default = [ok for p, c in applied if p == "default" for _, ok in c]
    assert heat and all(heat)  # heat: every copy on a node the policy chose
    assert default and not all(default)
    assert all(r["extra_storage"] >= 0 for r in runs["default"].rounds)


def test_cli_placement_option(tmp_path):
    out = tmp_path / "run"
    r = CliRunner().invoke(sim, ["--nodes", "8", "--jobs", "20", "--policy", "scarlett",
                                 "--placement", "default", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())["config"]["placement"] == "default"
    r = CliRunner().invoke(sim, ["--placement", "random", "--out", str(tmp_path / "x")])
    assert r.exit_code != 0 and "random" in r.output
    with pytest.raises(ConfigError, match="placement"):
        SimConfig(placement="random").validated()
