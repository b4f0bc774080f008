"""One DSBRA round, hand-computed from the formulas of design/dsbra-algorithm.md."""

from __future__ import annotations

import numpy as np
import pytest

from dsbra.errors import InputError
from dsbra.policy.api import RoundInput, RULE_COLD, RULE_COOL, RULE_HOT, RULE_HOT_AT_CAP, RULE_NONE
from dsbra.policy.dsbra import DsbraPolicy
from dsbra.policy.profiles import params_for
from policy_helpers import dereplicate_map, make_round, replicate_map, state_for

NODES = ["dn1", "dn2", "dn3", "dn4"]
# hot:   X = (2/2 + 20/(10*2))/2 = 1.0,      RF = .5*1.0 + .5*0.6 = 0.8
# warm:  X = (1/4 + 4/(10*4))/2 = 0.175,     RF = .5*0.175         = 0.0875
# cold:  N = 0 -> 1, X = 0,                  RF = .5*0.1           = 0.05
# cold2: N = 0, Y = 0,                       RF = 0 (inactive: not read, no history)
BLOCKS = [
    dict(id="hot", nodes=["dn1"], base=1, tasks=2, delayed=2, delay=20.0),
    dict(id="warm", nodes=["dn2"], base=1, tasks=4, delayed=1, delay=4.0),
    dict(id="cold", nodes=["dn2", "dn3", "dn4"], base=2),
    dict(id="cold2", nodes=["dn3", "dn4"], base=1),
]
Y = np.array([0.6, 0.0, 0.1, 0.0])
N = np.array([1, 0, 5, 0], np.int32)


def run(profile="calibrated", **overrides):
    ri = make_round(NODES, BLOCKS)
    pol = DsbraPolicy(params_for(profile, delay_threshold_s=10, **overrides))
    d, st = pol.decide(ri, state_for(ri, Y, N))
    return ri, d, st


def test_calibrated_round_by_hand():
    ri, d, st = run()
    np.testing.assert_allclose(d.rf, [0.8, 0.0875, 0.05, 0.0])
    # active = hot, warm (read) and cold (Y > 0): GAvg = 0.9375 / 3
    assert d.gavg == pytest.approx(0.3125)
    # DNAvg: dn1 {hot}, dn2 {warm, cold}, dn3 {cold, cold2}, dn4 {cold, cold2}
    np.testing.assert_allclose(d.dn_avg, [0.8, (0.0875 + 0.05) / 2, 0.025, 0.025])
    # hot: RF 0.8 > 0.3125 + 0.2, r = floor(0.4875 / 0.2) = 2, coolest first, tie dn3 < dn4
    assert replicate_map(ri, d) == {"hot": ["dn3", "dn4"]}
    # cold (RC 3 > 2) loses the replica on its hottest node dn2; cold2 (RC 2 > 1) ties
    # dn3/dn4 on heat and loses the larger name, dn4. warm is at base: untouched.
    assert dereplicate_map(ri, d) == {"cold": "dn2", "cold2": "dn4"}
    assert list(d.rule) == [RULE_HOT, RULE_NONE, RULE_COOL, RULE_COOL]
    np.testing.assert_allclose(st.y, [(0.6 * 1 + 0.8) / 2, 0.0875, (0.1 * 5 + 0.05) / 6, 0.0])
    assert list(st.n) == [2, 1, 6, 1]
    assert st.round == 1


def test_gavg_over_all_blocks():
    ri, d, _ = run(gavg_scope="all")
    assert d.gavg == pytest.approx(0.9375 / 4)
    # r = floor((0.8 - 0.234375) / 0.2) = floor(2.83) = 2
    assert replicate_map(ri, d) == {"hot": ["dn3", "dn4"]}


def test_paper_literal_round_by_hand():
    ri, d, _ = run("paper-literal")
    np.testing.assert_allclose(d.rf, [0.4, 0.04375, 0.025, 0.0])
    assert d.gavg == pytest.approx(0.46875 / 4)  # <= gate 0.2: dereplicate only
    assert replicate_map(ri, d) == {}
    assert dereplicate_map(ri, d) == {"cold": "dn2", "cold2": "dn4"}
    assert list(d.rule) == [RULE_NONE, RULE_NONE, RULE_COLD, RULE_COLD]


def test_gate_closed_uses_cold_low():
    # a single cold-ish block with RF 0.15: above cold_low (0.1) so kept while GAvg <= gate,
    # but removed (cold_high 0.2) when GAvg > gate.
    blocks = [dict(id="a", nodes=["dn1", "dn2", "dn3"], base=2)]  # RF = .5 * Y = 0.15
    ri = make_round(NODES, blocks)
    pol = DsbraPolicy(params_for("calibrated", delay_threshold_s=10))
    d, _ = pol.decide(ri, state_for(ri, np.array([0.3])))
    assert d.gavg == pytest.approx(0.15)
    assert dereplicate_map(ri, d) == {}
    pol_low_gate = DsbraPolicy(params_for("calibrated", delay_threshold_s=10, gate=0.1))
    d2, _ = pol_low_gate.decide(ri, state_for(ri, np.array([0.3])))
    assert dereplicate_map(ri, d2) == {"a": "dn3"}  # equal heat: the larger name goes
    assert d2.rule[0] == RULE_COOL


