"""The vectorised round equals the per-block reference loop, on random rounds and parameters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbra.policy import placement
from dsbra.policy.dsbra import DsbraPolicy
from dsbra.policy.profiles import params_for
from dsbra.policy.reference import as_python_blocks, loop_round
from policy_strategies import rounds

params = st.fixed_dictionaries({
    "delay_threshold_s": st.sampled_from([0.5, 3.0, 10.0]),
    "alpha": st.floats(0, 1),
    "rf_divisor": st.sampled_from([1.0, 2.0, 0.5]),
    "gavg_scope": st.sampled_from(["all", "active"]),
    "gate": st.sampled_from([0.0, 0.1, 0.2, 0.5]),
    "cold_low": st.sampled_from([0.0, 0.1, 0.3]),
    "cold_high": st.sampled_from([0.1, 0.2, 0.6]),
    "hot_margin": st.sampled_from([0.0, 0.05, 0.2]),
    "step": st.sampled_from([0.05, 0.2, 0.5]),
    "max_replication": st.integers(1, 9),
    "placement_order": st.sampled_from(["ascending", "descending"]),
})


@settings(max_examples=150, deadline=None)
@given(data=rounds(max_blocks=60, max_nodes=10), p=params, profile=st.sampled_from(
    ["calibrated", "paper-literal"]))
def test_vectorised_round_equals_reference_loop(data, p, profile):
    ri, state = data
    pol = DsbraPolicy(params_for(profile, **p))
    d, new_state = pol.decide(ri, state)
    rf, y_next, gavg, heat, rep, derep = loop_round(as_python_blocks(ri, state),
                                                   list(ri.node_names), pol.params.as_dict())
    # RF and Y follow the formulas' operation order: bit-identical, so thresholds agree too
    np.testing.assert_array_equal(d.rf, rf)
    np.testing.assert_array_equal(new_state.y, y_next)
    np.testing.assert_allclose(d.gavg, gavg, rtol=1e-12, atol=1e-15)  # summation order
    np.testing.assert_allclose(d.dn_avg, heat, rtol=1e-12, atol=1e-15)
    got_rep = {int(b): d.replicate_nodes[d.replicate_indptr[k]:d.replicate_indptr[k + 1]].tolist()
               for k, b in enumerate(d.replicate_block)}
    assert got_rep == rep
    assert dict(zip(d.dereplicate_block.tolist(), d.dereplicate_node.tolist())) == derep


@settings(max_examples=100, deadline=None)
@given(data=rounds(max_blocks=80, max_nodes=12), seed=st.integers(0, 2**16),
       batch_cells=st.sampled_from([1, 7, 64, 1 << 24]))
def test_placement_and_removal_match_brute_force(data, seed, batch_cells):
    ri, _ = data
    rng = np.random.default_rng(seed)
    heat = rng.integers(0, 4, ri.n_nodes).astype(float)  # many ties
    order, rank = placement.node_order(heat, ri.node_names)
    expected_order = sorted(range(ri.n_nodes), key=lambda j: (heat[j], ri.node_names[j]))
    assert order.tolist() == expected_order
    rc = ri.replica_count()
    holders = [set(ri.replica_nodes[ri.replica_indptr[b]:ri.replica_indptr[b + 1]].tolist())
               for b in range(len(ri))]
    blocks = np.flatnonzero((rc < ri.n_nodes) & (rng.random(len(ri)) < 0.7))
    counts = np.array([rng.integers(1, ri.n_nodes - rc[b] + 1) for b in blocks], np.int64)
    old = placement._BATCH_CELLS
    placement._BATCH_CELLS = batch_cells
    try:
        indptr, nodes = placement.coolest_non_holders(ri.replica_indptr, ri.replica_nodes,
                                                      blocks, counts, order, rank)
    finally:
        placement._BATCH_CELLS = old
    for k, b in enumerate(blocks):
        want = [j for j in expected_order if j not in holders[b]][:counts[k]]
        assert nodes[indptr[k]:indptr[k + 1]].tolist() == want
    for fraction in (0.05, 1.0):  # the gather path and the all-replicas path
        held = np.flatnonzero((rc > 0) & (rng.random(len(ri)) < fraction))
        got = placement.hottest_holder(ri.replica_indptr, ri.replica_nodes, held, rank, order)
        for b, j in zip(held, got):
            assert j == max(holders[b], key=lambda n: expected_order.index(n))
