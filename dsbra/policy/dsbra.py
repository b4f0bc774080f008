"""One DSBRA round (Suresh & Gopalan 2015, section IV.C, Algorithm-1), columnar and pure.

The steps follow docs/algorithm.md and design/dsbra-algorithm.md, numbered as there:

1. X_i  = (M_i / N_i + DT_i / (D N_i)) / 2, with N_i = 1 where no task read the block
2. RF_i = (alpha X_i + (1 - alpha) Y_i) / k, Y_i from before the round
3. Y_i := (Y_i n_i + RF_i) / (n_i + 1); n_i := n_i + 1
4. GAvg = mean RF_i over the scope (all blocks, or the active ones)
5. DNAvg_j = mean RF_i over the blocks node j holds (0 for a node holding none)
6. GAvg <= gate: only blocks with RF_i <= cold_low and RC_i > DRC_i lose one replica
7. else: RF_i <= cold_high and RC_i > DRC_i lose one; RF_i > GAvg + hot_margin gain
   r = max(1, floor((RF_i - GAvg) / step)), capped at min(max_replication, live nodes) - RC_i,
   on the coolest non-holders
Removal takes the holder with the largest DNAvg (equal heat: the larger node name).
"""

from __future__ import annotations

import logging

import numpy as np

from dsbra.policy import placement
from dsbra.policy.api import (RULE_BUDGET, RULE_CO_READ, RULE_COLD, RULE_COOL, RULE_HOT,
                              RULE_HOT_AT_CAP, RULE_HOT_PENDING, BlockState,
                              Decision, RoundInput)
from dsbra.policy.profiles import DEFAULT_PROFILE, DsbraParams, params_for

# floor((RF - GAvg) / step) is taken after adding this much, so that a difference that is a
# whole number of steps in decimal (0.4 / 0.2) is not lost to binary rounding (1.9999999...).
_FLOOR_EPS = 1e-9

log = logging.getLogger(__name__)


class DsbraPolicy:
    """DSBRA with explicit parameters; build it with :meth:`from_profile`."""

    def __init__(self, params: DsbraParams, name: str = "dsbra"):
        self.params = params.validated()
        self.name = name

    @classmethod
    def from_profile(cls, profile: str = DEFAULT_PROFILE, **overrides) -> DsbraPolicy:
        name = "dsbra" if profile == DEFAULT_PROFILE else f"dsbra-{profile}"
        if profile == "paper-literal":
            name = "dsbra-literal"
        return cls(params_for(profile, **overrides), name=name)

    def decide(self, round_input: RoundInput,
               state: BlockState | None) -> tuple[Decision, BlockState]:
        ri = round_input
        ri.validate()
        st = BlockState.fresh(ri) if state is None else state.aligned_to(ri)
        out = run_round(ri, st, self.params)
        decision = Decision(policy=self.name, params=self.params.as_dict(), **out["decision"])
        log.info("policy=%s round=%d blocks=%d gavg=%.4f gate_open=%s replicate_blocks=%d "
                 "replicas_added=%d dereplicate_blocks=%d", self.name, st.round + 1, len(ri),
                 decision.gavg, decision.gavg > self.params.gate, len(decision.replicate_block),
                 len(decision.replicate_nodes), len(decision.dereplicate_block))
        return decision, out["state"]


def fixed_actions(st: BlockState, p: DsbraParams, rf: np.ndarray, gavg: float,
                  rc: np.ndarray, ceiling: int):
    """Steps 6-7 with the paper's absolute thresholds: (rule, rows losing one replica, hot rows
    growing, replicas each gains)."""
    rule = np.zeros(len(rf), np.int8)
    extra = rc > st.base_replication
    # 6./7. dereplication: one replica per block per round
    if gavg <= p.gate:
        cold = extra & (rf <= p.cold_low)
        rule[cold] = RULE_COLD
        hot = np.zeros(0, np.int64)
    else:
        hot_mask = rf > gavg + p.hot_margin
        cold = extra & (rf <= p.cold_high) & ~hot_mask  # overlap only with odd thresholds
        rule[cold] = RULE_COOL
        hot = np.flatnonzero(hot_mask)
    # 7. replication: r replicas at once, on the coolest non-holders, within the cap
    r = np.maximum(1, np.floor((rf[hot] - gavg) / p.step + _FLOOR_EPS)).astype(np.int64)
    room = np.maximum(_at(ceiling, hot) - rc[hot].astype(np.int64), 0)
    r = np.minimum(r, room)
    rule[hot] = np.where(r > 0, RULE_HOT, RULE_HOT_AT_CAP)
    grow = r > 0
    return rule, np.flatnonzero(cold), hot[grow], r[grow]


