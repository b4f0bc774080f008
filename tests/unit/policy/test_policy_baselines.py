"""static, scarlett and dare, hand-computed on small rounds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dsbra.errors import InputError
from dsbra.policy.api import (RULE_AGED, RULE_BUDGET, RULE_NONLOCAL, RULE_READERS,
                              RULE_READERS_LOWER, FileTable, Policy)
from dsbra.policy.registry import make_policy
from policy_helpers import dereplicate_map, make_round, replicate_map, state_for

NODES = ["dn1", "dn2", "dn3", "dn4", "dn5"]


def test_factory_names_and_protocol():
    for name, kw in [("static", {}), ("dsbra", {"delay_threshold_s": 5}),
                     ("dsbra-literal", {"delay_threshold_s": 5}), ("scarlett", {}), ("dare", {})]:
        pol = make_policy(name, **kw)
        assert isinstance(pol, Policy)
        assert pol.name == name
    with pytest.raises(InputError, match="unknown policy"):
        make_policy("lru")


def test_static_changes_nothing():
    ri = make_round(NODES, [dict(id="a", nodes=["dn1", "dn2", "dn3"], base=1, tasks=9,
                                 delayed=9, delay=90.0, remote=9, peak=9)])
    d, st = make_policy("static").decide(ri, None)
    assert replicate_map(ri, d) == {} and dereplicate_map(ri, d) == {}
    assert st.round == 1


def scarlett_round():
    # one-block files of 100 bytes; base bytes = 2*100 + 1*100 + 1*100 + 3*100 = 700
    blocks = [dict(id="p", nodes=["dn1", "dn2"], base=2, peak=4, tasks=4),  # wants 5: +3
              dict(id="q", nodes=["dn2"], base=1, peak=2, tasks=2),  # wants 3: +2
              dict(id="r", nodes=["dn3"], base=1, peak=0),  # at base
              dict(id="s", nodes=["dn3", "dn4", "dn5"], base=1, peak=0)]  # readers gone: -1
    files = FileTable(paths=np.array(["/p", "/q", "/r", "/s"], dtype=object),
                      base_replication=[2, 1, 1, 1], current_replication=[2, 1, 1, 3],
                      length_bytes=[100] * 4, block_count=[1] * 4)
    return make_round(NODES, blocks, files=files)


def test_scarlett_round_robin_within_budget():
    ri = scarlett_round()
    # budget 0.6 * (2+1+1+1)*100 = 300 bytes; /s already holds 200 extra -> 100 left:
    # one increment, round-robin, most-read first -> p gets one replica, q none.
    d, _ = make_policy("scarlett", budget_fraction=0.6).decide(ri, None)
    # node load (replicas held): dn1 1, dn2 2, dn3 2, dn4 1, dn5 1 -> coolest non-holders of p:
    # dn4, dn5 (1 each, name order)
    assert replicate_map(ri, d) == {"p": ["dn4"]}
    assert dereplicate_map(ri, d) == {"s": "dn3"}  # most loaded holder (dn3 holds 2)
    assert list(d.rule) == [RULE_READERS, RULE_BUDGET, 0, RULE_READERS_LOWER]
    assert list(d.rf) == [4.0, 2.0, 0.0, 0.0]
    # a larger budget: 1.6 * 500 = 800, 600 left: p +3, q +2, rounds: p, q, p, q, p
    d, _ = make_policy("scarlett", budget_fraction=1.6).decide(ri, None)
    assert replicate_map(ri, d) == {"p": ["dn4", "dn5", "dn3"], "q": ["dn1", "dn4"]}


def test_scarlett_budget_of_the_stored_bytes_when_given():
    """0.6 of 1000 stored bytes (not of the round's 500): 400 left after /s's 200, four
    increments in round-robin order p, q, p, q."""
    ri = dataclasses.replace(scarlett_round(), storage_base_bytes=1000.0)
    d, _ = make_policy("scarlett", budget_fraction=0.6).decide(ri, None)
    assert {b: len(n) for b, n in replicate_map(ri, d).items()} == {"p": 2, "q": 2}


def test_scarlett_respects_max_replication():
    ri = scarlett_round()
    d, _ = make_policy("scarlett", budget_fraction=10, max_replication=3).decide(ri, None)
    assert replicate_map(ri, d) == {"p": ["dn4"], "q": ["dn1", "dn4"]}


def dare_round():
    blocks = [dict(id="a", nodes=["dn1"], base=1, tasks=3, remote=2),
              dict(id="b", nodes=["dn2", "dn3"], base=1),  # unread, extra replica
              dict(id="c", nodes=["dn2"], base=1, tasks=1)]
    return make_round(NODES, blocks)


def test_dare_p_one_and_ageing():
    ri = dare_round()
    st = state_for(ri)
    st = type(st)(**{**st.__dict__, "idle_rounds": np.array([0, 4, 0], np.int32)})
    d, st2 = make_policy("dare", p=1.0, max_idle_rounds=5).decide(ri, st)
    assert replicate_map(ri, d) == {"a": ["dn4"]}  # least loaded non-holder (0 replicas)
    assert dereplicate_map(ri, d) == {"b": "dn2"}  # idle 5 rounds now; dn2 holds 2
    assert list(d.rule) == [RULE_NONLOCAL, RULE_AGED, 0]
    assert list(st2.idle_rounds) == [0, 5, 0]


def test_dare_p_zero_and_determinism():
    ri = dare_round()
    d, _ = make_policy("dare", p=0.0).decide(ri, None)
    assert replicate_map(ri, d) == {}
    # p = 0.5 with 2 non-local reads: keep probability 0.75; same seed and round, same result
    many = make_round(NODES, [dict(id=f"x{i}", nodes=["dn1"], base=1, tasks=2, remote=2)
                              for i in range(400)])
    runs = [make_policy("dare", p=0.5, seed=3).decide(many, None)[0] for _ in range(2)]
    np.testing.assert_array_equal(runs[0].replicate_block, runs[1].replicate_block)
    kept = len(runs[0].replicate_block) / 400
    assert 0.65 < kept < 0.85
    other = make_policy("dare", p=0.5, seed=4).decide(many, None)[0]
    assert not np.array_equal(other.replicate_block, runs[0].replicate_block)


def test_baseline_parameters_are_checked():
    with pytest.raises(InputError):
        make_policy("dare", p=1.5)
    with pytest.raises(InputError):
        make_policy("scarlett", budget_fraction=-0.1)
