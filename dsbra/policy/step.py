"""One round's choreography, the daemon's and the simulator's alike.

The policy decides on the round's window (its state learns in every round, paused or not); in
a switchback's off period every file above its base goes back to it instead of what the policy
wished; the rails fold the wish into per-file targets and hold the control group's raises back;
a paused round (`dsbra pause`, or the do-no-harm guard) decides and plans but acts on nothing.
``keep`` leaves files another decider holds alone: the daemon's round and its fast poll
(dsbra.daemon.fastpoll) each lower only the files they raised.
What comes in and what goes out is the caller's: the daemon reads Hadoop and writes through
WebHDFS (dsbra.daemon.service), the simulator reads and changes its own HDFS
(dsbra.sim.policy_driver). Both call :func:`step`, so the two cannot drift apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from dsbra.errors import InputError
from dsbra.policy.api import RULE_SWITCHED_OFF, BlockState, Decision, RoundInput
from dsbra.policy.rails import ControlGroup, FilePlan, Rails, plan_files

#: what a round does with its plan
ACTING = "acting"  #: applied as planned (dry-run or refusals permitting)
SWITCHED_OFF = "switched-off"  #: a switchback's off period: raised files back to base
PAUSED = "paused"  #: decided and planned, nothing applied


@dataclass
class Step:
    decided: Decision  #: the policy's own decision (its raises, also in an off period)
    decision: Decision  #: what the plan was made of: ``decided``, or the off period's
    state: BlockState  #: the policy's state after the round
    plan: FilePlan
    mode: str  #: ACTING, SWITCHED_OFF or PAUSED


def step(policy, ri: RoundInput, state: BlockState | None, rails: Rails, *,
         control_group: ControlGroup | None = None, off: bool = False,
         paused: bool = False, keep: np.ndarray | None = None) -> Step:
    """Decide, switch off if ``off``, plan within ``rails`` holding ``control_group`` out;
    ``keep`` (per file of ``ri.files``): files none of whose replicas this step drops (an off
    period drops them all the same: it takes every raised file back to base)."""
    decided, new_state = policy.decide(ri, state)
    decision = (switched_off(ri, decided) if off else
                decided if keep is None else without_lowering(ri, decided, keep))
    plan = plan_files(ri, decision, rails, control_group)
    mode = PAUSED if paused else SWITCHED_OFF if off else ACTING
    return Step(decided, decision, new_state, plan, mode)


def switched_off(ri: RoundInput, decision: Decision) -> Decision:
    """An off period's decision in place of the policy's: nothing raised, and every block of a
    file above its base replication lowered (the rails take such a file straight to its base,
    :func:`dsbra.policy.rails.plan_files`); the policy's scores kept for the log. The policy's
    state still learns from the round, so an on period starts from what it has seen."""
    if ri.files is None:
        raise InputError("a switchback's off period needs the round's file table")
    above = ri.files.current_replication > ri.files.base_replication
    blocks = np.flatnonzero(above[ri.file_index])
    held = ri.replica_indptr[blocks + 1] > ri.replica_indptr[blocks]
    blocks = blocks[held]  # a block with no live replica listed has none to drop
    rule = np.zeros(len(ri), np.int8)
    rule[blocks] = RULE_SWITCHED_OFF
    return Decision(policy=decision.policy, replicate_block=[], replicate_indptr=[0],
                    replicate_nodes=[], dereplicate_block=blocks,
                    dereplicate_node=ri.replica_nodes[ri.replica_indptr[blocks + 1] - 1],
                    rf=decision.rf, rule=rule, gavg=decision.gavg, dn_avg=decision.dn_avg,
                    params=decision.params)


def without_lowering(ri: RoundInput, decision: Decision, keep: np.ndarray) -> Decision:
    """``decision`` with no replica dropped from the blocks of the files ``keep`` marks (per
    file of ``ri.files``); its raises, scores and rules as they were."""
    if ri.files is None:
        raise InputError("keeping files needs the round's file table")
    if keep.shape != (len(ri.files),):
        raise InputError(f"keep has shape {keep.shape}, expected ({len(ri.files)},)")
    drop = ~keep[ri.file_index[decision.dereplicate_block]]
    if drop.all():
        return decision
    return dataclasses.replace(decision, dereplicate_block=decision.dereplicate_block[drop],
                               dereplicate_node=decision.dereplicate_node[drop])