def _at(ceiling, rows: np.ndarray):
    """The ceiling of the given rows: a scalar as it is, a per-block array indexed."""
    return ceiling[rows] if isinstance(ceiling, np.ndarray) else ceiling


def replica_ceiling(ri: RoundInput, st: BlockState, p: DsbraParams):
    """The most replicas a block may reach: min(max_replication, live nodes), a scalar; per
    block, with ``replica_cap_fraction`` f, at most max(ceil(f x live nodes), racks, base + 1)
    (short of every worker, at least one per rack), and with ``replicas_per_read`` q, at most
    max(ceil(q x its maps in the window), base + 1): each bound leaves room for one above base."""
    top = min(p.max_replication, ri.n_nodes)
    if p.replica_cap_fraction is None and p.replicas_per_read is None:
        return top
    # replica counts, as narrow as the node ids (int16 up to 32,767 DataNodes): the array
    # lives through the round beside its outputs
    dtype = np.int16 if top <= np.iinfo(np.int16).max else np.int64
    base_plus_one = st.base_replication.astype(dtype)
    base_plus_one += 1
    out = np.full(len(ri), top, dtype)
    if p.replica_cap_fraction is not None:
        cap = max(int(np.ceil(p.replica_cap_fraction * ri.n_nodes - _FLOOR_EPS)), ri.n_racks)
        np.minimum(out, np.maximum(base_plus_one, min(cap, top)), out=out)
    if p.replicas_per_read is not None:
        demand = np.multiply(ri.tasks, p.replicas_per_read, dtype=np.float64)
        demand -= _FLOOR_EPS
        np.ceil(demand, out=demand)
        np.minimum(demand, top, out=demand)
        np.minimum(out, np.maximum(base_plus_one, demand.astype(dtype)), out=out)
        del demand
    np.minimum(out, top, out=out)
    return out


def hot_confirmed(st: BlockState, p: DsbraParams, hot_now: np.ndarray, rc: np.ndarray,
                  pressure: np.ndarray, threshold: float) -> np.ndarray:
    """Of the blocks hot this round, those hysteresis lets grow: hot in at least hot_rounds of
    the last hot_window rounds (this one included), already above base replication, or (with
    ``confirm_bypass``) this round's pressure at least confirm_bypass x the hot threshold."""
    if p.hot_rounds <= 1:
        return hot_now
    earlier = st.hot_history & np.uint8((1 << (p.hot_window - 1)) - 1)
    # popcount of the few bits kept: hot_window <= 8, so at most 7 shifts of a uint8 array
    count = np.zeros(len(earlier), np.uint8)
    for bit in range(p.hot_window - 1):
        count += (earlier >> np.uint8(bit)) & np.uint8(1)
    ok = count + 1 >= p.hot_rounds
    ok |= rc > st.base_replication
    if p.confirm_bypass is not None:
        ok |= pressure >= p.confirm_bypass * threshold
    return hot_now & ok


def popular_floor(reads: float, n_read: int, most_read: float, read_factor: float) -> float:
    """The reads a hot block needs in its window under ``read_factor`` f: f times the average
    read block's (``reads`` over ``n_read`` blocks), or the most read block's when that is less
    (a window that reads one hot file's blocks alike has no tail to pick)."""
    return min(read_factor * reads / n_read, most_read)


