"""One daemon round's pure core: window document + persisted state + journal -> file plan.

The window document is ``build_round``'s (the ``dsbra observe`` output). Two things the
daemon adds to it before the policy sees it:

- every block of each file we raised and that the window did not read, with zero tasks, so a
  file that cools is seen cooling and lowered back (a block absent from the round is otherwise
  invisible to the policy);
- the journal's per-file base replication wins over both the observed replication and the
  state's, so "base" is what the file had before our first change.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dsbra.policy.api import BlockState, Decision, FileTable, RoundInput, make_policy
from dsbra.policy.cli import _round_input
from dsbra.policy.rails import FilePlan, Rails, plan_files


@dataclass
class RoundResult:
    ri: RoundInput
    decision: Decision
    state: BlockState  #: to persist: this round's rows plus the earlier rows it did not see
    plan: FilePlan
    paths: list[str]  #: per block row, its file


def add_cooling_blocks(doc: dict, located: dict[str, object], base: dict[str, int]) -> None:
    """Append zero-task rows for the blocks of raised files the window did not read (in place).

    ``located``: path -> FileBlocks (from :func:`dsbra.observe.window.file_blocks`).
    """
    seen = {b["block_id"] for b in doc["blocks"]}
    live = set(doc["live_nodes"])
    for path, fb in located.items():
        if path not in base or fb is None:
            continue
        for bid, hosts, start, end in zip(fb.block_ids, fb.hosts, fb.starts, fb.ends):
            if bid in seen:
                continue
            doc["blocks"].append({"block_id": bid, "nodes": [h for h in hosts if h in live],
                                  "default_replicas": int(fb.replication), "tasks": 0,
                                  "delayed_tasks": 0, "delay_s": 0.0, "path": path,
                                  "bytes": int(end - start)})
            seen.add(bid)


def decide(doc: dict, old: BlockState | None, journal_base: dict[str, int], *,
           profile: str | None, params: dict, rails: Rails,
           file_bytes: dict[str, int], stored_bytes: int | None = None) -> RoundResult:
    """Run the DSBRA policy (default profile unless ``profile``) and the rails on one window.

    ``stored_bytes``: what the cluster stores (the NameNode's CapacityUsed), the policy's
    storage budget is a fraction of it; the window's few blocks would make it a fraction of a
    block on a quiet cluster.
    """
    ri, _, _ = _round_input(doc)
    paths = [str(b.get("path", b["block_id"])) for b in doc["blocks"]]
    file_of = {p: i for i, p in enumerate(dict.fromkeys(paths))}
    fidx = np.array([file_of[p] for p in paths], np.int64)
    # base: the journal's (before our first change), else the state's, else as observed
    st = (old.aligned_to(ri) if old is not None and len(old) else BlockState.fresh(ri))
    base = st.base_replication.copy()
    for row, p in enumerate(paths):
        if p in journal_base:
            base[row] = journal_base[p]
    ri = dataclasses.replace(ri, file_index=fidx, base_replication=base)
    st = dataclasses.replace(st, base_replication=base, file_index=fidx)
    n_files = len(file_of)
    cur = np.zeros(n_files, np.int64)
    fbase = np.full(n_files, np.iinfo(np.int16).max, np.int64)
    for row, b in enumerate(doc["blocks"]):
        cur[fidx[row]] = int(b["default_replicas"])
        fbase[fidx[row]] = min(fbase[fidx[row]], int(base[row]))
    fpaths = np.array(list(file_of), dtype=object)
    files = FileTable(paths=fpaths, base_replication=fbase, current_replication=cur,
                      length_bytes=[file_bytes.get(p, rails.block_bytes) for p in fpaths],
                      block_count=np.bincount(fidx, minlength=n_files))
    ri = dataclasses.replace(ri, files=files,
                             storage_base_bytes=float(stored_bytes) if stored_bytes else None)
    kw = dict(params)
    kw.setdefault("delay_threshold_s", float(doc["params"]["delay_threshold_s"]))
    if profile is not None:
        kw["profile"] = profile
    policy = make_policy("dsbra", **kw)
    # the rails' ceiling never exceeds the policy's own max_replication
    rails = dataclasses.replace(rails, max_replication=min(rails.max_replication,
                                                           policy.params.max_replication))
    decision, new_state = policy.decide(ri, st)
    plan = plan_files(ri, decision, rails)
    return RoundResult(ri, decision, merge_state(new_state, old), plan, paths)


def merge_state(new: BlockState, old: BlockState | None) -> BlockState:
    """This round's rows plus the old rows of blocks this round did not see (their history)."""
    if old is None or not len(old):
        return new
    keep = ~pc.is_in(_as_strings(old.block_ids),
                     value_set=_as_strings(new.block_ids)).to_numpy(zero_copy_only=False)
    if not keep.any():
        return new
    cat = lambda a, b: np.concatenate((a, b))  # noqa: E731
    return BlockState(block_ids=cat(new.block_ids.astype(object), old.block_ids[keep].astype(object)),
                      y=cat(new.y, old.y[keep]), n=cat(new.n, old.n[keep]),
                      base_replication=cat(new.base_replication, old.base_replication[keep]),
                      file_index=np.full(len(new) + int(keep.sum()), -1, np.int32),
                      idle_rounds=cat(new.idle_rounds, old.idle_rounds[keep]), round=new.round)


def _as_strings(ids: np.ndarray) -> pa.Array:
    """Block ids as an Arrow string array (the daemon's are "blk_<n>" strings; a 1 M-id
    membership test through Arrow takes a sixth of numpy's on fixed-width unicode copies)."""
    try:
        return pa.array(ids, pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(ids.astype(str))
