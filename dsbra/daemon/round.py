"""One daemon round's pure core: columnar window + persisted state + journal -> file plan.

The window is ``dsbra.observe.window.build_window``'s, with the blocks of the files we raised
and the window did not read added at zero tasks (``Window.with_cooling``: a file that cools is
seen cooling and lowered back). Here the journal's per-file base replication wins over both
the observed replication and the state's, so "base" is what the file had before our first
change; then the round's one choreography, ``dsbra.policy.step.step``, decides and plans.

Block ids are HDFS's numeric ids (int64) from the window's "blk_<n>" names on: eight bytes a
block instead of a Python string, in the round and in the persisted state.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dsbra.errors import InputError
from dsbra.experiment.design import Holdout
from dsbra.observe.window import Window
from dsbra.policy import placement
from dsbra.policy.api import BlockState, Decision, FileTable, RoundInput
from dsbra.policy.rails import FilePlan, Rails
from dsbra.policy.registry import make_policy
from dsbra.policy.step import step


@dataclass
class RoundResult:
    ri: RoundInput
    decision: Decision
    state: BlockState  #: to persist: this round's rows plus the earlier rows it did not see
    plan: FilePlan
    paths: list[str]  #: per block row, its file
    mode: str  #: dsbra.policy.step's ACTING, SWITCHED_OFF or PAUSED


def decide(window: Window, old: BlockState | None, journal_base: dict[str, int], *,
           profile: str | None, params: dict, rails: Rails,
           file_bytes: dict[str, int], stored_bytes: int | None = None,
           policy_name: str = "dsbra", holdout: Holdout | None = None,
           off: bool = False, paused: bool = False, hold=()) -> RoundResult:
    """Run the policy (DSBRA's default profile unless ``profile``; ``policy_name`` scarlett or
    dare runs that baseline instead) and the rails on one window.

    ``stored_bytes``: what the cluster stores (the NameNode's CapacityUsed), the policy's
    storage budget is a fraction of it; the window's few blocks would make it a fraction of a
    block on a quiet cluster. ``holdout``: the experiment whose control-group files are not
    raised (the rails' held-out status). ``off``: a switchback's off period: the policy learns
    from the window, and the plan takes every file above its base back to it instead.
    ``paused``: the round decides and plans, and acts on nothing (:mod:`dsbra.policy.step`).
    ``hold``: files the round does not lower, the fast poll's (dsbra.daemon.fastpoll).
    """
    paths = window.paths.tolist()
    file_of = {p: i for i, p in enumerate(dict.fromkeys(paths))}
    fidx = np.fromiter((file_of[p] for p in paths), np.int64, len(paths))
    ri = RoundInput(block_ids=block_numbers(window.block_ids), file_index=fidx,
                    tasks=window.tasks, delayed_tasks=window.delayed_tasks,
                    delay_s=window.delay_s, nonlocal_tasks=window.nonlocal_tasks,
                    peak_readers=window.peak_readers, replica_indptr=window.replica_indptr,
                    replica_nodes=window.replica_nodes, base_replication=window.replication,
                    node_names=np.array(window.live_nodes, dtype=object),
                    job_indptr=window.job_indptr, job_blocks=window.job_rows)
    st, unseen = split_state(old, ri)
    del old  # a caller passing its only reference frees the rows now held by st or unseen
    # base: the journal's (before our first change), else the state's, else as observed
    base = st.base_replication.copy()
    for row, p in enumerate(paths):
        if p in journal_base:
            base[row] = journal_base[p]
    ri = dataclasses.replace(ri, base_replication=base)
    st = dataclasses.replace(st, base_replication=base, file_index=fidx)
    n_files = len(file_of)
    cur = np.zeros(n_files, np.int64)
    cur[fidx] = window.replication  # a file's blocks share its replication
    fbase = np.full(n_files, np.iinfo(np.int16).max, np.int64)
    np.minimum.at(fbase, fidx, base)
    fpaths = np.array(list(file_of), dtype=object)
    files = FileTable(paths=fpaths, base_replication=fbase, current_replication=cur,
                      length_bytes=[file_bytes.get(p, rails.block_bytes) for p in fpaths],
                      block_count=np.bincount(fidx, minlength=n_files))
    ri = dataclasses.replace(ri, files=files,
                             storage_base_bytes=float(stored_bytes) if stored_bytes else None)
    kw = dict(params)
    if policy_name == "dsbra":
        kw.setdefault("delay_threshold_s", window.delay_threshold_s)
        if profile is not None:
            kw["profile"] = profile
    policy = make_policy(policy_name, **kw)
    # the rails' ceiling never exceeds the policy's own max_replication
    ceiling = getattr(policy, "params", policy).max_replication
    keep = None
    if len(hold):  # by the round's own file lookup: no string copy of every path
        keep = np.zeros(n_files, bool)
        keep[[file_of[p] for p in hold if p in file_of]] = True
    done = step(policy, ri, st, rails.within(ceiling), control_group=holdout, off=off,
                paused=paused, keep=keep)
    del st
    return RoundResult(ri, done.decision, merge_state(done.state, unseen), done.plan, paths,
                       done.mode)


def split_state(old: BlockState | None, ri: RoundInput) -> tuple[BlockState, BlockState | None]:
    """(``old`` aligned to the round's rows, the old rows the round does not cover or None).

    Both are all a round needs of the persisted state, so ``old`` itself need not outlive this
    call: its id and file arrays, and every row the round covers, are then freed."""
    if old is None or not len(old):
        return BlockState.fresh(ri), None
    unseen = np.flatnonzero(~_seen(old.block_ids, ri.block_ids))
    rest = None if not len(unseen) else BlockState(
        block_ids=old.block_ids[unseen], y=old.y[unseen], n=old.n[unseen],
        base_replication=old.base_replication[unseen], file_index=old.file_index[unseen],
        idle_rounds=old.idle_rounds[unseen], round=old.round,
        hot_history=old.hot_history[unseen])
    return old.aligned_to(ri), rest


def block_numbers(names) -> np.ndarray:
    """HDFS's numeric block ids (int64) of "blk_<n>" names, as the observe document has them."""
    def number(name: str) -> int:
        if not name.startswith("blk_"):
            raise ValueError(name)
        return int(name[4:])

    try:
        return np.fromiter((number(name) for name in names), np.int64, len(names))
    except (ValueError, OverflowError) as exc:
        raise InputError(f"round input: block id {exc} is not an HDFS block name (blk_<n>)"
                         ) from None


#: the heat document's format and version (placement/ checks both)
HEAT_FORMAT, HEAT_VERSION = "dsbra-heat", 1


def heat_document(res: RoundResult, raised: list[str], lowered: list[str], *, round_: int,
                  generated_ms: int, interval_s: float, lead_s: float = 0.0) -> dict:
    """What the NameNode's placement plugin reads (docs/placement.md): each live DataNode's
    heat (the round's DNAvg) by the name WebHDFS gives it, and the files dsbra holds above
    their base (their new copies go to the least heated nodes). ``blocks`` (the round's blocks
    per node) and ``rf`` (each file raised this round: its driving block's RF) let the plugin
    count each copy it places into its node's heat, so a round's copies spread. ``lowering``
    (:func:`lowering_holders`) scopes its deletions to the blocks of the files lowered now;
    ``interval_ms`` and ``lead_ms`` (the daemon's round) bound how long it uses the document."""
    names = [str(n) for n in res.ri.node_names]
    held = placement.replicas_per_node(res.ri.replica_nodes, res.ri.n_nodes)
    plan = res.plan
    raising = plan.target > plan.current
    return {"format": HEAT_FORMAT, "version": HEAT_VERSION, "generated_ms": int(generated_ms),
            "round": int(round_), "interval_ms": int(round(interval_s * 1000)),
            "lead_ms": int(round(lead_s * 1000)),
            "nodes": {n: round(float(h), 6) for n, h in zip(names, res.decision.dn_avg)},
            "blocks": {n: int(b) for n, b in zip(names, held)},
            "rf": {str(p): round(float(r), 6)
                   for p, r in zip(plan.paths[raising], plan.rf[raising]) if p in raised},
            "raised": sorted(raised), "lowered": sorted(lowered),
            "lowering": lowering_holders(res, lowered)}


def lowering_holders(res: RoundResult, lowered: list[str]) -> dict:
    """Each of ``lowered`` (files this round lowers): its new replication and, per block that
    will lose a replica, the DataNodes holding it as the round saw them, by the names ``nodes``
    uses. The NameNode's deletion call is told neither the block nor its file, only the holders
    and the replication wanted: the plugin orders a deletion by heat only when both match one
    of these blocks."""
    plan, ri = res.plan, res.ri
    lowering = plan.target < plan.current
    wanted = set(lowered)
    target = {int(f): (str(p), int(t)) for f, p, t in
              zip(plan.file_index[lowering], plan.paths[lowering], plan.target[lowering])
              if p in wanted}
    out = {p: {"replication": t, "holders": []} for p, t in target.values()}
    names, indptr = ri.node_names, ri.replica_indptr
    for b in np.flatnonzero(np.isin(ri.file_index, list(target))):
        path, t = target[int(ri.file_index[b])]
        nodes = ri.replica_nodes[int(indptr[b]):int(indptr[b + 1])]
        holders = sorted(str(names[n]) for n in nodes)
        if len(holders) > t:
            out[path]["holders"].append(holders)
    return out


def top_hot_files(res: RoundResult, k: int) -> list[dict]:
    """The ``k`` blocks of highest RF (equal RF: lower row first), those the window read."""
    rf = res.decision.rf
    rows = np.arange(len(rf))
    if len(rf) > k:  # only the rows at or above the k-th largest RF need sorting
        rows = np.flatnonzero(rf >= np.partition(rf, len(rf) - k)[len(rf) - k])
    rows = rows[np.argsort(-rf[rows], kind="stable")][:k]
    return [{"file": res.paths[i], "block_id": f"blk_{res.ri.block_ids[i]}", "rf": float(rf[i]),
             "tasks": int(res.ri.tasks[i]), "delayed_tasks": int(res.ri.delayed_tasks[i])}
            for i in rows if res.ri.tasks[i] > 0]


def merge_state(new: BlockState, old: BlockState | None) -> BlockState:
    """This round's rows plus the old rows of blocks this round did not see (their history)."""
    if old is None or not len(old):
        return new
    unseen = ~_seen(old.block_ids, new.block_ids)
    if not unseen.any():
        return new
    cat = lambda a, b: np.concatenate((a, b[unseen]))  # noqa: E731
    return BlockState(block_ids=cat(new.block_ids, old.block_ids),
                      y=cat(new.y, old.y), n=cat(new.n, old.n),
                      base_replication=cat(new.base_replication, old.base_replication),
                      file_index=np.full(len(new) + int(unseen.sum()), -1, np.int32),
                      idle_rounds=cat(new.idle_rounds, old.idle_rounds), round=new.round,
                      hot_history=cat(new.hot_history, old.hot_history))


_SEEN_CHUNK = 1 << 18


def _seen(ids: np.ndarray, round_ids: np.ndarray) -> np.ndarray:
    """Which of ``ids`` are among ``round_ids``: numeric ids by binary search, a chunk at a
    time (no hash table or sort of both sets); other ids through Arrow strings."""
    if ids.dtype.kind not in "iu" or round_ids.dtype.kind not in "iu":
        return pc.is_in(_as_strings(ids), value_set=_as_strings(round_ids)).to_numpy(
            zero_copy_only=False)
    seen = np.zeros(len(ids), bool)
    if not len(round_ids):
        return seen
    ordered = round_ids if np.all(round_ids[1:] > round_ids[:-1]) else np.sort(round_ids)
    for lo in range(0, len(ids), _SEEN_CHUNK):
        chunk = ids[lo:lo + _SEEN_CHUNK]
        pos = np.searchsorted(ordered, chunk)
        np.minimum(pos, len(ordered) - 1, out=pos)
        seen[lo:lo + _SEEN_CHUNK] = ordered[pos] == chunk
    return seen


def _as_strings(ids: np.ndarray) -> pa.Array:
    """Block ids as an Arrow string array (a membership test through Arrow takes a sixth of
    numpy's on fixed-width unicode copies)."""
    try:
        return pa.array(ids, pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(ids.astype(str))