def adaptive_actions(ri: RoundInput, st: BlockState, p: DsbraParams, rf: np.ndarray,
                     rc: np.ndarray, ceiling):
    """Steps 6-7 with thresholds taken from this window instead of fixed 0.2s.

    The paper advises tuning its thresholds to the cluster load, the delay threshold and data
    popularity; this does it every round from the signals themselves:
    - pressure_i = N_i RF_i: the delayed-map equivalents the block accounts for (RF is a per-map
      average, so a once-read block whose one map waited scores as high as a block whose fifty
      maps all waited; N restores the volume);
    - hot: pressure_i > hot_factor x the mean pressure of the blocks read in the window, and
      > min_pressure (so a window without delay replicates nothing), and N_i >= min_reads (a
      block read once is no evidence of popularity), and (with read_factor) N_i at least
      read_factor x the mean N of the blocks read in the window, or the window's largest N
      (popular, not only unlucky);
    - replicas sized by the demand on the holders: with m = the window's maps per live node,
      a block read N_i times needs ceil(N_i / (holder_share m)) holders for its maps to take at
      most holder_share of their slots; a hot block grows to that (at least one more);
    - an extra replica goes, one per round, when the block is not hot and its demand no longer
      needs it (an unread block needs none);
    - a storage budget: extra bytes at most budget_fraction of the base bytes (the round's
      blocks', or ``ri.storage_base_bytes`` when the round sees only part of the data), one
      replica per hot block per pass, hottest first (as Scarlett grants);
    - hysteresis (off by default): a block grows only once hot in hot_rounds of the last
      hot_window rounds (:func:`hot_confirmed`; a pending one is RULE_HOT_PENDING and keeps
      its replicas), and an extra replica goes only after min_hold_rounds rounds without heat.
    Returns (rule, rows losing one replica, rows growing, replicas each gains, hot-now mask).
    """
    n_blocks = len(rf)
    tasks = ri.tasks
    pressure = tasks * rf
    n_read = int(np.count_nonzero(tasks))
    reads = float(tasks.sum())
    mean_pressure = float(pressure.sum() / n_read) if n_read else 0.0
    threshold = max(p.min_pressure, p.hot_factor * mean_pressure)
    hot_mask = pressure > threshold
    if p.min_reads > 1:
        hot_mask &= tasks >= p.min_reads
    if p.read_factor is not None and n_read:
        hot_mask &= tasks >= popular_floor(reads, n_read, float(tasks.max()), p.read_factor)
    hot_now = hot_mask
    hot_mask = hot_confirmed(st, p, hot_now, rc, pressure, threshold)
    hot = np.flatnonzero(hot_mask)
    hot = hot[np.argsort(-pressure[hot], kind="stable")]  # hottest first, for the budget
    del pressure
    maps_per_node = reads / max(ri.n_nodes, 1)
    # holders needed: whole numbers kept in the float array (compared with RC exactly)
    need = np.divide(tasks, max(p.holder_share * maps_per_node, 1e-12))
    np.ceil(need, out=need)
    rule = np.zeros(n_blocks, np.int8)
    cold = rc > st.base_replication
    cold &= ~hot_now
    cold &= need < rc
    if p.min_hold_rounds > 1:
        # rounds without heat, this one included: not hot in the min_hold_rounds - 1 before it
        cold &= (st.hot_history & np.uint8((1 << (p.min_hold_rounds - 1)) - 1)) == 0
    rule[hot_now & ~hot_mask] = RULE_HOT_PENDING
    del hot_mask
    rule[cold] = RULE_COOL
    rc_hot = rc[hot].astype(np.int64)
    r = np.minimum(np.maximum(need[hot].astype(np.int64), rc_hot + 1), _at(ceiling, hot)) - rc_hot
    del need
    r = np.maximum(r, 0)
    rule[hot] = np.where(r > 0, RULE_HOT, RULE_HOT_AT_CAP)
    if p.budget_fraction is not None and len(hot):
        size = _block_bytes(ri)
        extra_now, base_bytes = _extra_and_base_bytes(rc, st.base_replication, cold, size)
        left = p.budget_fraction * ri.budget_base_bytes(base_bytes) - extra_now
        # round-robin as Scarlett grants: every hot block one more replica, hottest first,
        # before any gets a second; the budget takes a prefix of that order
        which = np.repeat(np.arange(len(hot)), r)
        nth = np.arange(len(which)) - np.repeat(np.cumsum(r) - r, r)
        order = np.lexsort((which, nth))
        fits = np.cumsum(size[hot][which[order]]) <= left
        wanted = r
        r = np.bincount(which[order][fits], minlength=len(hot)).astype(np.int64)
        rule[hot[(r == 0) & (wanted > 0)]] = RULE_BUDGET
    grow = r > 0
    return rule, np.flatnonzero(cold), hot[grow], r[grow], hot_now


