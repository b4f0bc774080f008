"""The simulated cluster's topology and HDFS block replicas.

Replicas live in one (blocks x max replication) int32 matrix padded with -1 plus a count per
block, so placement, the policy's CSR view and storage accounting are vector operations.
"""

from __future__ import annotations

import numpy as np


class Topology:
    """M nodes on K racks; node i sits on rack i * K // M (contiguous, sizes differ by <= 1)."""

    def __init__(self, nodes: int, racks: int):
        self.nodes, self.racks = nodes, racks
        self.rack_of = (np.arange(nodes, dtype=np.int64) * racks // nodes).astype(np.int32)
        self.rack_size = np.bincount(self.rack_of, minlength=racks).astype(np.int64)
        self.rack_start = np.concatenate([[0], np.cumsum(self.rack_size)[:-1]]).astype(np.int64)
        width = len(str(max(nodes - 1, 0)))
        self.node_names = np.array([f"n{i:0{width}d}" for i in range(nodes)], dtype=object)
        self.rack_names = np.array([f"/rack{r}" for r in range(racks)], dtype=object)


def hdfs_default_placement(topo: Topology, n_blocks: int, replication: int,
                           rng: np.random.Generator) -> np.ndarray:
    """(n_blocks x replication) node ids placed like HDFS's BlockPlacementPolicyDefault for a
    writer outside the cluster: 1st replica on a random node, 2nd on a random node of another
    rack, 3rd on the 2nd's rack on a different node, the rest on random distinct nodes.
    With one rack (or racks too small), every replica goes to a random distinct node."""
    m, r = topo.nodes, replication
    out = np.full((n_blocks, r), -1, np.int64)
    out[:, 0] = rng.integers(m, size=n_blocks)
    col = 1
    if topo.racks > 1 and r >= 2:
        rack1 = topo.rack_of[out[:, 0]]
        rack2 = (rack1 + rng.integers(1, topo.racks, size=n_blocks)) % topo.racks
        size2 = topo.rack_size[rack2]
        off2 = np.floor(rng.random(n_blocks) * size2).astype(np.int64)
        out[:, 1] = topo.rack_start[rack2] + off2
        col = 2
        if r >= 3:
            ok = size2 >= 2
            off3 = (off2 + 1 + np.floor(rng.random(n_blocks) * np.maximum(size2 - 1, 1))
                    .astype(np.int64)) % np.maximum(size2, 1)
            out[ok, 2] = (topo.rack_start[rack2] + off3)[ok]
            col = 3
            # blocks whose 2nd rack has a single node fall back to a random distinct node
            _fill_distinct(out, 2, ~ok, m, rng)
    for c in range(col, r):
        _fill_distinct(out, c, np.ones(n_blocks, bool), m, rng)
    return out


def _fill_distinct(out: np.ndarray, c: int, rows: np.ndarray, m: int,
                   rng: np.random.Generator) -> None:
    """Fill column c of the selected rows with random nodes not already in columns < c."""
    todo = np.flatnonzero(rows)
    while len(todo):
        cand = rng.integers(m, size=len(todo))
        clash = (out[todo, :c] == cand[:, None]).any(axis=1)
        out[todo[~clash], c] = cand[~clash]
        todo = todo[clash]


class Replicas:
    """Live replicas per block, with a fixed base replication (never dereplicated below)."""

    def __init__(self, initial: np.ndarray, width: int):
        n, r = initial.shape
        self.width = max(width, r)
        self.nodes = np.full((n, self.width), -1, np.int32)
        self.nodes[:, :r] = initial
        self.count = np.full(n, r, np.int32)
        self.base = np.full(n, r, np.int16)
        self._base_width = r  # columns [0, r) always hold a replica (rows stay packed)
        self._version = 0  # bumped on every change; keys the CSR cache
        self._csr = (-1, None)

    def __len__(self) -> int:
        return len(self.count)

    def holders(self, block: int) -> np.ndarray:
        return self.nodes[block, :self.count[block]]

    def holds(self, block: int, node: int) -> bool:
        row = self.nodes[block]
        return bool((row[:self.count[block]] == node).any())

    def add(self, block: int, node: int) -> bool:
        """Add a replica; False (no change) when already there or the row is full."""
        c = int(self.count[block])
        if c >= self.width or (self.nodes[block, :c] == node).any():
            return False
        self.nodes[block, c] = node
        self.count[block] = c + 1
        self._version += 1
        return True

    def remove(self, block: int, node: int) -> bool:
        """Drop a replica; False (no change) when absent or the block is at base replication."""
        c = int(self.count[block])
        if c <= self.base[block]:
            return False
        row = self.nodes[block]
        hit = np.flatnonzero(row[:c] == node)
        if not len(hit):
            return False
        i = int(hit[0])
        row[i] = row[c - 1]
        row[c - 1] = -1
        self.count[block] = c - 1
        self._version += 1
        return True

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, node ids) of every block's replicas, in row order (cached until a change;
        treat as read-only). The first ``base`` columns are always filled, so only the few
        blocks above base replication need a masked copy: a round's rebuild stays cheap on
        millions of blocks."""
        if self._csr[0] == self._version:
            return self._csr[1]
        n, r = len(self.count), self._base_width
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(self.count, out=indptr[1:])
        flat = np.ascontiguousarray(self.nodes[:, :r]).ravel()
        above = np.flatnonzero(self.count > r)
        if len(above):  # one insert pass: each extra replica after its block's base ones
            more = self.count[above] - r
            cols = np.arange(self.width - r)[None, :] < more[:, None]
            flat = np.insert(flat, np.repeat((above + 1) * r, more), self.nodes[above, r:][cols])
        self._csr = (self._version, (indptr, flat))
        return self._csr[1]

    @property
    def version(self) -> int:
        """Bumped on every change: keys caches of per-block derived tables."""
        return self._version

    def extra_fraction(self) -> float:
        """Replicas above base replication, as a fraction of the base replicas' storage."""
        base = float(self.base.sum())
        return (float(self.count.sum()) - base) / base if base else 0.0


