"""The adaptive profile: DSBRA's signals and round, thresholds taken from the window itself."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dsbra.errors import InputError
from dsbra.policy.api import FileTable, RULE_BUDGET, RULE_COOL, RULE_HOT, RULE_NONE
from dsbra.policy.dsbra import DsbraPolicy
from dsbra.policy.profiles import params_for
from policy_helpers import dereplicate_map, make_round, replicate_map, state_for

NODES = [f"dn{j}" for j in range(1, 11)]


def policy(**overrides):
    return DsbraPolicy(params_for("adaptive", delay_threshold_s=10, **overrides))


def window(hot_tasks=40, hot_delayed=20, cold_delayed=1):
    """One hot block read 40 times (half its maps delayed), twenty cold blocks read once."""
    blocks = [dict(id="hot", nodes=["dn1", "dn2"], tasks=hot_tasks, delayed=hot_delayed,
                   delay=10.0 * hot_delayed)]
    for k in range(20):
        holders = [NODES[k % 10], NODES[(k + 1) % 10]]
        blocks.append(dict(id=f"c{k}", nodes=holders, tasks=1, delayed=int(k < cold_delayed),
                           delay=10.0 * (k < cold_delayed)))
    return make_round(NODES, blocks)


def test_replicates_the_block_with_the_delay_volume_not_the_unlucky_one():
    """A once-read block whose one map waited the full D has X = 1, above the hot block's
    X = 0.5: the fixed thresholds would rank it first. Pressure N x RF ranks by volume."""
    ri = window()
    d, _ = policy().decide(ri, state_for(ri))
    # hot: X = (20/40 + 200/400)/2 = 0.5, RF = 0.25, pressure 10; c0: RF 0.5, pressure 0.5
    assert d.rf[0] == pytest.approx(0.25) and d.rf[1] == pytest.approx(0.5)
    added = replicate_map(ri, d)
    assert list(added) == ["hot"]
    # demand: 60 maps on 10 nodes = 6 per node; 40 maps at most 5% of a holder's 6 slots'
    # worth -> ceil(40 / 0.3) = 134 holders, capped at the 10 live nodes: 8 more
    assert len(added["hot"]) == 8 and not set(added["hot"]) & {"dn1", "dn2"}
    assert d.rule[0] == RULE_HOT and set(d.rule[1:]) == {RULE_NONE}


def test_a_window_without_delay_changes_nothing():
    ri = window(hot_delayed=0, cold_delayed=0)
    d, _ = policy().decide(ri, state_for(ri))
    assert len(d.replicate_block) == 0 and len(d.dereplicate_block) == 0


def short_window():
    """The bundled cluster's 30 s round: 10 maps on 4 nodes (D = 10 s). The popular block
    read 3 times, one map delayed 6 s: X = (1/3 + 6/30)/2 = 0.267, RF 0.133, pressure 0.4;
    a block read once whose map waited the full D: X = 1, RF 0.5, pressure 0.5; six blocks
    read once without delay. Mean pressure 0.9 / 8 read blocks = 0.11."""
    nodes = NODES[:4]
    blocks = [dict(id="popular", nodes=["dn1", "dn2"], tasks=3, delayed=1, delay=6.0),
              dict(id="once", nodes=["dn3", "dn4"], tasks=1, delayed=1, delay=10.0)]
    blocks += [dict(id=f"c{k}", nodes=[nodes[k % 4], nodes[(k + 1) % 4]], tasks=1)
               for k in range(6)]
    return make_round(nodes, blocks)


def test_a_short_window_raises_the_block_read_again_not_the_one_read_once():
    """The default floor (0.3 delayed-map equivalents) is within reach of a window of a few
    maps per node, and min_reads 2 keeps a lone delayed read from being taken for a hot spot.
    The popular block's 3 maps on 2.5 maps per node need every node: 2 more holders."""
    ri = short_window()
    d, _ = policy().decide(ri, state_for(ri))
    assert d.rf[0] == pytest.approx(0.4 / 3) and d.rf[1] == pytest.approx(0.5)
    assert replicate_map(ri, d) == {"popular": ["dn3", "dn4"]}
    assert d.rule[0] == RULE_HOT and d.rule[1] == RULE_NONE
    # a floor of one delayed map (the profile before) raises nothing in such a window
    d1, _ = policy(min_pressure=1.0, min_reads=1).decide(ri, state_for(ri))
    assert len(d1.replicate_block) == 0
    # the same floor without min_reads also raises the block read once
    d2, _ = policy(min_reads=1).decide(ri, state_for(ri))
    assert set(replicate_map(ri, d2)) == {"popular", "once"}


