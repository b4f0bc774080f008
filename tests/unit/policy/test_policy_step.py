"""One round's choreography (dsbra.policy.step), which the daemon and the simulator both run:
the policy's decision on, off and paused, and the control group held out (hand-computed on the
rails' scenario)."""

from __future__ import annotations

import numpy as np

from dsbra.experiment.design import CONTROL, Holdout
from dsbra.policy.rails import STATUS_HELD_OUT, Rails
from dsbra.policy.step import ACTING, PAUSED, SWITCHED_OFF, step
from test_policy_rails import by_file, scenario


class Decided:
    """A policy that decides what it is given and counts the rounds it learned from."""

    def __init__(self, decision):
        self.decision, self.rounds = decision, 0

    def decide(self, ri, state):
        self.rounds += 1
        return self.decision, ("state", self.rounds)


def test_an_acting_round_plans_the_policys_decision():
    ri, d = scenario()
    done = step(Decided(d), ri, None, Rails())
    assert done.mode == ACTING and done.decision is done.decided is d
    assert by_file(done.plan)["/a"]["target"] == 4 and done.state == ("state", 1)


def test_an_off_period_takes_every_file_above_base_back_and_the_policy_still_learns():
    ri, d = scenario()
    policy = Decided(d)
    done = step(policy, ri, None, Rails(), off=True)
    plan = by_file(done.plan)
    assert done.mode == SWITCHED_OFF and policy.rounds == 1
    assert done.decided is d and not len(done.decision.replicate_block)
    assert plan["/b"]["target"] == 2 and plan["/d"]["target"] == 1  # above base: to base
    assert "/a" not in plan and "/c" not in plan  # nothing raised
    assert done.decision.rf is d.rf  # the scores kept for the log


def test_a_paused_round_plans_but_does_not_act():
    ri, d = scenario()
    done = step(Decided(d), ri, None, Rails(), paused=True)
    assert done.mode == PAUSED
    assert by_file(done.plan)["/a"]["target"] == 4  # what it would have done, for the page


def test_the_control_group_is_held_out_by_the_rails():
    ri, d = scenario()
    control = Holdout(0.5, assigned={"/a": CONTROL})
    plan = step(Decided(d), ri, None, Rails(), control_group=control).plan
    row = int(np.flatnonzero(plan.paths == "/a")[0])
    assert plan.status[row] == STATUS_HELD_OUT and plan.target[row] == plan.current[row]
