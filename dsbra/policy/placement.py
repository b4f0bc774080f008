"""Vectorised replica placement and removal over CSR replica lists.

Both work from one total order of the live nodes by (heat, name): placement walks it from the
coolest node and skips the block's holders; removal picks, among a block's holders, the one
latest in that order (hottest; on equal heat the larger name).
"""

from __future__ import annotations

import numpy as np

# Upper bound on the temporary (blocks x candidate nodes) boolean matrix built per batch.
_BATCH_CELLS = 1 << 24
# Replicas counted per np.bincount call (it copies its input to int64 first).
_COUNT_CHUNK = 1 << 20


def replicas_per_node(nodes: np.ndarray, n_nodes: int) -> np.ndarray:
    """How many of ``nodes`` (node ids of replicas) each node holds (int64)."""
    held = np.zeros(n_nodes, np.int64)
    for lo in range(0, len(nodes), _COUNT_CHUNK):
        held += np.bincount(nodes[lo:lo + _COUNT_CHUNK], minlength=n_nodes)
    return held


def node_order(heat: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, rank): node ids sorted by (heat ascending, name ascending), and each node's
    position in that order. ``rank`` is a permutation, so the max rank names one node."""
    name_rank = np.empty(len(names), np.int64)
    name_rank[np.argsort(names, kind="stable")] = np.arange(len(names))
    order = np.lexsort((name_rank, heat)).astype(np.int32)
    rank = np.empty(len(names), np.int64)
    rank[order] = np.arange(len(names))
    return order, rank


def csr_positions(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions, lengths): the entry positions of CSR ``rows``, concatenated in that order,
    and each row's length."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    out_starts = np.cumsum(lengths) - lengths
    return np.arange(lengths.sum()) + np.repeat(starts - out_starts, lengths), lengths


def hottest_holder(indptr: np.ndarray, nodes: np.ndarray, blocks: np.ndarray,
                   rank: np.ndarray, order: np.ndarray) -> np.ndarray:
    """For each block row in ``blocks`` (each with >= 1 replica): its holder latest in
    ``order``. Returns node ids (int32)."""
    if len(blocks) == 0:
        return np.zeros(0, np.int32)
    rank = rank.astype(np.int32)
    if len(blocks) * 8 > len(indptr):  # many blocks: one pass over every replica is cheaper
        # a trailing -1 keeps every start a valid index; empty rows are never asked for
        entry_rank = np.concatenate((rank[nodes], np.full(1, -1, np.int32)))
        best = np.maximum.reduceat(entry_rank, indptr[:-1])[blocks]
    else:
        pos, lengths = csr_positions(indptr, blocks)
        best = np.maximum.reduceat(rank[nodes[pos]], np.cumsum(lengths) - lengths)
    return order[best].astype(np.int32)


def coolest_non_holders(indptr: np.ndarray, nodes: np.ndarray, blocks: np.ndarray,
                        counts: np.ndarray, order: np.ndarray, rank: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """For each block row in ``blocks``, the first ``counts[k]`` nodes of ``order`` that do not
    hold it. ``counts[k]`` must not exceed the block's non-holders.

    Returns CSR (indptr, node ids) aligned with ``blocks``, nodes in placement order. A block
    with RC holders needs at most the first RC + count nodes of the order, so each batch only
    builds a (batch x width) matrix, width = max(RC + count) over the batch.
    """
    counts = np.asarray(counts, np.int64)
    out_indptr = np.zeros(len(blocks) + 1, np.int64)
    np.cumsum(counts, out=out_indptr[1:])
    out_nodes = np.empty(out_indptr[-1], np.int32)
    if len(blocks) == 0:
        return out_indptr, out_nodes
    rc = (indptr[blocks + 1] - indptr[blocks]).astype(np.int64)
    need = np.minimum(rc + counts, len(order))
    width = int(need.max())
    batch = max(1, _BATCH_CELLS // max(width, 1))
    for lo in range(0, len(blocks), batch):
        hi = min(lo + batch, len(blocks))
        b, c = blocks[lo:hi], counts[lo:hi]
        holder = np.zeros((hi - lo, width), bool)
        pos, lengths = csr_positions(indptr, b)
        seg = np.repeat(np.arange(hi - lo), lengths)
        r = rank[nodes[pos]]
        inside = r < width
        holder[seg[inside], r[inside]] = True
        free = ~holder
        take = free & (np.cumsum(free, axis=1) <= c[:, None])
        _, cols = np.nonzero(take)  # row-major: per block, in placement order
        out_nodes[out_indptr[lo]:out_indptr[hi]] = order[cols]
    return out_indptr, out_nodes


def jobs_reading(job_indptr: np.ndarray, job_blocks: np.ndarray, blocks: np.ndarray,
                 n_blocks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(which, job, row): ``which`` maps a block row to its index in ``blocks`` (-1 outside);
    one (job, index into ``blocks``) pair per read of one of ``blocks`` by a job of the CSR."""
    which = np.full(n_blocks, -1, np.int64)
    which[blocks] = np.arange(len(blocks))
    job_of = np.repeat(np.arange(len(job_indptr) - 1), np.diff(job_indptr))
    hit = which[job_blocks] >= 0
    return which, job_of[hit], which[job_blocks[hit]]


