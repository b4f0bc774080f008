"""Issue 43's candidates: hysteresis against churn, a replica cap short of every worker and a
replica bound by demand.

Both are options of the adaptive round (off by default); their per-block state is columnar
(BlockState.hot_history)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbra.daemon.round import merge_state, split_state
from dsbra.errors import InputError
from dsbra.policy.api import (RULE_COOL, RULE_HOT, RULE_HOT_PENDING,
                              BlockState)
from dsbra.policy.dsbra import DsbraPolicy, replica_ceiling
from dsbra.policy.profiles import DEFAULT_PROFILE, PROFILES, params_for
from dsbra.policy.state import load_state, save_state
from policy_helpers import dereplicate_map, make_round, replicate_map, state_for
from policy_strategies import rounds

NODES = [f"dn{j}" for j in range(1, 11)]


def policy(profile="adaptive", **overrides):
    return DsbraPolicy(params_for(profile, delay_threshold_s=10, **overrides))


def window(hot=True, hot_nodes=("dn1", "dn2"), hot_tasks=40):
    """Block "h" read 40 times, half its maps delayed (hot), or not read at all (not hot: a
    block read without delay is still hot on its history Y); twenty blocks read once without
    delay."""
    delayed = hot_tasks // 2
    blocks = [dict(id="h", nodes=list(hot_nodes), tasks=hot_tasks if hot else 0,
                   delayed=delayed if hot else 0, delay=10.0 * delayed if hot else 0.0)]
    blocks += [dict(id=f"c{k}", nodes=[NODES[k % 10], NODES[(k + 1) % 10]], tasks=1)
               for k in range(20)]
    return make_round(NODES, blocks)


def run(pol, windows):
    """Decisions of successive rounds (each window a RoundInput), the state carried."""
    out, state = [], None
    for ri in windows:
        d, state = pol.decide(ri, state)
        out.append(d)
    return out, state


def raised(d):
    return "h" in replicate_map(window(), d)


def test_state_records_hot_rounds():
    _, s = run(policy(), [window(True), window(False), window(True), window(False)])
    # bit 0 = last round: rounds 4..1 were not hot, hot, not hot, hot
    assert s.hot_history[0] == 0b1010 and s.hot_history.dtype == np.uint8
    assert np.all(s.hot_history[1:] == 0)


def test_default_raises_on_one_rounds_evidence():
    (d,), _ = run(policy(), [window(True)])
    assert raised(d) and d.rule[0] == RULE_HOT


def test_two_of_three_waits_for_a_second_hot_round():
    pol = policy(hot_rounds=2, hot_window=3)
    (d1, d2), _ = run(pol, [window(True), window(True)])
    assert not raised(d1) and d1.rule[0] == RULE_HOT_PENDING
    assert len(d1.replicate_block) == 0 and len(d1.dereplicate_block) == 0
    assert raised(d2) and d2.rule[0] == RULE_HOT


def test_hot_rounds_count_within_the_window_only():
    hot, cold = window(True), window(False)
    (_, _, d3), _ = run(policy(hot_rounds=2, hot_window=3), [hot, cold, hot])
    assert raised(d3)  # rounds 1 and 3 of the last 3
    (_, _, d3), _ = run(policy(hot_rounds=2, hot_window=2), [hot, cold, hot])
    assert not raised(d3) and d3.rule[0] == RULE_HOT_PENDING  # round 1 is out of the window


def test_a_block_far_past_the_threshold_bypasses_confirmation():
    (d,), _ = run(policy(hot_rounds=2, hot_window=3, confirm_bypass=4.0), [window(True)])
    assert raised(d)  # pressure 10 against a threshold of 2 x mean (about 0.48)
    (d,), _ = run(policy(hot_rounds=2, hot_window=3, confirm_bypass=1000.0), [window(True)])
    assert not raised(d)


def test_a_block_already_above_base_is_not_held_back():
    ri = window(True, hot_nodes=("dn1", "dn2", "dn3"))  # base 2, three replicas
    (d,), _ = run(policy(hot_rounds=3, hot_window=3), [ri])
    assert "h" in replicate_map(ri, d)


def test_min_hold_keeps_an_extra_replica_until_enough_rounds_without_heat():
    raised_ri = window(False, hot_nodes=("dn1", "dn2", "dn3"))  # extra replica, no demand
    # round 1 hot (the state remembers it), then rounds without heat
    first = window(True, hot_nodes=("dn1", "dn2", "dn3"))
    seq = [first] + [raised_ri] * 3
    ds, _ = run(policy(), seq)
    assert "h" in dereplicate_map(raised_ri, ds[1])  # the default lowers at once
    ds, _ = run(policy(min_hold_rounds=3), seq)
    lowered = ["h" in dereplicate_map(raised_ri, d) for d in ds[1:]]
    assert lowered == [False, False, True]  # after 3 rounds without heat, this one included
    assert ds[3].rule[0] == RULE_COOL


def test_min_hold_at_its_longest_reads_the_whole_hot_history():
    """min_hold_rounds 9: this round and the eight before it, every bit the history keeps."""
    raised_ri = window(False, hot_nodes=("dn1", "dn2", "dn3"))
    first = window(True, hot_nodes=("dn1", "dn2", "dn3"))
    ds, _ = run(policy(min_hold_rounds=9), [first] + [raised_ri] * 10)
    lowered = ["h" in dereplicate_map(raised_ri, d) for d in ds[1:]]
    assert lowered == [False] * 8 + [True, True]


def test_min_hold_does_not_keep_a_replica_of_a_block_never_seen_hot():
    ri = window(False, hot_nodes=("dn1", "dn2", "dn3"))
    (d,), _ = run(policy(min_hold_rounds=5), [ri])
    assert "h" in dereplicate_map(ri, d)


def racks_round(node_racks, hot_nodes=("dn1", "dn2")):
    ri = window(True, hot_nodes=hot_nodes)
    return dataclasses.replace(ri, node_racks=np.asarray(node_racks))


def test_replica_cap_from_cluster_size_and_racks():
    two_racks = racks_round([0] * 5 + [1] * 5)
    # uncapped: grows to every live node (10)
    (d,), _ = run(policy(), [two_racks])
    assert len(replicate_map(two_racks, d)["h"]) == 8
    # a quarter of 10 nodes -> 3
    (d,), _ = run(policy(replica_cap_fraction=0.25), [two_racks])
    assert len(replicate_map(two_racks, d)["h"]) == 1
    # a tenth of 10 nodes is 1, but at least one per rack: 4 racks -> 4
    four_racks = racks_round(np.arange(10) % 4)
    (d,), _ = run(policy(replica_cap_fraction=0.1), [four_racks])
    assert len(replicate_map(four_racks, d)["h"]) == 2
    # a cap at or under base still lets a hot block gain one
    one_rack = window(True)
    (d,), _ = run(policy(replica_cap_fraction=0.1), [one_rack])
    assert len(replicate_map(one_rack, d)["h"]) == 1


def test_replica_ceiling_is_a_scalar_without_a_cap():
    ri = racks_round([0] * 5 + [1] * 5)
    st_ = state_for(ri)
    assert replica_ceiling(ri, st_, params_for("adaptive", delay_threshold_s=10)) == 10
    c = replica_ceiling(ri, st_, params_for("adaptive", delay_threshold_s=10,
                                            replica_cap_fraction=0.5, max_replication=4))
    assert np.all(c == 4)  # max_replication still bounds it


@settings(max_examples=60, deadline=None)
@given(rounds(), st.sampled_from([0.1, 0.25, 0.5, 1.0]))
def test_capped_round_never_places_past_its_ceiling(round_and_state, fraction):
    ri, state = round_and_state
    ri = dataclasses.replace(ri, node_racks=np.arange(ri.n_nodes) % 3)
    p = params_for("adaptive", delay_threshold_s=10, replica_cap_fraction=fraction)
    d, _ = DsbraPolicy(p).decide(ri, state)
    rc = ri.replica_count()
    cap = max(int(np.ceil(fraction * ri.n_nodes - 1e-9)), len(np.unique(ri.node_racks)))
    for k, b in enumerate(d.replicate_block):
        added = d.replicate_indptr[k + 1] - d.replicate_indptr[k]
        ceiling = min(p.max_replication, ri.n_nodes, max(cap, int(state.base_replication[b]) + 1))
        assert rc[b] + added <= ceiling


def test_replicas_per_read_bounds_a_hot_block_by_its_maps_in_the_window():
    # "h" is read by 40 maps on 2 holders; unbounded it grows to every live node (10)
    ri = window(True, hot_tasks=40)
    (d,), _ = run(policy(replicas_per_read=0.1), [ri])
    assert len(replicate_map(ri, d)["h"]) == 2  # ceil(0.1 x 40) = 4 holders
    # a bound at or under base still lets a hot block gain one
    (d,), _ = run(policy(replicas_per_read=0.01), [ri])
    assert len(replicate_map(ri, d)["h"]) == 1
    st_ = state_for(ri)
    c = replica_ceiling(ri, st_, params_for("adaptive", delay_threshold_s=10,
                                            replicas_per_read=0.1, replica_cap_fraction=0.3))
    # the tighter of the two bounds: 3 nodes for "h" (ceil(0.3 x 10)); base + 1 for the others
    assert c[0] == 3 and np.all(c[1:] == 3)


@settings(max_examples=60, deadline=None)
@given(rounds(), st.sampled_from([0.25, 0.5, 1.0, 2.0]))
def test_demand_bounded_round_never_places_past_its_maps(round_and_state, per_read):
    ri, state = round_and_state
    p = params_for("adaptive", delay_threshold_s=10, replicas_per_read=per_read)
    d, _ = DsbraPolicy(p).decide(ri, state)
    rc = ri.replica_count()
    for k, b in enumerate(d.replicate_block):
        added = d.replicate_indptr[k + 1] - d.replicate_indptr[k]
        demand = int(np.ceil(per_read * ri.tasks[b] - 1e-9))
        ceiling = min(p.max_replication, ri.n_nodes,
                      max(demand, int(state.base_replication[b]) + 1))
        assert rc[b] + added <= ceiling


@settings(max_examples=60, deadline=None)
@given(rounds())
def test_hysteresis_off_by_default_changes_no_decision(round_and_state):
    """The profiles' defaults (hot_rounds 1, no hold, no cap) decide as before the options
    existed, whatever history the state holds."""
    ri, state = round_and_state
    rng = np.random.default_rng(len(ri))
    st_hist = dataclasses.replace(
        state, hot_history=rng.integers(0, 256, len(ri)).astype(np.uint8))
    a, _ = policy().decide(ri, state)
    b, _ = policy().decide(ri, st_hist)
    for f in ("replicate_block", "replicate_indptr", "replicate_nodes", "dereplicate_block",
              "dereplicate_node", "rule"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_candidate_profiles_differ_from_adaptive_only_in_the_new_options():
    new = {"hot_rounds", "hot_window", "min_hold_rounds", "replica_cap_fraction", "max_replication"}
    for name in ("adaptive-hysteresis", "adaptive-capped", "adaptive-hysteresis-capped",
                 "adaptive-hold"):
        diff = {k for k in set(PROFILES[name]) | set(PROFILES["adaptive"])
                if PROFILES[name].get(k) != PROFILES["adaptive"].get(k)}
        assert diff and diff <= new
        expected = "dsbra" if name == DEFAULT_PROFILE else f"dsbra-{name}"
        assert DsbraPolicy.from_profile(name, delay_threshold_s=5).name == expected


@pytest.mark.parametrize("bad, match", [
    (dict(hot_rounds=3, hot_window=2), "hot_rounds"),
    (dict(hot_window=9, hot_rounds=1), "hot_window"),
    (dict(hot_rounds=0), "hot_rounds"),
    (dict(min_hold_rounds=-1), "min_hold_rounds"),
    (dict(min_hold_rounds=10), "min_hold_rounds"),  # beyond the rounds the history keeps
    (dict(replica_cap_fraction=0.0), "replica_cap_fraction"),
    (dict(replica_cap_fraction=1.5), "replica_cap_fraction"),
    (dict(confirm_bypass=0.5), "confirm_bypass"),
    (dict(replicas_per_read=0), "replicas_per_read"),
    (dict(replicas_per_read="many"), "replicas_per_read"),
])
def test_bad_options_are_refused(bad, match):
    with pytest.raises(InputError, match=match):
        params_for("adaptive", delay_threshold_s=5, **bad)


def test_node_racks_must_cover_the_live_nodes():
    ri = dataclasses.replace(window(True), node_racks=np.zeros(3))
    with pytest.raises(InputError, match="node_racks"):
        ri.validate()


def sample_state():
    ids = np.array([11, 5, 7], np.int64)
    return BlockState(block_ids=ids, y=[0.1, 0.2, 0.3], n=[1, 2, 3], base_replication=[2, 2, 3],
                      file_index=[0, 1, 2], idle_rounds=[0, 1, 2], round=4,
                      hot_history=[0b101, 0, 1])


def test_state_file_round_trips_the_hysteresis_column(tmp_path):
    save_state(tmp_path / "s.parquet", sample_state())
    got = load_state(tmp_path / "s.parquet")
    np.testing.assert_array_equal(got.hot_history, [0b101, 0, 1])
    assert pq.read_schema(tmp_path / "s.parquet").names[-1] == "hot_history"


def test_a_state_file_without_the_column_loads_without_history(tmp_path):
    path = tmp_path / "s.parquet"
    save_state(path, sample_state())
    table = pq.read_table(path)
    old = table.drop(["hot_history"]).replace_schema_metadata(table.schema.metadata)
    pq.write_table(old, path)
    got = load_state(path)
    np.testing.assert_array_equal(got.hot_history, [0, 0, 0])
    np.testing.assert_array_equal(got.y, [0.1, 0.2, 0.3])
    assert isinstance(table, pa.Table)


def test_a_state_file_with_the_former_since_hot_column_loads(tmp_path):
    """Files written before 2026-12-07 also hold since_hot (int32): it is not read."""
    path = tmp_path / "s.parquet"
    save_state(path, sample_state())
    table = pq.read_table(path)
    pq.write_table(table.append_column("since_hot", pa.array([1, 1 << 30, 0], pa.int32()))
                   .replace_schema_metadata(table.schema.metadata), path)
    got = load_state(path)
    np.testing.assert_array_equal(got.hot_history, [0b101, 0, 1])
    assert not hasattr(got, "since_hot")


def test_alignment_and_the_daemons_merge_carry_the_history():
    s = sample_state()
    ri = make_round(NODES, [dict(id=7, nodes=["dn1"]), dict(id=11, nodes=["dn2"]),
                            dict(id=99, nodes=["dn3"])])
    ri = dataclasses.replace(ri, block_ids=np.array([7, 11, 99], np.int64))
    a = s.aligned_to(ri)
    np.testing.assert_array_equal(a.hot_history, [1, 0b101, 0])
    aligned, rest = split_state(s, ri)
    np.testing.assert_array_equal(rest.block_ids, [5])
    merged = merge_state(aligned, rest)
    by_id = dict(zip(merged.block_ids.tolist(), merged.hot_history.tolist()))
    assert by_id == {7: 1, 11: 0b101, 99: 0, 5: 0}
