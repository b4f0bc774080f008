"""The live demand for blocks: how many pending maps want each block now, and whether its
holders can serve them within the locality delay D (issue 68).

A pending map can run node-locally only on one of its split's holders. Within D its holders
can offer it the containers free on them now, and those their running containers free
meanwhile (each of ``running`` finishes within D with probability ``min(1, D / task_s)``, the
maps' mean length). Holders are shared: a host's free containers go to every pending map that
could use it, so each pending map puts ``1 / len(its holders)`` of load on each of its
holders, and each host's containers are shared among the maps in proportion to that load. A
block is short when its maps' shares add up to fewer containers than it has pending maps. A short
block's maps are predicted to wait for D and then run off their data (delay scheduling's
relaxation), which is what a copy on a node with free containers would have saved.

Pure: columns in (one row per pending map), columns out (one row per block).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PendingMaps:
    """One row per pending map: its block (an index into ``blocks``) and its split's holders
    (a CSR over ``hosts``: the holders of row i are ``holder[holder_ptr[i]:holder_ptr[i+1]]``)."""

    block: np.ndarray  # int64, into blocks
    holder_ptr: np.ndarray  # int64, len(block) + 1
    holder: np.ndarray  # int64, into hosts
    blocks: list[tuple[str, int]]  # (path, start of the block's split)
    hosts: list[str]


@dataclass(frozen=True)
class BlockDemand:
    """One row per block with pending maps."""

    blocks: list[tuple[str, int]]
    pending: np.ndarray  # int64: its pending maps
    can_serve: np.ndarray  # float64: the containers its holders can offer it within D
    short: np.ndarray  # bool: pending > can_serve
    excess: np.ndarray  # float64: its maps predicted to run off their data

    def rows(self) -> list[dict]:
        return [{"path": p, "start": s, "pending": int(n), "can_serve": round(float(c), 2),
                 "short": bool(x), "excess": round(float(e), 2)}
                for (p, s), n, c, x, e in zip(self.blocks, self.pending, self.can_serve, self.short, self.excess)]


def host_capacity(free: np.ndarray, running: np.ndarray, delay_s: float, task_s: float | None) -> np.ndarray:
    """Containers each host can offer within ``delay_s``: free now, plus its running ones
    expected to end by then (none counted when the maps' length is not known yet)."""
    ending = 0.0 if not task_s or task_s <= 0 else min(1.0, delay_s / task_s)
    return np.maximum(free, 0).astype(np.float64) + ending * np.maximum(running, 0)


def block_demand(maps: PendingMaps, capacity: np.ndarray) -> BlockDemand:
    """Each block's pending maps against what its holders can offer them in time.

    ``capacity``: per host (as ``maps.hosts``), :func:`host_capacity`."""
    n_blocks, n_hosts = len(maps.blocks), len(maps.hosts)
    holders_per_map = np.diff(maps.holder_ptr)
    row_of_holder = np.repeat(np.arange(len(maps.block)), holders_per_map)
    share = 1.0 / np.maximum(holders_per_map, 1)[row_of_holder]
    load = np.bincount(maps.holder, weights=share, minlength=n_hosts)
    pending = np.bincount(maps.block, minlength=n_blocks)
    # each host's containers go to the maps that load it in proportion to their share of its load
    block_of_holder = maps.block[row_of_holder]
    given = capacity[maps.holder] * share / np.maximum(load[maps.holder], 1e-12)
    can_serve = np.bincount(block_of_holder, weights=given, minlength=n_blocks)
    short = pending > can_serve + 1e-9
    excess = np.maximum(pending - can_serve, 0.0)
    return BlockDemand(list(maps.blocks), pending.astype(np.int64), can_serve, short, excess)
