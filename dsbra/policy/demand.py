"""Act when demand arrives (issue 68): raise a block at a fast poll when the maps waiting for it
now exceed what its holders can serve within the locality delay D, and lower it back to base
once no map has waited for it for a while.

The signal is :class:`~dsbra.policy.api.LiveDemand`: per running job its maps still pending,
by their split's block (its AM's outstanding asks) and the containers it holds; per node its
free containers and the containers running maps. The rule, per poll:

- a node can hand out within D its free containers now plus the running ones expected to end
  within D: ``free + running x min(1, D / mean map time)`` (a map ends at a uniformly spread
  moment of its run, so a container frees within D with probability D / map time; before any
  map has finished, every running one counts as freeing);
- of a block's pending maps, those due within D: the running jobs' pending maps in the Fair
  Scheduler's order (fewest containers held first), as many as the cluster hands out within D
  (the tail of a saturated queue waits for any container, local or not: copies do not serve
  it sooner);
- the maps waiting on a node are its blocks' due maps, each block's spread evenly over its
  holders (``due / RC`` per holder), and a holder serves each block its share of what it can
  hand out, in proportion to that load;
- a block whose due maps exceed what its holders serve it by ``min_shortfall`` or more is
  raised by as many copies as cover the shortfall: the nodes that do not hold it, walked by
  their spare (what they hand out within D beyond the maps already waiting on them) largest
  first, each covering what it hands out within D (a node that hands out nothing in time is
  skipped). So the copies follow the concurrent demand, never a share of the cluster, and go
  where containers are free first;
- a block above its base with no pending map for ``idle_polls`` polls loses one extra replica
  a poll (never below base), the one on its busiest holder.

Pure and columnar like the rest of :mod:`dsbra.policy`: the simulator calls
:class:`DemandPolicy` through :func:`dsbra.policy.step.step`, as the daemon's fast poll (not
built yet) would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dsbra.policy.api import (RULE_DEMAND, RULE_DEMAND_GONE, BlockState, Decision, LiveDemand,
                              RoundInput)
from dsbra.policy.placement import csr_positions
from dsbra.validate import above, at_least

#: rows x nodes cells of the holder matrix built at once when placing copies
_PLACEMENT_CELLS = 1 << 22


def servable_within_delay(demand: LiveDemand, delay_s: float) -> np.ndarray:
    """Per node, the containers it can hand out within ``delay_s``: free now plus the running
    maps expected to end by then (float64)."""
    freeing = 1.0 if demand.mean_map_s is None else min(1.0, delay_s / demand.mean_map_s)
    return demand.free_containers + freeing * demand.running_maps


def due_within_delay(demand: LiveDemand, servable: np.ndarray, n_blocks: int) -> np.ndarray:
    """Per block, its pending maps that get a container within D wherever they run: the
    running jobs' pending maps in the Fair Scheduler's order (fewest containers held first,
    then submission), as many as the cluster hands out within D (``servable`` summed), the
    last job's counted in part. The rest of a saturated queue waits for any container, local
    or not: copies do not serve it sooner (float64)."""
    counts = np.diff(demand.job_indptr)
    order = np.lexsort((np.arange(len(counts)), demand.job_running))
    before = np.cumsum(counts[order]) - counts[order]
    room = float(servable.sum())
    part = np.zeros(len(counts))
    part[order] = np.clip((room - before) / np.maximum(counts[order], 1), 0.0, 1.0)
    return np.bincount(demand.job_blocks, weights=np.repeat(part, counts), minlength=n_blocks)


def waiting_per_node(pending: np.ndarray, indptr: np.ndarray, nodes: np.ndarray,
                     n_nodes: int) -> np.ndarray:
    """Per node, the pending maps that may run node-local there: each block's pending maps
    spread evenly over its holders (float64)."""
    rows = np.flatnonzero(pending)
    pos, held_by = csr_positions(indptr, rows)
    keep = held_by > 0
    share = np.repeat(pending[rows][keep] / held_by[keep], held_by[keep])
    return np.bincount(nodes[pos].astype(np.int64), weights=share, minlength=n_nodes)


def shortfall(pending: np.ndarray, indptr: np.ndarray, nodes: np.ndarray,
              servable: np.ndarray, waiting: np.ndarray) -> np.ndarray:
    """Per block, its pending maps its holders cannot serve within D: each holder gives the
    block its share (the block's pending maps per holder over all that wait there) of what
    it hands out within D (float64; 0 for a block without pending maps)."""
    out = np.zeros(len(pending))
    rows = np.flatnonzero(pending)
    pos, held_by = csr_positions(indptr, rows)
    per_holder = np.repeat(pending[rows] / np.maximum(held_by, 1), held_by)
    holder = nodes[pos].astype(np.int64)
    served = servable[holder] * np.minimum(1.0, per_holder / np.maximum(waiting[holder], 1e-12))
    owner = np.repeat(np.arange(len(rows)), held_by)
    out[rows] = pending[rows] - np.bincount(owner, weights=served, minlength=len(rows))
    return np.maximum(out, 0.0)


def judge(demand: LiveDemand, indptr: np.ndarray, nodes: np.ndarray, n_nodes: int,
          delay_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One poll's judgment, as the rule makes it: (per node, what it hands out within
    ``delay_s``; per node, the due maps waiting there; per block, its shortfall). A block is
    raised when its shortfall reaches ``min_shortfall`` (what `dsbra observe --demand` shows
    and benchmarks/validate_demand.py checks against what then happened)."""
    servable = servable_within_delay(demand, delay_s)
    due = due_within_delay(demand, servable, len(indptr) - 1)
    waiting = waiting_per_node(due, indptr, nodes, n_nodes)
    return servable, waiting, shortfall(due, indptr, nodes, servable, waiting)


def copies_for(rows: np.ndarray, need: np.ndarray, room: np.ndarray, indptr: np.ndarray,
               nodes: np.ndarray, servable: np.ndarray,
               spare: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, nodes): for each block row in ``rows``, the nodes that do not hold it by
    ``spare`` largest first (equal spare: the smaller node id), skipping those that hand out
    nothing within D, as many as it takes for what they hand out (``servable``) to reach
    ``need``, and at most ``room``. A CSR over ``rows``."""
    n_nodes = len(spare)
    order = np.lexsort((np.arange(n_nodes), -spare))
    gives = np.maximum(servable[order], 0.0)
    counts, chosen = [], []
    batch = max(1, _PLACEMENT_CELLS // max(n_nodes, 1))
    for lo in range(0, len(rows), batch):
        part = rows[lo:lo + batch]
        holds = np.zeros((len(part), n_nodes), bool)
        pos, held_by = csr_positions(indptr, part)
        holds[np.repeat(np.arange(len(part)), held_by), nodes[pos]] = True
        offer = np.where(holds[:, order], 0.0, gives)
        before = np.cumsum(offer, axis=1) - offer  # served by the copies walked before
        take = (offer > 0) & (before < need[lo:lo + batch, None])
        take &= np.cumsum(take, axis=1) <= room[lo:lo + batch, None]
        r, c = np.nonzero(take)  # row-major: each row's nodes in the walk's order
        counts.append(np.bincount(r, minlength=len(part)))
        chosen.append(order[c])
    n_per = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    out_nodes = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    return np.concatenate(([0], np.cumsum(n_per))).astype(np.int64), out_nodes


@dataclass
class DemandPolicy:
    """The live-demand rule of the module's docstring. ``delay_threshold_s``: D, the
    scheduler's node-locality delay. ``min_shortfall``: due maps beyond what the holders
    serve in time before a block is raised. ``idle_polls``: polls without a pending map before
    an extra replica goes. ``max_replication``: the ceiling (with the live nodes)."""

    delay_threshold_s: float
    max_replication: int = 10
    min_shortfall: float = 0.25
    idle_polls: int = 10
    name: str = "dsbra-demand"

    def __post_init__(self):
        above("delay_threshold_s", self.delay_threshold_s, 0)
        above("min_shortfall", self.min_shortfall, 0)
        at_least("idle_polls", self.idle_polls, 1, integer=True)
        at_least("max_replication", self.max_replication, 1, integer=True)

    def decide(self, round_input: RoundInput,
               state: BlockState | None) -> tuple[Decision, BlockState]:
        ri = round_input
        ri.validate()
        st = BlockState.fresh(ri) if state is None else state.aligned_to(ri)
        demand = ri.demand
        pending = (demand.pending_maps(len(ri)) if demand is not None
                   else np.zeros(len(ri), np.int64))
        idle = np.where(pending > 0, 0, st.idle_rounds + 1)
        new_state = BlockState(block_ids=ri.block_ids, y=st.y, n=st.n,
                               base_replication=st.base_replication, file_index=ri.file_index,
                               idle_rounds=idle, round=st.round + 1,
                               hot_history=st.hot_history)
        rc = ri.replica_count()
        indptr, nodes = ri.replica_indptr, ri.replica_nodes
        short = np.zeros(len(ri))
        waiting = np.zeros(ri.n_nodes)
        rise_rows = np.zeros(0, np.int64)
        rise_indptr, rise_nodes = np.zeros(1, np.int64), np.zeros(0, np.int64)
        if demand is not None:
            servable, waiting, short = judge(demand, indptr, nodes, ri.n_nodes, self.delay_threshold_s)
            ceiling = min(self.max_replication, ri.n_nodes)
            rows = np.flatnonzero((short >= self.min_shortfall) & (rc < ceiling))
            rise_indptr, rise_nodes = copies_for(rows, short[rows], ceiling - rc[rows], indptr,
                                                 nodes, servable, servable - waiting)
            got = np.diff(rise_indptr) > 0
            rise_rows = rows[got]
            rise_indptr = np.concatenate(([0], rise_indptr[1:][got]))
        drop_rows = np.flatnonzero((idle >= self.idle_polls) & (rc > st.base_replication))
        drop_nodes = busiest_holder(indptr, nodes, drop_rows, waiting)
        rule = np.zeros(len(ri), np.int8)
        rule[rise_rows] = RULE_DEMAND
        rule[drop_rows] = RULE_DEMAND_GONE
        decision = Decision(policy=self.name, replicate_block=rise_rows,
                            replicate_indptr=rise_indptr, replicate_nodes=rise_nodes,
                            dereplicate_block=drop_rows, dereplicate_node=drop_nodes, rf=short,
                            rule=rule, gavg=0.0, dn_avg=waiting,
                            params={"delay_threshold_s": self.delay_threshold_s,
                                    "max_replication": self.max_replication,
                                    "min_shortfall": self.min_shortfall,
                                    "idle_polls": self.idle_polls})
        return decision, new_state


def busiest_holder(indptr: np.ndarray, nodes: np.ndarray, rows: np.ndarray,
                   waiting: np.ndarray) -> np.ndarray:
    """For each block row in ``rows`` (each with a replica): its holder with the most maps
    waiting on it (equal: the larger node id), whose replica serves its block least."""
    if not len(rows):
        return np.zeros(0, np.int32)
    pos, held_by = csr_positions(indptr, rows)
    holder = nodes[pos].astype(np.int64)
    owner = np.repeat(np.arange(len(rows)), held_by)
    order = np.lexsort((holder, waiting[holder], owner))  # last of each row: the busiest
    last = np.cumsum(held_by) - 1
    return holder[order][last].astype(np.int32)