def spark_window():
    """A 30 s window of 6.17's Spark sitting (dsbra-hold rep 1, the daemon's first window):
    the hot file read 10 times, 2 waited (22 s in D units); a cold one read twice, both
    waited (21 s); six others read 1-3 times, one of them once with a wait (12 s), which
    min_reads 2 keeps down. 22 reads over 8 blocks."""
    nodes = NODES[:4]
    blocks = [dict(id="hot", nodes=["dn1", "dn2"], tasks=10, delayed=2, delay=22.0),
              dict(id="cold", nodes=["dn3", "dn4"], tasks=2, delayed=2, delay=21.0)]
    blocks += [dict(id=f"c{k}", nodes=[nodes[k % 4], nodes[(k + 1) % 4]], tasks=t,
                    delayed=int(k == 5), delay=12.0 * (k == 5))
               for k, t in enumerate((2, 3, 2, 1, 1, 1))]
    return make_round(nodes, blocks)


def test_read_factor_raises_the_popular_block_not_the_unlucky_one():
    """Pressure alone raises both (the cold block's two waits weigh as much as the hot one's);
    read_factor 2 asks a raised block to be read at least twice as often as the window's
    average read block (22 / 8 = 2.75 reads): the hot one's 10, not the cold one's 2."""
    ri = spark_window()
    d, _ = policy().decide(ri, state_for(ri))
    assert set(replicate_map(ri, d)) == {"hot", "cold"}
    d2, _ = policy(read_factor=2.0).decide(ri, state_for(ri))
    assert set(replicate_map(ri, d2)) == {"hot"}
    assert d2.rule[1] == RULE_NONE
    # a factor past the average still lets the most read block through
    d4, _ = policy(read_factor=4.0).decide(ri, state_for(ri))
    assert set(replicate_map(ri, d4)) == {"hot"}


def test_read_factor_keeps_a_window_that_reads_one_file_alike():
    """A window reading only one hot file's blocks, each as often (the HA tests' workload),
    the waits on three of them: no block is read f times as often as the average, but each
    as often as the most read, so those that waited rise as without read_factor."""
    nodes = NODES[:4]
    blocks = [dict(id=f"b{k}", nodes=[nodes[k % 4]], base=1, tasks=3, delayed=2 * (k < 3),
                   delay=20.0 * (k < 3)) for k in range(12)]
    ri = make_round(nodes, blocks)
    d, _ = policy().decide(ri, state_for(ri))
    d2, _ = policy(read_factor=2.0).decide(ri, state_for(ri))
    raised = replicate_map(ri, d)
    assert raised and set(raised) <= {"b0", "b1", "b2"}  # as many as the storage budget buys
    assert replicate_map(ri, d2) == raised


def test_sized_by_demand_on_the_holders():
    """holder_share 0.5: the hot block's 40 maps need ceil(40 / (0.5 x 6)) = 14 -> capped 10;
    with 12 maps: ceil(12 / (0.5 x 3.2)) = 8 holders, 6 more."""
    ri = window(hot_tasks=12, hot_delayed=12)
    d, _ = policy(holder_share=0.5).decide(ri, state_for(ri))
    assert len(replicate_map(ri, d)["hot"]) == 6


def test_cools_one_replica_per_round_never_below_base():
    nodes = NODES[:4]
    ri = make_round(nodes, [
        dict(id="was-hot", nodes=nodes, base=2),  # unread now: needs no holder
        dict(id="still-read", nodes=nodes, base=2, tasks=30),  # needed, not delayed
        dict(id="at-base", nodes=nodes[:2], base=2),
        dict(id="other", nodes=nodes[2:], base=2, tasks=2),
    ])
    pol = policy(holder_share=0.5)
    d, st = pol.decide(ri, state_for(ri))
    assert list(dereplicate_map(ri, d)) == ["was-hot"]
    assert d.rule[0] == RULE_COOL and d.rule[2] == RULE_NONE


