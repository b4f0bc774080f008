"""Invariants of every policy and of the rails, on random valid rounds (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbra.policy.api import BlockState, RoundInput
from dsbra.policy.rails import Rails, plan_files
from dsbra.policy.registry import make_policy
from policy_strategies import rounds

POLICIES = [("static", {}), ("dsbra", {"delay_threshold_s": 10.0}),
            ("dsbra-literal", {"delay_threshold_s": 10.0}),
            ("dsbra", {"delay_threshold_s": 10.0, "gavg_scope": "all", "max_replication": 3}),
            ("scarlett", {"budget_fraction": 0.3}), ("dare", {"p": 0.5, "seed": 7})]


def _csr_rows(indptr, values):
    return [values[indptr[k]:indptr[k + 1]] for k in range(len(indptr) - 1)]


def check_decision(ri, st, d, max_replication):
    rc = ri.replica_count()
    holders = _csr_rows(ri.replica_indptr, ri.replica_nodes)
    assert len(set(d.replicate_block)) == len(d.replicate_block)
    assert len(set(d.dereplicate_block)) == len(d.dereplicate_block)
    assert not set(d.replicate_block) & set(d.dereplicate_block)
    ceiling = min(max_replication, ri.n_nodes)
    for b, targets in zip(d.replicate_block, _csr_rows(d.replicate_indptr, d.replicate_nodes)):
        assert len(targets) >= 1
        assert len(set(targets)) == len(targets)
        assert not set(targets) & set(holders[b])  # only nodes not holding it
        assert rc[b] + len(targets) <= ceiling
    for b, node in zip(d.dereplicate_block, d.dereplicate_node):
        assert node in holders[b]
        assert rc[b] - 1 >= st.base_replication[b]  # never below base


@settings(max_examples=60, deadline=None)
@given(data=rounds(), which=st.sampled_from(range(len(POLICIES))))
def test_decisions_respect_invariants(data, which):
    ri, state = data
    name, params = POLICIES[which]
    pol = make_policy(name, **params)
    d, new_state = pol.decide(ri, state)
    check_decision(ri, state, d, params.get("max_replication", 10))
    assert len(new_state) == len(ri)
    assert new_state.round == state.round + 1
    # deterministic: the same input and state give the same decision and state
    d2, new_state2 = make_policy(name, **params).decide(ri, state)
    for f in ("replicate_block", "replicate_indptr", "replicate_nodes", "dereplicate_block",
              "dereplicate_node", "rf", "rule", "dn_avg"):
        np.testing.assert_array_equal(getattr(d, f), getattr(d2, f))
    np.testing.assert_array_equal(new_state.y, new_state2.y)


@settings(max_examples=80, deadline=None)
@given(data=rounds(), which=st.sampled_from(range(len(POLICIES))),
       budget=st.one_of(st.none(), st.integers(0, 3_000_000)),
       caps=st.tuples(*[st.one_of(st.none(), st.integers(0, 5))] * 2),
       byte_cap=st.one_of(st.none(), st.integers(0, 2_000_000)),
       min_rep=st.integers(1, 3), max_above_min=st.one_of(st.none(), st.integers(0, 4)))
def test_file_plan_respects_rails(data, which, budget, caps, byte_cap, min_rep, max_above_min):
    ri, state = data
    max_rep = None if max_above_min is None else min_rep + max_above_min
    name, params = POLICIES[which]
    d, _ = make_policy(name, **params).decide(ri, state)
    rails = Rails(min_replication=min_rep, max_replication=max_rep,
                  storage_budget_bytes=budget, max_files_per_round=caps[0],
                  max_replicas_per_round=caps[1], max_bytes_per_round=byte_cap,
                  protected=("/data/hot/*",))
    plan = plan_files(ri, d, rails)
    files = ri.files
    f = plan.file_index
    base = files.base_replication[f].astype(int)
    cur, tgt = plan.current.astype(int), plan.target.astype(int)
    down, up = tgt < cur, tgt > cur
    floor = np.maximum(base, min_rep)
    ceiling = ri.n_nodes if max_rep is None else min(max_rep, ri.n_nodes)
    assert np.all(tgt[down] >= floor[down])  # no file lowered below base / cluster minimum
    assert np.all(tgt[up] <= ceiling)  # none raised above max replication or live nodes
    assert not np.any((tgt != cur) & np.array([p.startswith("/data/hot/") for p in plan.paths],
                                               bool))
    if caps[0] is not None:
        assert np.count_nonzero(tgt != cur) <= caps[0]
    added = np.maximum(tgt - cur, 0)
    if caps[1] is not None:
        assert added.sum() <= caps[1]
    length = files.length_bytes[f]
    if byte_cap is not None:
        assert (added * length).sum() <= byte_cap
    if budget is not None and added.sum():
        assert plan.extra_bytes_after <= budget  # budget respected whenever we grow
    assert plan.extra_bytes_after == (plan.extra_bytes_before
                                      - int(np.sum(np.maximum(cur - tgt, 0) * length))
                                      + int(np.sum(added * length)))
    # placement lists exactly the added replicas
    assert np.array_equal(np.diff(plan.placement_indptr), added)
    # re-running on the same input gives the same plan
    plan2 = plan_files(ri, d, rails)
    assert plan.to_records(ri.node_names) == plan2.to_records(ri.node_names)


@pytest.mark.parametrize("name,params", POLICIES)
def test_empty_round(name, params):
    ri = RoundInput(block_ids=np.zeros(0, np.int64), file_index=[], tasks=[], delayed_tasks=[],
                    delay_s=[], nonlocal_tasks=[], peak_readers=[], replica_indptr=[0],
                    replica_nodes=[], base_replication=[], node_names=["dn1"])
    d, s = make_policy(name, **params).decide(ri, BlockState.empty())
    assert len(d.replicate_block) == 0 and len(d.dereplicate_block) == 0 and len(s) == 0


@settings(max_examples=60, deadline=None)
@given(old=st.lists(st.integers(0, 50), unique=True), new=st.lists(st.integers(0, 50),
                                                                   unique=True),
       as_str=st.booleans())
def test_state_alignment_follows_block_ids(old, new, as_str):
    conv = (lambda v: np.array([f"b{i}" for i in v], dtype=object)) if as_str else (
        lambda v: np.array(v, dtype=np.int64))
    state = BlockState(block_ids=conv(old), y=[i / 10 for i in old], n=old,
                       base_replication=[1 + i % 3 for i in old], file_index=old,
                       idle_rounds=old, round=5)
    k = len(new)
    ri = RoundInput(block_ids=conv(new), file_index=np.arange(k), tasks=np.zeros(k),
                    delayed_tasks=np.zeros(k), delay_s=np.zeros(k), nonlocal_tasks=np.zeros(k),
                    peak_readers=np.zeros(k), replica_indptr=np.zeros(k + 1),
                    replica_nodes=[], base_replication=np.full(k, 7), node_names=["dn1"])
    got = state.aligned_to(ri)
    assert got.round == 5 and list(got.file_index) == list(range(k))
    for row, bid in enumerate(new):
        if bid in old:
            assert got.y[row] == bid / 10 and got.n[row] == bid
            assert got.base_replication[row] == 1 + bid % 3
        else:
            assert got.y[row] == 0 and got.n[row] == 0 and got.base_replication[row] == 7


@settings(max_examples=80, deadline=None)
@given(data=rounds(), gate=st.floats(0, 1), cold_low=st.floats(0, 1), cold_high=st.floats(0, 1),
       hot_margin=st.floats(0, 1), step=st.floats(0.01, 1), alpha=st.floats(0, 1),
       k=st.floats(0.25, 4), max_rep=st.integers(1, 12),
       scope=st.sampled_from(["all", "active"]),
       order=st.sampled_from(["ascending", "descending"]),
       mode=st.sampled_from(["fixed", "adaptive"]), hot_factor=st.floats(0, 5),
       min_pressure=st.floats(0, 3), min_reads=st.integers(1, 4), share=st.floats(0.01, 1),
       budget=st.one_of(st.none(), st.floats(0, 2)),
       read_factor=st.one_of(st.none(), st.floats(0.1, 4)))
def test_dsbra_invariants_hold_for_any_thresholds(data, gate, cold_low, cold_high, hot_margin,
                                                  step, alpha, k, max_rep, scope, order, mode,
                                                  hot_factor, min_pressure, min_reads, share,
                                                  budget, read_factor):
    ri, state = data
    pol = make_policy("dsbra", delay_threshold_s=7.0, gate=gate, cold_low=cold_low,
                      cold_high=cold_high, hot_margin=hot_margin, step=step, alpha=alpha,
                      rf_divisor=k, max_replication=max_rep, gavg_scope=scope,
                      placement_order=order, thresholds=mode, hot_factor=hot_factor,
                      min_pressure=min_pressure, min_reads=min_reads, holder_share=share,
                      budget_fraction=budget, read_factor=read_factor)
    d, _ = pol.decide(ri, state)
    check_decision(ri, state, d, max_rep)
    if mode == "adaptive":  # a block read fewer than min_reads times in the window never grows
        assert (ri.tasks[d.replicate_block] >= min_reads).all()
        if read_factor is not None and len(d.replicate_block):  # nor one read less than
            read = ri.tasks[ri.tasks > 0]      # read_factor x the average, or than the most read
            floor = min(read_factor * read.mean(), read.max())
            assert (ri.tasks[d.replicate_block] >= floor - 1e-9).all()