def test_placement_descending_is_algorithm1_as_printed():
    ri, d, _ = run(placement_order="descending")
    # non-holders of hot by DNAvg descending: dn2 (0.06875), then dn3/dn4 (tie, name asc)
    assert replicate_map(ri, d) == {"hot": ["dn2", "dn3"]}


def test_caps_max_replication_and_live_nodes():
    ri, d, _ = run(max_replication=2)
    assert replicate_map(ri, d) == {"hot": ["dn3"]}
    ri, d, _ = run(max_replication=1)
    assert replicate_map(ri, d) == {}
    assert d.rule[0] == RULE_HOT_AT_CAP
    # live-node cap: Y = 5 gives RF 3.0, GAvg 1.046, r = 9; only 3 non-holders are live
    ri = make_round(NODES, BLOCKS)
    y = Y.copy()
    y[0] = 5.0  # RF = 0.5 + 2.5 = 3.0
    d, _ = DsbraPolicy(params_for("calibrated", delay_threshold_s=10)).decide(ri, state_for(ri, y, N))
    assert replicate_map(ri, d) == {"hot": ["dn3", "dn4", "dn2"]}


def test_whole_steps_survive_binary_rounding():
    # alpha = 1: RF = X. RF a = 0.7, b = c = 0.1: GAvg 0.3, (0.7 - 0.3) / 0.2 = 2 steps
    blocks = [dict(id="a", nodes=["dn1"], base=1, tasks=5, delayed=4, delay=30.0),
              dict(id="b", nodes=["dn2"], base=1, tasks=5, delayed=1),
              dict(id="c", nodes=["dn2"], base=1, tasks=5, delayed=1)]
    ri = make_round(NODES, blocks)
    d, _ = DsbraPolicy(params_for("calibrated", delay_threshold_s=10, alpha=1.0)).decide(ri, None)
    np.testing.assert_allclose(d.rf, [0.7, 0.1, 0.1])
    assert len(replicate_map(ri, d)["a"]) == 2


def test_state_of_other_blocks_is_aligned():
    ri, d1, st = run()
    # the same blocks in another order, and one new block: history follows the ids
    blocks = [BLOCKS[2], dict(id="new", nodes=["dn1"], base=1), BLOCKS[0]]
    ri2 = make_round(NODES, blocks)
    d2, st2 = DsbraPolicy(params_for("calibrated", delay_threshold_s=10)).decide(ri2, st)
    assert list(st2.block_ids) == ["cold", "new", "hot"]
    assert list(st2.n) == [7, 1, 3]
    assert st2.round == 2


def test_bad_input_is_an_input_error():
    ri = make_round(NODES, [dict(id="a", nodes=["dn1"], tasks=1, delayed=2)])
    with pytest.raises(InputError, match="delayed_tasks"):
        DsbraPolicy(params_for("calibrated", delay_threshold_s=10)).decide(ri, None)
    with pytest.raises(InputError, match="delay_threshold_s"):
        params_for(delay_threshold_s=0)
    with pytest.raises(InputError, match="delay_threshold_s"):
        params_for()
    with pytest.raises(InputError, match="unknown parameter"):
        params_for(delay_threshold_s=1, bogus=1)


def test_replica_csr_is_stored_narrow_and_still_validated():
    ri = make_round(NODES, BLOCKS)
    assert (ri.replica_indptr.dtype, ri.replica_nodes.dtype) == (np.int32, np.int16)
    wide = dict(ri.__dict__, node_names=np.array([f"dn{j}" for j in range(40_000)], dtype=object))
    assert RoundInput(**wide).replica_nodes.dtype == np.int32
    # an id past int16 must not wrap into a valid node id on the way in
    bad = dict(ri.__dict__, replica_nodes=np.append(ri.replica_nodes[:-1].astype(np.int64), 65_536 + 1))
    with pytest.raises(InputError, match="replica node id out of range"):
        RoundInput(**bad).validate()


def test_overlapping_thresholds_hot_wins():
    # cold_high 0.9 would make "hot" cold too: it is replicated, not dereplicated
    blocks = BLOCKS[:2] + [dict(id="hot2", nodes=["dn3", "dn4"], base=1, tasks=2, delayed=2,
                                delay=20.0)]
    ri = make_round(NODES, blocks)
    d, _ = DsbraPolicy(params_for("calibrated", delay_threshold_s=10, cold_high=0.9, hot_margin=0.05)).decide(
        ri, state_for(ri, np.array([0.6, 0.0, 0.0]), np.array([1, 0, 0], np.int32)))
    assert "hot" in replicate_map(ri, d)
    assert "hot2" in dereplicate_map(ri, d)  # RF 0.5 < GAvg + margin: cool, RC 2 > 1
    assert not set(d.replicate_block) & set(d.dereplicate_block)