def co_read_node_score(job_indptr: np.ndarray, job_blocks: np.ndarray, indptr: np.ndarray,
                       nodes: np.ndarray, blocks: np.ndarray, n_blocks: int,
                       n_nodes: int) -> np.ndarray:
    """(len(blocks) x n_nodes): for each block row in ``blocks``, summed over the window's
    jobs that read it, how many replicas of those jobs' blocks each node holds: where a
    container granted for one of the job's asks could run another of its maps locally."""
    score = np.zeros((len(blocks), n_nodes))
    _, reading_job, reading_row = jobs_reading(job_indptr, job_blocks, blocks, n_blocks)
    if not len(reading_job):
        return score
    jobs = np.unique(reading_job)
    # the blocks each of those jobs read, then their replicas: per job, replicas per node
    read_at, n_read = csr_positions(job_indptr, jobs)
    pos, lengths = csr_positions(indptr, job_blocks[read_at])
    per_job = np.zeros((len(jobs), n_nodes))
    job_of_replica = np.repeat(np.repeat(np.arange(len(jobs)), n_read), lengths)
    np.add.at(per_job, (job_of_replica, nodes[pos].astype(np.int64)), 1)
    np.add.at(score, reading_row, per_job[np.searchsorted(jobs, reading_job)])
    return score


def preferred_non_holders(indptr: np.ndarray, nodes: np.ndarray, blocks: np.ndarray,
                          counts: np.ndarray, prefer: np.ndarray, rank: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`coolest_non_holders`, but each block row ``blocks[k]`` takes the non-holders
    with the highest ``prefer[k]`` first (ties in ``rank`` order). ``prefer`` is dense
    (len(blocks) x nodes), so this is for the few rows of a round's raises."""
    counts = np.asarray(counts, np.int64)
    out_indptr = np.zeros(len(blocks) + 1, np.int64)
    np.cumsum(counts, out=out_indptr[1:])
    if len(blocks) == 0:
        return out_indptr, np.zeros(0, np.int32)
    n_rows, n_nodes = prefer.shape
    holder = np.zeros((n_rows, n_nodes), bool)
    pos, lengths = csr_positions(indptr, blocks)
    holder[np.repeat(np.arange(n_rows), lengths), nodes[pos]] = True
    row = np.repeat(np.arange(n_rows), n_nodes)
    order = np.lexsort((np.tile(rank, n_rows), -prefer.ravel(), holder.ravel(), row))
    ranked = (order % n_nodes).reshape(n_rows, n_nodes)
    take = np.arange(n_nodes)[None, :] < counts[:, None]
    return out_indptr, ranked[take].astype(np.int32)


def co_read_targets(job_indptr: np.ndarray, job_blocks: np.ndarray, anchors: np.ndarray,
                    anchor_target: np.ndarray, share: float, n_blocks: int) -> np.ndarray:
    """Per block row, the replicas it should have beside the ``anchors`` (hot blocks; their
    targets ``anchor_target``): the largest target of an anchor with which at least ``share``
    of that anchor's jobs in the window read it; 0 where none (and for the anchors)."""
    wanted = np.zeros(n_blocks, np.int64)
    which, a_job, a_row = jobs_reading(job_indptr, job_blocks, anchors, n_blocks)
    if not len(a_job):
        return wanted
    readers = np.bincount(a_row, minlength=len(anchors))
    # every (anchor, block) pair the same job read: the job's anchors x the job's blocks
    read_at, n_of = csr_positions(job_indptr, a_job)
    pair_anchor, pair_block = np.repeat(a_row, n_of), job_blocks[read_at]
    keys, together = np.unique(pair_anchor * n_blocks + pair_block, return_counts=True)
    anchor, block = keys // n_blocks, keys % n_blocks
    ok = (together >= share * readers[anchor]) & (which[block] < 0)
    np.maximum.at(wanted, block[ok], anchor_target[anchor[ok]])
    return wanted