def test_storage_budget_goes_round_robin_hottest_first():
    """Two hot blocks want 8 each; the budget (10% of 2 x 22 base replicas = 4.4 replicas)
    covers 4: one each per pass, the hotter first."""
    blocks = [dict(id="hotter", nodes=["dn1", "dn2"], tasks=40, delayed=40, delay=400.0),
              dict(id="hot", nodes=["dn3", "dn4"], tasks=30, delayed=30, delay=300.0)]
    blocks += [dict(id=f"c{k}", nodes=["dn5", "dn6"], tasks=1) for k in range(20)]
    ri = make_round(NODES, blocks)
    d, _ = policy(budget_fraction=0.1).decide(ri, state_for(ri))
    added = replicate_map(ri, d)
    assert {b: len(n) for b, n in added.items()} == {"hotter": 2, "hot": 2}
    d1, _ = policy(budget_fraction=1 / 44).decide(ri, state_for(ri))  # one replica's worth
    assert {b: len(n) for b, n in replicate_map(ri, d1).items()} == {"hotter": 1}
    assert d1.rule[1] == RULE_BUDGET


def test_budget_counts_bytes_with_a_file_table():
    """Files of 100 and 1 bytes: 10% of (2 x 100 + 21 x 2 x 1) = 24.2 bytes buys the hotter
    small block its first replica (1 byte), then the budget stops at the big one's first
    100-byte replica: the grants are a prefix of the round-robin order, never reordered."""
    blocks = [dict(id="big", nodes=["dn1", "dn2"], tasks=30, delayed=30, delay=300.0, file=0),
              dict(id="small", nodes=["dn3", "dn4"], tasks=40, delayed=40, delay=400.0, file=1)]
    blocks += [dict(id=f"c{k}", nodes=["dn5", "dn6"], tasks=1, file=2 + k) for k in range(20)]
    files = FileTable(paths=[f"/f{k}" for k in range(22)], base_replication=[2] * 22,
                      current_replication=[2] * 22, length_bytes=[100, 1] + [1] * 20,
                      block_count=[1] * 22)
    ri = make_round(NODES, blocks, files=files)
    d, _ = policy(budget_fraction=0.1).decide(ri, state_for(ri))
    added = replicate_map(ri, d)
    assert list(added) == ["small"] and len(added["small"]) == 1
    assert d.rule[0] == RULE_BUDGET


def test_budget_of_the_stored_bytes_when_the_round_sees_part_of_the_data():
    """The daemon's round holds only the window's blocks: 10% of those 44 base replicas buys
    4; against a cluster storing 1000 replicas' worth it buys what the demand asks (8 each)."""
    blocks = [dict(id="hotter", nodes=["dn1", "dn2"], tasks=40, delayed=40, delay=400.0),
              dict(id="hot", nodes=["dn3", "dn4"], tasks=30, delayed=30, delay=300.0)]
    blocks += [dict(id=f"c{k}", nodes=["dn5", "dn6"], tasks=1) for k in range(20)]
    ri = dataclasses.replace(make_round(NODES, blocks), storage_base_bytes=1000.0)
    d, _ = policy(budget_fraction=0.1).decide(ri, state_for(ri))
    assert {b: len(n) for b, n in replicate_map(ri, d).items()} == {"hotter": 8, "hot": 8}
    with pytest.raises(InputError, match="storage_base_bytes"):
        policy().decide(dataclasses.replace(ri, storage_base_bytes=-1.0), state_for(ri))


@pytest.mark.parametrize("key,value", [("holder_share", 0), ("holder_share", 1.5),
                                       ("hot_factor", -1), ("budget_fraction", -0.1),
                                       ("thresholds", "magic"), ("min_reads", 0),
                                       ("min_reads", 1.5), ("min_reads", True),
                                       ("min_reads", "2"), ("read_factor", 0),
                                       ("read_factor", -1.0)])
def test_bad_parameters_are_named(key, value):
    with pytest.raises(InputError, match=key):
        params_for("adaptive", delay_threshold_s=5, **{key: value})


def test_matches_the_fixed_round_on_the_shared_steps():
    """Steps 1-5 (RF, Y, n, GAvg, DNAvg) are the same code for both threshold modes."""
    ri = window()
    st0 = state_for(ri, y=np.linspace(0, 0.5, len(ri)), n=np.arange(len(ri), dtype=np.int32))
    da, sa = policy().decide(ri, st0)
    dc, sc = DsbraPolicy(params_for("calibrated", delay_threshold_s=10)).decide(ri, st0)
    np.testing.assert_array_equal(da.rf, dc.rf)
    np.testing.assert_array_equal(sa.y, sc.y)
    np.testing.assert_array_equal(da.dn_avg, dc.dn_avg)
    assert da.gavg == dc.gavg