def co_read_actions(ri: RoundInput, p: DsbraParams, rule: np.ndarray, rc: np.ndarray, ceiling,
                    cold_rows: np.ndarray, hot_rows: np.ndarray, r: np.ndarray):
    """``co_read_share``: the blocks read with a hot block by at least that share of its
    window's jobs grow to its target (within the ceiling) and are not lowered while they are
    at or under it. Returns (cold rows, growing rows, replicas each gains), ``rule`` updated."""
    anchors = np.flatnonzero((rule == RULE_HOT) | (rule == RULE_HOT_AT_CAP))
    target = rc.astype(np.int64)
    target[hot_rows] += r
    wanted = placement.co_read_targets(ri.job_indptr, ri.job_blocks, anchors, target[anchors],
                                       p.co_read_share, len(ri))
    wanted = np.minimum(wanted, ceiling)
    kept = wanted[cold_rows] >= rc[cold_rows]
    rule[cold_rows[kept]] = RULE_CO_READ
    # a hot block the budget or hysteresis held back is not raised by another's heat either
    grow = np.flatnonzero((wanted > rc) & (rule != RULE_BUDGET) & (rule != RULE_HOT_PENDING))
    rule[grow] = RULE_CO_READ
    return (cold_rows[~kept], np.concatenate((hot_rows, grow)),
            np.concatenate((r, wanted[grow] - rc[grow])))


_CHUNK = 1 << 18


def _extra_and_base_bytes(rc: np.ndarray, base: np.ndarray, cold: np.ndarray,
                          size: np.ndarray) -> tuple[float, float]:
    """The bytes held above base replication once this round's drops are made, and the base
    bytes: a chunk of blocks at a time, as the round's peak memory is the arrays it keeps.
    Products and sums in numpy, not np.dot: BLAS's threads spin-wait on the other core after
    a dot product, which doubled the CPU of the round's steps after it (0.1 s at 1 M blocks).
    Byte counts are integers, so the sums are exact in any order."""
    extra = base_bytes = 0.0
    product = np.empty(min(len(rc), _CHUNK), np.float64)
    for lo in range(0, len(rc), _CHUNK):
        hi = min(lo + _CHUNK, len(rc))
        out = product[:hi - lo]
        over = rc[lo:hi] - base[lo:hi]
        over -= cold[lo:hi]
        np.maximum(over, 0, out=over)
        extra += float(np.multiply(over, size[lo:hi], out=out).sum())
        base_bytes += float(np.multiply(base[lo:hi], size[lo:hi], out=out).sum())
    return extra, base_bytes


def _block_bytes(ri: RoundInput) -> np.ndarray:
    """Each block's size: its file's length over its blocks (1 per block without a file
    table, so the budget then counts replicas)."""
    if ri.files is None:
        return np.broadcast_to(np.float64(1.0), (len(ri),))  # ones, without an array of them
    f = ri.files
    per_file = f.length_bytes / np.maximum(f.block_count, 1)
    return per_file[ri.file_index].astype(np.float64, copy=False)


