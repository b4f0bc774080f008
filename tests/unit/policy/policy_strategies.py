"""Hypothesis strategies: random but valid rounds."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from dsbra.policy.api import BlockState, FileTable, RoundInput


@st.composite
def rounds(draw, max_blocks=40, max_nodes=8, capped_waits=False, delay=10.0):
    """(RoundInput with a file table, aligned BlockState). Files hold 1-3 blocks."""
    n_nodes = draw(st.integers(1, max_nodes))
    n_blocks = draw(st.integers(0, max_blocks))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    names = np.array([f"dn{j:02d}" for j in rng.permutation(n_nodes)], dtype=object)
    rc = rng.integers(0, n_nodes + 1, n_blocks)
    replicas = [np.sort(rng.choice(n_nodes, size=r, replace=False)) for r in rc]
    indptr = np.concatenate(([0], np.cumsum(rc))).astype(np.int64)
    nodes = np.concatenate(replicas).astype(np.int32) if n_blocks else np.zeros(0, np.int32)
    tasks = rng.integers(0, 12, n_blocks) * rng.integers(0, 2, n_blocks)
    delayed = (rng.random(n_blocks) * (tasks + 1)).astype(int).clip(0, tasks)
    nonlocal_ = (rng.random(n_blocks) * (tasks + 1)).astype(int).clip(0, tasks)
    if capped_waits:  # every delayed task waits at most D
        delay_s = rng.random(n_blocks) * delayed * delay
    else:
        delay_s = rng.random(n_blocks) * tasks * delay * 3
    base = rng.integers(1, 4, n_blocks)
    # files of 1-3 consecutive blocks
    sizes = []
    while sum(sizes) < n_blocks:
        sizes.append(int(rng.integers(1, 4)))
    if sizes:
        sizes[-1] -= sum(sizes) - n_blocks
    file_index = np.repeat(np.arange(len(sizes)), sizes)
    n_files = len(sizes)
    f_base = np.ones(n_files, np.int64)
    if n_blocks:
        np.maximum.at(f_base, file_index, base)
        base = f_base[file_index]
    f_cur = np.ones(n_files, np.int64)
    if n_blocks:
        np.maximum.at(f_cur, file_index, np.maximum(rc, 1))
    files = FileTable(paths=np.array([f"/data/{'hot' if i % 5 == 0 else 'x'}/f{i}"
                                      for i in range(n_files)], dtype=object),
                      base_replication=f_base, current_replication=f_cur,
                      length_bytes=rng.integers(1, 1000, n_files) * 1000,
                      block_count=np.array(sizes, np.int64))
    ri = RoundInput(block_ids=np.arange(n_blocks, dtype=np.int64) * 7 + 3, file_index=file_index,
                    tasks=tasks, delayed_tasks=delayed, delay_s=delay_s,
                    nonlocal_tasks=nonlocal_, peak_readers=rng.integers(0, 6, n_blocks),
                    replica_indptr=indptr, replica_nodes=nodes, base_replication=base,
                    node_names=names, files=files)
    y_max = 1.0 / 3.0 if capped_waits else 2.0
    state = BlockState(block_ids=ri.block_ids, y=rng.random(n_blocks) * y_max,
                       n=rng.integers(0, 20, n_blocks), base_replication=base,
                       file_index=file_index, idle_rounds=rng.integers(0, 8, n_blocks),
                       round=int(rng.integers(0, 100)))
    return ri, state
