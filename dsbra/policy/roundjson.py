"""A DSBRA round as JSON: the ``dsbra plan`` document (design/dsbra-algorithm.md) read into the
policy's columns and its plan written back. The policy's JSON interface, used by ``dsbra plan``
and by the daemon, which builds the same document from a window (``dsbra observe``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dsbra.errors import InputError
from dsbra.policy.api import RULE_NAMES, BlockState, FileTable, RoundInput
from dsbra.policy.dsbra import DsbraPolicy
from dsbra.policy.profiles import DEFAULT_PROFILE, PARAM_NAMES, params_for
from dsbra.policy.rails import Rails, plan_files

_BLOCK_REQUIRED = ("block_id", "nodes", "default_replicas", "tasks", "delayed_tasks", "delay_s")
_COUNT_MAX = {"default_replicas": 2**15 - 1, "bytes": 2**63 - 1}
_RAIL_NAMES = ("min_replication", "max_replication", "storage_budget_bytes", "max_files_per_round",
               "max_replicas_per_round", "max_bytes_per_round", "protected", "block_bytes")


def plan_document(doc, profile: str = DEFAULT_PROFILE, overrides: dict | None = None,
                  with_rails: bool = False) -> dict:
    """The plan for one parsed input document (pure; raises InputError on bad input)."""
    if not isinstance(doc, dict):
        raise InputError("input: the top level must be a JSON object")
    for key in ("live_nodes", "blocks"):
        if key not in doc:
            raise InputError(f"input: missing field '{key}'")
    raw_params = doc.get("params", {})
    if not isinstance(raw_params, dict):
        raise InputError("input: 'params' must be an object")
    unknown = sorted(set(raw_params) - set(PARAM_NAMES))
    if unknown:
        raise InputError(f"input: unknown parameter params.{unknown[0]}")
    params = params_for(profile, **{**raw_params, **(overrides or {})})
    ri, state, block_bytes = read_round(doc)
    decision, new_state = DsbraPolicy(params).decide(ri, state)
    ids, names = ri.block_ids, ri.node_names
    out = {
        "gavg": float(decision.gavg),
        "rf": {ids[i]: float(v) for i, v in enumerate(decision.rf)},
        "y_next": {ids[i]: float(v) for i, v in enumerate(new_state.y)},
        "dn_avg": {names[j]: float(v) for j, v in enumerate(decision.dn_avg)},
        "replicate": {
            ids[b]: [names[j] for j in decision.replicate_nodes[
                decision.replicate_indptr[k]:decision.replicate_indptr[k + 1]]]
            for k, b in enumerate(decision.replicate_block)},
        "dereplicate": {ids[b]: names[j] for b, j in
                        zip(decision.dereplicate_block, decision.dereplicate_node)},
    }
    if with_rails:
        rails = read_rails(doc.get("rails", {}), params.max_replication)
        files = FileTable.one_block_files(ids, state.base_replication, ri.replica_count(),
                                          block_bytes)
        ri_files = dataclasses.replace(ri, files=files)
        fp = plan_files(ri_files, decision, rails)
        out["file_plan"] = {"files": fp.to_records(names), "summary": fp.summary,
                            "extra_bytes_before": fp.extra_bytes_before,
                            "extra_bytes_after": fp.extra_bytes_after,
                            "rules": {ids[i]: RULE_NAMES[int(r)]
                                      for i, r in enumerate(decision.rule) if r}}
    return out


def read_round(doc: dict) -> tuple[RoundInput, BlockState, np.ndarray]:
    """A round document's blocks as the policy's columns: (round input, the state its y and n
    carry, each block's bytes). InputError names the first bad field."""
    nodes = doc["live_nodes"]
    if not isinstance(nodes, list) or not all(isinstance(n, str) and n for n in nodes):
        raise InputError("input: 'live_nodes' must be a list of node names")
    node_id = {name: j for j, name in enumerate(nodes)}
    if len(node_id) != len(nodes):
        raise InputError("input: 'live_nodes' lists a node twice")
    blocks = doc["blocks"]
    if not isinstance(blocks, list):
        raise InputError("input: 'blocks' must be a list")
    cols = {k: [] for k in ("id", "rc_nodes", "base", "tasks", "delayed", "delay", "y", "n",
                            "bytes", "nonlocal", "peak")}
    seen = set()
    for i, b in enumerate(blocks):
        where = f"blocks[{i}]"
        if not isinstance(b, dict):
            raise InputError(f"input: {where} must be an object")
        for key in _BLOCK_REQUIRED:
            if key not in b:
                raise InputError(f"input: {where} is missing field '{key}'")
        bid = b["block_id"]
        if not isinstance(bid, (str, int)) or isinstance(bid, bool):
            raise InputError(f"input: {where}.block_id must be a string or an integer")
        bid = str(bid)
        where = f"block {bid}"
        if bid in seen:
            raise InputError(f"input: block {bid} appears twice")
        seen.add(bid)
        held = b["nodes"]
        if not isinstance(held, list):
            raise InputError(f"input: {where}: 'nodes' must be a list of node names")
        for name in held:
            if name not in node_id:
                raise InputError(f"input: {where}: unknown node {name!r} (not in live_nodes)")
        if len(set(held)) != len(held):
            raise InputError(f"input: {where}: 'nodes' lists a node twice")
        tasks = _count(b, "tasks", where)
        delayed = _count(b, "delayed_tasks", where)
        if delayed > tasks:
            raise InputError(f"input: {where}: delayed_tasks {delayed} > tasks {tasks}")
        nonlocal_ = _count(b, "nonlocal_tasks", where, default=0)
        if nonlocal_ > tasks:
            raise InputError(f"input: {where}: nonlocal_tasks {nonlocal_} > tasks {tasks}")
        base = _count(b, "default_replicas", where)
        if base < 1:
            raise InputError(f"input: {where}: default_replicas must be >= 1, got {base}")
        cols["id"].append(bid)
        cols["rc_nodes"].append([node_id[name] for name in held])
        cols["base"].append(base)
        cols["tasks"].append(tasks)
        cols["delayed"].append(delayed)
        cols["nonlocal"].append(nonlocal_)
        cols["peak"].append(_count(b, "peak_readers", where, default=0))
        cols["delay"].append(_number(b, "delay_s", where))
        cols["y"].append(_number(b, "y", where, default=0.0))
        cols["n"].append(_count(b, "n", where, default=0))
        cols["bytes"].append(_count(b, "bytes", where, default=128 * 1024 * 1024))
    k = len(cols["id"])
    lengths = [len(r) for r in cols["rc_nodes"]]
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    ids = np.array(cols["id"], dtype=object)
    zeros = np.zeros(k, np.int32)
    row_of = {bid: i for i, bid in enumerate(cols["id"])}
    job_indptr, job_blocks = read_jobs(doc.get("jobs"), row_of)
    ri = RoundInput(block_ids=ids, file_index=np.arange(k), tasks=cols["tasks"],
                    delayed_tasks=cols["delayed"], delay_s=cols["delay"],
                    nonlocal_tasks=cols["nonlocal"], peak_readers=cols["peak"],
                    replica_indptr=indptr,
                    replica_nodes=[j for r in cols["rc_nodes"] for j in r],
                    base_replication=cols["base"], node_names=np.array(nodes, dtype=object),
                    job_indptr=job_indptr, job_blocks=job_blocks)
    state = BlockState(block_ids=ids, y=cols["y"], n=cols["n"], base_replication=cols["base"],
                       file_index=np.arange(k), idle_rounds=zeros)
    return ri, state, np.array(cols["bytes"], np.int64)


def read_jobs(jobs, row_of: dict[str, int]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The optional ``jobs`` section (job id -> the block ids its maps read) as the round
    input's job CSR, jobs in id order; (None, None) without it."""
    if jobs is None:
        return None, None
    if not isinstance(jobs, dict):
        raise InputError("input: 'jobs' must map job ids to lists of block ids")
    indptr, rows = [0], []
    for job in sorted(jobs):
        read = jobs[job]
        if not isinstance(read, list):
            raise InputError(f"input: jobs[{job!r}] must be a list of block ids")
        for bid in dict.fromkeys(str(b) for b in read):
            if bid not in row_of:
                raise InputError(f"input: jobs[{job!r}]: unknown block {bid} (not in blocks)")
            rows.append(row_of[bid])
        indptr.append(len(rows))
    return np.array(indptr, np.int64), np.array(rows, np.int64)


def read_rails(raw, max_replication: int) -> Rails:
    """A round document's 'rails' object, validated."""
    if not isinstance(raw, dict):
        raise InputError("input: 'rails' must be an object")
    unknown = sorted(set(raw) - set(_RAIL_NAMES))
    if unknown:
        raise InputError(f"input: unknown rail rails.{unknown[0]}; known: {', '.join(_RAIL_NAMES)}")
    for key, v in raw.items():
        if key == "protected":
            if not isinstance(v, list) or not all(isinstance(g, str) for g in v):
                raise InputError("input: rails.protected must be a list of glob strings")
        elif v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise InputError(f"input: rails.{key} must be a non-negative integer, got {v!r}")
    try:
        return Rails(**raw).within(max_replication)
    except InputError as exc:
        raise InputError(f"input: rails.{exc}") from None


def _count(b: dict, key: str, where: str, default=None) -> int:
    v = b.get(key, default)
    if v is None:
        raise InputError(f"input: {where}: '{key}' must be a count, got null")
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InputError(f"input: {where}: '{key}' must be an integer count, got {v!r}")
    if v < 0:
        raise InputError(f"input: {where}: '{key}' must not be negative, got {v}")
    if v > _COUNT_MAX.get(key, 2**31 - 1):
        raise InputError(f"input: {where}: '{key}' is too large, got {v}")
    return v


def _number(b: dict, key: str, where: str, default=None) -> float:
    v = b.get(key, default)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        raise InputError(f"input: {where}: '{key}' must be a finite number, got {v!r}")
    if v < 0:
        raise InputError(f"input: {where}: '{key}' must not be negative, got {v}")
    return float(v)
