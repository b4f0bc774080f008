"""Builders for small hand-written rounds."""

from __future__ import annotations

import numpy as np

from dsbra.policy.api import BlockState, RoundInput


def make_round(nodes, blocks, files=None):
    """``blocks``: dicts with id, nodes, base, tasks, delayed, delay and optional remote
    (non-local tasks), peak, file. Returns a RoundInput with string ids."""
    node_id = {name: j for j, name in enumerate(nodes)}
    lengths = [len(b["nodes"]) for b in blocks]
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return RoundInput(
        block_ids=np.array([b["id"] for b in blocks], dtype=object),
        file_index=[b.get("file", i) for i, b in enumerate(blocks)],
        tasks=[b.get("tasks", 0) for b in blocks],
        delayed_tasks=[b.get("delayed", 0) for b in blocks],
        delay_s=[b.get("delay", 0.0) for b in blocks],
        nonlocal_tasks=[b.get("remote", 0) for b in blocks],
        peak_readers=[b.get("peak", 0) for b in blocks],
        replica_indptr=indptr,
        replica_nodes=np.array([node_id[n] for b in blocks for n in b["nodes"]], np.int32),
        base_replication=[b.get("base", 2) for b in blocks],
        node_names=np.array(nodes, dtype=object),
        files=files,
    )


def state_for(ri, y=None, n=None):
    k = len(ri)
    return BlockState(block_ids=ri.block_ids, y=np.zeros(k) if y is None else y,
                      n=np.zeros(k, np.int32) if n is None else n,
                      base_replication=ri.base_replication, file_index=ri.file_index,
                      idle_rounds=np.zeros(k, np.int32))


def replicate_map(ri, d):
    """{block id: [node names in placement order]}"""
    return {ri.block_ids[b]: [ri.node_names[j] for j in
                              d.replicate_nodes[d.replicate_indptr[k]:d.replicate_indptr[k + 1]]]
            for k, b in enumerate(d.replicate_block)}


def dereplicate_map(ri, d):
    return {ri.block_ids[b]: ri.node_names[j]
            for b, j in zip(d.dereplicate_block, d.dereplicate_node)}