def run_round(ri: RoundInput, st: BlockState, p: DsbraParams) -> dict:
    """The round itself, on validated input and a state aligned to its rows."""
    n_blocks = len(ri)
    tasks = ri.tasks
    # Per-block arrays are few and reused in place (one float scratch array, RF in X's array,
    # step 3's outputs made last, scratch deleted when done): the round's peak memory is a
    # handful of arrays beside its input and state.
    n_eff = np.maximum(tasks, 1)  # the paper's "initial value of N_i is 1"
    # 1. current load, evaluated in the formula's own order (bit-identical to the reference)
    x = ri.delayed_tasks / n_eff
    tmp = np.multiply(n_eff, p.delay_threshold_s, dtype=np.float64)
    del n_eff
    np.divide(ri.delay_s, tmp, out=tmp)
    x += tmp
    x /= 2
    # 2. replication factor (history Y from before this round)
    rf = x
    del x
    rf *= p.alpha
    np.multiply(st.y, 1.0 - p.alpha, out=tmp)
    rf += tmp
    rf /= p.rf_divisor
    del tmp
    # 4. global average over the scope
    if p.gavg_scope == "all":
        gavg = float(rf.mean()) if n_blocks else 0.0
    else:
        active = (tasks > 0) | (st.y > 0)
        n_active = int(np.count_nonzero(active))
        gavg = float(np.sum(rf, where=active) / n_active) if n_active else 0.0
        del active
    # 5. node heat: mean RF of the blocks each live node holds
    rc = ri.replica_count()
    held = placement.replicas_per_node(ri.replica_nodes, ri.n_nodes)
    warm = np.flatnonzero(rf)  # blocks with RF = 0 add nothing to NSum: skip their replicas
    pos, warm_rc = placement.csr_positions(ri.replica_indptr, warm)
    nsum = np.bincount(ri.replica_nodes[pos], weights=np.repeat(rf[warm], warm_rc),
                       minlength=ri.n_nodes)
    del pos, warm
    dn_avg = np.divide(nsum, held, out=np.zeros(ri.n_nodes), where=held > 0)
    order, rank = placement.node_order(dn_avg, ri.node_names)

    ceiling = replica_ceiling(ri, st, p)
    hot_now = None
    if p.thresholds == "adaptive":
        rule, cold_rows, hot_rows, r, hot_now = adaptive_actions(ri, st, p, rf, rc, ceiling)
    else:
        rule, cold_rows, hot_rows, r = fixed_actions(st, p, rf, gavg, rc, ceiling)
    co_read = ri.job_indptr is not None
    if co_read and p.co_read_share is not None:
        cold_rows, hot_rows, r = co_read_actions(ri, p, rule, rc, ceiling, cold_rows, hot_rows, r)
    del ceiling
    drop_node = placement.hottest_holder(ri.replica_indptr, ri.replica_nodes, cold_rows,
                                         rank, order)
    if p.placement_order == "ascending":
        p_order, p_rank = order, rank
    else:
        p_order, p_rank = placement.node_order(-dn_avg, ri.node_names)
    if co_read and p.co_read_placement is not None and len(hot_rows):
        score = placement.co_read_node_score(ri.job_indptr, ri.job_blocks, ri.replica_indptr,
                                             ri.replica_nodes, hot_rows, len(ri), ri.n_nodes)
        indptr, nodes = placement.preferred_non_holders(
            ri.replica_indptr, ri.replica_nodes, hot_rows, r,
            score if p.co_read_placement == "near" else -score, p_rank)
    else:
        indptr, nodes = placement.coolest_non_holders(ri.replica_indptr, ri.replica_nodes,
                                                      hot_rows, r, p_order, p_rank)
    del rc
    # hysteresis history: this round's hot flag shifted in
    if hot_now is None:
        hot_now = np.isin(rule, (RULE_HOT, RULE_HOT_AT_CAP))
    hist = st.hot_history << np.uint8(1)
    hist |= hot_now.view(np.uint8)
    del hot_now
    idle = st.idle_rounds + 1
    idle[tasks > 0] = 0
    # 3. history update (Y_i n_i + RF_i) / (n_i + 1); n_i + 1 is exact in float64
    n_next = st.n + 1
    y_next = st.y * st.n
    y_next += rf
    y_next /= n_next
    new_state = BlockState(block_ids=ri.block_ids, y=y_next, n=n_next,
                           base_replication=st.base_replication, file_index=ri.file_index,
                           idle_rounds=idle, round=st.round + 1, hot_history=hist)
    return {
        "decision": dict(replicate_block=hot_rows, replicate_indptr=indptr,
                         replicate_nodes=nodes, dereplicate_block=cold_rows,
                         dereplicate_node=drop_node, rf=rf, rule=rule, gavg=gavg,
                         dn_avg=dn_avg),
        "state": new_state,
    }
