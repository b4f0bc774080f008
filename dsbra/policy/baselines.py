"""The baselines DSBRA is compared with, behind the same :class:`~dsbra.policy.api.Policy`.

- ``static``: HDFS as it is: replication never changes.
- ``scarlett``: after Ananthanarayanan et al., "Scarlett: Coping with Skewed Content Popularity
  in MapReduce Clusters", EuroSys 2011. A file's desired replication follows its peak number of
  concurrent readers, r_f = max(base_f, peak_f + cushion), capped at min(max replication, live
  nodes). Increases are granted within a storage budget (extra bytes over base, default 10% of
  the base bytes) round-robin: every file below its desired count gets one more replica before
  any gets a second, most-read files first. Files whose readers fell lose one extra replica per
  round. Placement: the live nodes with the fewest replicas first.
- ``dare``: after Abad, Lu & Campbell, "DARE: Adaptive Data Replication for Efficient Cluster
  Scheduling", IEEE CLUSTER 2011. Each non-local map read of a block keeps the fetched copy as a
  new replica with probability p (a seeded RNG keyed by the round, so a round is reproducible);
  an extra replica not read for ``max_idle_rounds`` rounds is aged out, one per round. Placement:
  the node with the fewest replicas that does not hold the block (the reading node is not in
  the signals).
Every baseline keeps the DSBRA history fields of the state untouched (except the round counter
and the idle counters), so switching policy does not lose DSBRA's history.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dsbra.errors import InputError
from dsbra.policy import placement
from dsbra.policy.api import (RULE_AGED, RULE_BUDGET, RULE_NONLOCAL, RULE_READERS,
                              RULE_READERS_LOWER, BlockState, Decision, RoundInput)


def _next_state(ri: RoundInput, st: BlockState) -> BlockState:
    idle = np.where(ri.tasks > 0, 0, st.idle_rounds + 1)
    return BlockState(block_ids=ri.block_ids, y=st.y, n=st.n,
                      base_replication=st.base_replication, file_index=ri.file_index,
                      idle_rounds=idle, round=st.round + 1, hot_history=st.hot_history)


def _prepare(ri: RoundInput, state: BlockState | None) -> BlockState:
    ri.validate()
    return BlockState.fresh(ri) if state is None else state.aligned_to(ri)


def _storage_heat(ri: RoundInput) -> np.ndarray:
    """Replicas held per live node: the load the baselines balance on."""
    return np.bincount(ri.replica_nodes, minlength=ri.n_nodes).astype(np.float64)


def _per_file_max(values_list: tuple[np.ndarray, ...], fidx: np.ndarray,
                  n_files: int) -> list[np.ndarray]:
    """Max of each of ``values_list`` over each file's blocks (0 for a file without blocks),
    int64; the file grouping is found once for all of them (a pass over every block each)."""
    outs = [np.zeros(n_files, np.int64) for _ in values_list]
    if len(fidx) == 0:
        return outs
    if np.all(fidx[1:] >= fidx[:-1]):  # blocks grouped by file: one reduceat pass
        starts = np.flatnonzero(np.concatenate(([True], fidx[1:] != fidx[:-1])))
        for out, values in zip(outs, values_list):
            if len(starts) == len(fidx):  # one block per file
                out[fidx] = values
            else:
                out[fidx[starts]] = np.maximum.reduceat(values, starts)
    else:
        for out, values in zip(outs, values_list):
            np.maximum.at(out, fidx, values.astype(np.int64))
    return outs


@dataclass
class StaticPolicy:
    """Replication never changes (HDFS's default behaviour)."""

    name: str = "static"

    def decide(self, round_input: RoundInput,
               state: BlockState | None) -> tuple[Decision, BlockState]:
        st = _prepare(round_input, state)
        return Decision.nothing(self.name, round_input), _next_state(round_input, st)


@dataclass
class ScarlettPolicy:
    """Replicas in proportion to a file's peak concurrent readers, within a storage budget.

    ``budget_fraction``: extra bytes allowed over the base bytes of the files in the round
    (or over ``ri.storage_base_bytes`` when the round sees only part of the data).
    ``cushion``: replicas beyond the peak reader count (Scarlett's delta). ``block_bytes``: the
    size of a block when the round input carries no file table (each block is then a file).
    ``rf`` of the decision carries each block's file peak readers.
    """

    budget_fraction: float = 0.10
    cushion: int = 1
    max_replication: int = 10
    block_bytes: int = 128 * 1024 * 1024
    name: str = "scarlett"

    def __post_init__(self):
        if not 0 <= self.budget_fraction:
            raise InputError(f"budget_fraction must be >= 0, got {self.budget_fraction!r}")
        if self.cushion < 0 or self.max_replication < 1:
            raise InputError("cushion must be >= 0 and max_replication >= 1")

    def decide(self, round_input: RoundInput,
               state: BlockState | None) -> tuple[Decision, BlockState]:
        ri = round_input
        st = _prepare(ri, state)
        n_blocks = len(ri)
        fidx = ri.file_index.astype(np.int64)
        n_files = len(ri.files) if ri.files is not None else int(fidx.max(initial=-1)) + 1
        length = (ri.files.length_bytes if ri.files is not None
                  else np.bincount(fidx, minlength=n_files).astype(np.int64) * self.block_bytes)
        rc = ri.replica_count().astype(np.int64)
        # per file: base, current (max over its blocks' live replicas), peak readers
        base, cur, peak = _per_file_max((st.base_replication, rc, ri.peak_readers), fidx,
                                        n_files)
        ceiling = min(self.max_replication, ri.n_nodes)
        desired = np.clip(peak + self.cushion, base, max(ceiling, 1))
        desired = np.maximum(desired, base)
        # round-robin grant within the budget: increment k of file f costs length_f
        used = int(np.sum(np.maximum(cur - base, 0) * length))
        budget = int(self.budget_fraction * ri.budget_base_bytes(float(np.sum(base * length))))
        want = np.maximum(desired - cur, 0)
        f_up = np.flatnonzero(want > 0)
        prio = np.lexsort((f_up, -peak[f_up]))  # most-read first, then file index
        f_up = f_up[prio]
        inc_file = np.repeat(f_up, want[f_up])
        inc_k = np.arange(len(inc_file)) - np.repeat(np.cumsum(want[f_up]) - want[f_up],
                                                     want[f_up])
        rr = np.lexsort((np.arange(len(inc_file)), inc_k))  # pass k, then priority
        inc_file = inc_file[rr]
        fits = np.cumsum(length[inc_file]) <= budget - used
        granted = np.bincount(inc_file[fits], minlength=n_files)
        lower = (peak + self.cushion < cur) & (cur > base)
        # per block
        heat = _storage_heat(ri)
        order, rank = placement.node_order(heat, ri.node_names)
        block_add = np.minimum(granted[fidx], np.maximum(ceiling - rc, 0))
        grow_rows = np.flatnonzero(block_add > 0)
        indptr, nodes = placement.coolest_non_holders(ri.replica_indptr, ri.replica_nodes,
                                                      grow_rows, block_add[grow_rows], order,
                                                      rank)
        drop_rows = np.flatnonzero(lower[fidx] & (rc > st.base_replication) & (rc > 0))
        drop_nodes = placement.hottest_holder(ri.replica_indptr, ri.replica_nodes, drop_rows,
                                              rank, order)
        rule = np.zeros(n_blocks, np.int8)
        rule[(want[fidx] > granted[fidx])] = RULE_BUDGET
        rule[grow_rows] = RULE_READERS
        rule[drop_rows] = RULE_READERS_LOWER
        decision = Decision(policy=self.name, replicate_block=grow_rows,
                            replicate_indptr=indptr, replicate_nodes=nodes,
                            dereplicate_block=drop_rows, dereplicate_node=drop_nodes,
                            rf=peak[fidx].astype(np.float64), rule=rule, gavg=0.0, dn_avg=heat,
                            params={"budget_fraction": self.budget_fraction,
                                    "cushion": self.cushion,
                                    "max_replication": self.max_replication})
        return decision, _next_state(ri, st)


@dataclass
class DarePolicy:
    """Probabilistic replication on non-local reads, with ageing of unused extra replicas.

    ``p``: probability that one non-local read keeps its copy; a block read non-locally k times
    in the window gains one replica with probability 1 - (1 - p)^k. ``max_idle_rounds``: an
    extra replica (RC > base) of a block unread for this many rounds is removed, one per round.
    ``seed``: the RNG is ``default_rng([seed, state.round])``, so a round is reproducible.
    ``rf`` of the decision carries each block's non-local reads of the window.
    """

    p: float = 0.3
    max_idle_rounds: int = 5
    max_replication: int = 10
    seed: int = 0
    name: str = "dare"

    def __post_init__(self):
        if not 0 <= self.p <= 1:
            raise InputError(f"p must be in [0, 1], got {self.p!r}")
        if self.max_idle_rounds < 1 or self.max_replication < 1:
            raise InputError("max_idle_rounds and max_replication must be >= 1")

    def decide(self, round_input: RoundInput,
               state: BlockState | None) -> tuple[Decision, BlockState]:
        ri = round_input
        st = _prepare(ri, state)
        new_state = _next_state(ri, st)
        rc = ri.replica_count()
        ceiling = min(self.max_replication, ri.n_nodes)
        cand = np.flatnonzero((ri.nonlocal_tasks > 0) & (rc < ceiling))
        rng = np.random.default_rng([self.seed, st.round])
        keep_p = 1.0 - (1.0 - self.p) ** ri.nonlocal_tasks[cand].astype(np.float64)
        grow_rows = cand[rng.random(len(cand)) < keep_p]
        heat = _storage_heat(ri)
        order, rank = placement.node_order(heat, ri.node_names)
        indptr, nodes = placement.coolest_non_holders(
            ri.replica_indptr, ri.replica_nodes, grow_rows,
            np.ones(len(grow_rows), np.int64), order, rank)
        aged = (new_state.idle_rounds >= self.max_idle_rounds) & (rc > st.base_replication)
        drop_rows = np.flatnonzero(aged)
        drop_nodes = placement.hottest_holder(ri.replica_indptr, ri.replica_nodes, drop_rows,
                                              rank, order)
        rule = np.zeros(len(ri), np.int8)
        rule[grow_rows] = RULE_NONLOCAL
        rule[drop_rows] = RULE_AGED
        decision = Decision(policy=self.name, replicate_block=grow_rows,
                            replicate_indptr=indptr, replicate_nodes=nodes,
                            dereplicate_block=drop_rows, dereplicate_node=drop_nodes,
                            rf=ri.nonlocal_tasks.astype(np.float64), rule=rule, gavg=0.0,
                            dn_avg=heat,
                            params={"p": self.p, "max_idle_rounds": self.max_idle_rounds,
                                    "max_replication": self.max_replication,
                                    "seed": self.seed})
        return decision, new_state
