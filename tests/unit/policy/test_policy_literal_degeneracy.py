"""The paper-literal profile (k = 2) never replicates when waits are capped at D.

With M <= N and DT <= D * M (each delayed task waits at most D), X = (M/N + DT/(D N)) / 2 <= 1.
If Y <= B = alpha / (1 + alpha), then RF = (alpha X + (1 - alpha) Y) / 2 <= B, and Y' (a mean
of such values) stays <= B. Replication needs GAvg > gate = 0.2 and RF > GAvg + 0.2 > 0.4,
impossible while B <= 0.4, i.e. alpha <= 2/3 (the paper's alpha = 0.5 gives B = 1/3).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbra.policy.dsbra import DsbraPolicy
from dsbra.policy.profiles import params_for
from dsbra.policy.registry import make_policy
from policy_helpers import make_round
from policy_strategies import rounds


def worst_case_sequence(profile: str, rounds_: int = 12):
    """RF of one block whose every task waits the full D, round after round, beside a block
    read without delay and an unread one. Returns (rf per round, gavg per round, replicated?)."""
    blocks = [dict(id="hot", nodes=["dn1"], base=1, tasks=4, delayed=4, delay=40.0),
              dict(id="calm", nodes=["dn2"], base=1, tasks=4),
              dict(id="idle", nodes=["dn2"], base=1)]
    ri = make_round(["dn1", "dn2", "dn3"], blocks)
    pol = DsbraPolicy(params_for(profile, delay_threshold_s=10))
    state, rfs, gavgs, replicated = None, [], [], False
    for _ in range(rounds_):
        d, state = pol.decide(ri, state)
        rfs.append(float(d.rf[0]))
        gavgs.append(d.gavg)
        replicated |= len(d.replicate_block) > 0
    return rfs, gavgs, replicated


def test_worst_case_block_converges_to_one_third_and_never_replicates():
    rfs, gavgs, replicated = worst_case_sequence("paper-literal")
    # RF_1 = (0.5 * 1 + 0) / 2 = 0.25, RF_2 = (0.5 + 0.5 * 0.25) / 2 = 0.3125, ...
    assert rfs[0] == pytest.approx(0.25)
    assert rfs[1] == pytest.approx(0.3125)
    assert rfs[2] == pytest.approx((0.5 + 0.5 * (0.25 + 0.3125) / 2) / 2)
    assert all(r <= 1 / 3 + 1e-12 for r in rfs)
    assert rfs[-1] == pytest.approx(1 / 3, abs=5e-3)
    assert not replicated
    # the same block under the calibrated profile is hot from the first round
    rfs_c, _, replicated_c = worst_case_sequence("calibrated")
    assert rfs_c[0] == pytest.approx(0.5)
    assert replicated_c


@settings(max_examples=60, deadline=None)
@given(data=rounds(max_blocks=60, capped_waits=True), n_rounds=st.integers(1, 6),
       alpha=st.floats(0.0, 2 / 3))
def test_literal_never_replicates_with_capped_waits(data, n_rounds, alpha):
    ri, state = data  # histories start at Y <= 1/3; shrink them to the alpha's bound
    bound = alpha / (1 + alpha)
    state = type(state)(**{**state.__dict__, "y": np.minimum(state.y, bound)})
    pol = make_policy("dsbra-literal", delay_threshold_s=10.0, alpha=alpha)
    for _ in range(n_rounds):
        d, state = pol.decide(ri, state)
        assert len(d.replicate_block) == 0
        assert d.rf.max(initial=0.0) <= bound + 1e-12
        assert state.y.max(initial=0.0) <= bound + 1e-12