# The NameNode's own choices when a file's replication changes and no placement plugin honours
# the policy's (``--placement default``): BlockPlacementPolicyDefault, Hadoop 3.4.

# Upper bound on the (blocks x nodes) random-key matrix drawn per batch of new targets.
_TARGET_CELLS = 1 << 22


def default_drop_nodes(holders: np.ndarray, counts: np.ndarray, rack_of: np.ndarray,
                       stored: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The replica the default policy deletes from each over-replicated block: rows of
    ``holders`` (blocks x width, -1 padded, ``counts`` live per row). Among the holders on a
    rack with more than one of the block's replicas (all holders if no rack has two), the node
    with the least free space (chooseReplicaToDelete; no node is stale here): with equal
    capacities, the one storing the most bytes (``stored`` per node), ties at random."""
    live = np.arange(holders.shape[1]) < counts[:, None]
    node = np.where(live, holders, 0)
    rack = np.where(live, rack_of[node], -1)
    shared = ((rack[:, :, None] == rack[:, None, :]) & live[:, None, :]).sum(axis=2) > 1
    shared &= live
    pool = np.where(shared.any(axis=1)[:, None], shared, live)
    load = np.where(pool, stored[node], -np.inf)
    fullest = pool & (load == load.max(axis=1, keepdims=True))
    pick = np.argmax(np.where(fullest, rng.random(fullest.shape), -1.0), axis=1)
    return holders[np.arange(len(holders)), pick].astype(np.int32)


def default_add_targets(holders: np.ndarray, counts: np.ndarray, wanted: np.ndarray,
                        busy: tuple[np.ndarray, np.ndarray], rack_of: np.ndarray,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Where the default policy re-replicates: ``wanted[k]`` new targets for row k of
    ``holders`` (blocks x width, -1 padded, ``counts`` live per row), drawn at random among
    the nodes that neither hold the block nor receive a copy of it (``busy``: (row, node)
    pairs of copies in flight). When every holder sits on one rack and another rack has such
    a node, the first target is on another rack (chooseTargetInOrder's remote rack for one
    holder, or two on one rack). Not modelled: the writer's-rack target for two holders on
    two racks (a random node of their racks here) and maxNodesPerRack.

    Returns CSR (indptr, node ids) aligned with the rows. ``wanted[k]`` must not exceed the
    row's eligible nodes.
    """
    n_nodes = len(rack_of)
    wanted = np.asarray(wanted, np.int64)
    indptr = np.zeros(len(wanted) + 1, np.int64)
    np.cumsum(wanted, out=indptr[1:])
    targets = np.empty(indptr[-1], np.int32)
    if not indptr[-1]:
        return indptr, targets
    live = np.arange(holders.shape[1]) < counts[:, None]
    home = rack_of[holders[:, 0]]
    one_rack = (np.where(live, rack_of[np.where(live, holders, 0)], home[:, None])
                == home[:, None]).all(axis=1)
    busy_rows, busy_nodes = busy
    most = int(wanted.max())
    batch = max(1, _TARGET_CELLS // n_nodes)
    for lo in range(0, len(wanted), batch):
        hi = min(lo + batch, len(wanted))
        keys = rng.random((hi - lo, n_nodes))  # a random order of the nodes per block
        rows, cols = np.nonzero(live[lo:hi])
        keys[rows, holders[lo:hi][rows, cols]] = 2.0  # holders and busy nodes sort last
        mine = (busy_rows >= lo) & (busy_rows < hi)
        keys[busy_rows[mine] - lo, busy_nodes[mine]] = 2.0
        away = (keys < 2.0) & (rack_of[None, :] != home[lo:hi, None])
        spread = np.flatnonzero(one_rack[lo:hi] & away.any(axis=1))
        first = np.argmin(np.where(away[spread], keys[spread], 3.0), axis=1)
        keys[spread, first] = -1.0  # the remote-rack target comes first
        order = np.argsort(keys, axis=1)[:, :most]
        take = np.arange(most) < wanted[lo:hi, None]
        targets[indptr[lo]:indptr[hi]] = order[take]
    return indptr, targets
