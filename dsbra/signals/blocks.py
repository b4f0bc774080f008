"""Fold per-task attribution into per-block counters (columnar)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class BlockMetrics:
    """Per block row: N, M, DT, non-node-local readers, peak concurrent readers."""

    tasks: np.ndarray  # int64
    delayed_tasks: np.ndarray  # int64
    delay_s: np.ndarray  # float64
    nonlocal_tasks: np.ndarray  # int64
    peak_readers: np.ndarray  # int64


def peak_concurrency(block: np.ndarray, start_ms: np.ndarray, end_ms: np.ndarray,
                     n_blocks: int) -> np.ndarray:
    """Max number of [start, end) intervals open at once, per block (ends before starts)."""
    out = np.zeros(n_blocks, dtype=np.int64)
    if len(block) == 0:
        return out
    b = np.concatenate([block, block])
    t = np.concatenate([start_ms, end_ms])
    d = np.concatenate([np.ones(len(block), np.int64), -np.ones(len(block), np.int64)])
    order = np.lexsort((d, t, b))  # by block, then time, then -1 before +1
    b, d = b[order], d[order]
    running = np.cumsum(d)
    first = np.r_[0, np.flatnonzero(np.diff(b)) + 1]
    base = np.repeat(running[first] - d[first], np.diff(np.r_[first, len(b)]))
    np.maximum.at(out, b, running - base)
    return out


def block_metrics(block: np.ndarray, delay_s: np.ndarray, delayed: np.ndarray,
                  local: np.ndarray, launch_ms: np.ndarray, end_ms: np.ndarray,
                  n_blocks: int) -> BlockMetrics:
    """``block[j]`` is task j's block row (tasks with block < 0 are unmapped and ignored)."""
    keep = block >= 0
    b = block[keep]
    return BlockMetrics(
        tasks=np.bincount(b, minlength=n_blocks).astype(np.int64),
        delayed_tasks=np.bincount(b, weights=delayed[keep], minlength=n_blocks).astype(np.int64),
        delay_s=np.bincount(b, weights=delay_s[keep], minlength=n_blocks).astype(np.float64),
        nonlocal_tasks=np.bincount(b, weights=~local[keep], minlength=n_blocks).astype(np.int64),
        peak_readers=peak_concurrency(b, launch_ms[keep], np.maximum(end_ms[keep],
                                                                     launch_ms[keep] + 1),
                                      n_blocks),
    )
