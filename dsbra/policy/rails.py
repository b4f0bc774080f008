"""From per-block decisions to a per-file plan, through the safety rails. Pure, columnar.

HDFS sets replication per file, so block decisions are folded into one target per file:

    delta_b  = +r (block gains r replicas), -1 (loses one) or 0 (no decision)
    wanted_f = current_f + max over the file's blocks of delta_b

A file therefore grows as much as its hottest block asks, and shrinks only when every one of
its blocks asks to shrink (a block absent from the round counts as 0). For one-block files
(the benchmark data set) file and block coincide. Then the rails, in this order:

1. range: a decrease stops at max(base_f, cluster minimum); an increase stops at
   min(max replication, live nodes). A file is never moved below its base by us.
2. protected paths (fnmatch globs): no change at all.
   held out (dsbra.experiment.design): a raise of a control-group file is not made; the row
   keeps the target it would have had (``would_target``) and uses no cap or budget.
3. decreases go first (they free storage); increases follow in priority order (the driving
   block's RF descending, then file index).
4. caps per round (files changed, replicas added, bytes added) and the storage budget (total
   extra bytes over base, across rounds) are applied to that order as a prefix: the first
   increase that does not fit gets the replicas that still fit, and every later one is refused,
   so a lower-priority file never overtakes a higher one.
The plan keeps refused files too, with the rail that refused them.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from dsbra.errors import InputError
from dsbra.policy.api import RULE_NAMES, RULE_SWITCHED_OFF, Decision, FileTable, RoundInput
from dsbra.policy.placement import csr_positions

# FilePlan.status codes: what the rails did to the policy's wish for a file
STATUS_OK = 0  #: applied as the policy wished
STATUS_CLAMPED = 1  #: moved, but clamped to the replication range
STATUS_PROTECTED = 2  #: protected path: unchanged
STATUS_RANGE = 3  #: already at the floor / ceiling: unchanged
STATUS_CAP = 4  #: per-round cap (files, replicas or bytes) reached: unchanged or partial
STATUS_BUDGET = 5  #: storage budget reached: unchanged or partial
STATUS_HELD_OUT = 6  #: a raise of a control-group file: unchanged, for the experiment

STATUS_NAMES = {STATUS_OK: "ok", STATUS_CLAMPED: "clamped", STATUS_PROTECTED: "protected",
                STATUS_RANGE: "at-limit", STATUS_CAP: "round-cap", STATUS_BUDGET: "budget",
                STATUS_HELD_OUT: "held-out"}


class ControlGroup(Protocol):
    """The experiment's control group as the rails need it (dsbra.experiment.design.Holdout):
    the rails hold its files' raises back and know nothing else of the experiment."""

    @property
    def enabled(self) -> bool: ...

    def is_control(self, paths) -> np.ndarray: ...


_NO_LIMIT = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Rails:
    """The limits every policy's wishes pass through (None = no limit): one declaration for the
    daemon's ``rails:`` section, `dsbra plan`'s ``rails`` object and the simulator.

    ``max_replication``: None = the policy's own (:meth:`within`). ``storage_budget_bytes``:
    total extra bytes over base replication allowed across all files (including extra replicas
    already in place). ``block_bytes``: the size of a file whose length is not known (with no
    file table in the round input, each block is its own file).
    """

    min_replication: int = 1
    max_replication: int | None = None
    storage_budget_bytes: int | None = None
    max_files_per_round: int | None = None
    max_replicas_per_round: int | None = None
    max_bytes_per_round: int | None = None
    protected: tuple[str, ...] = ()
    block_bytes: int = 128 * 1024 * 1024

    def __post_init__(self):
        if self.min_replication < 1:
            raise InputError(f"min_replication must be >= 1, got {self.min_replication}")
        if self.max_replication is not None and self.max_replication < self.min_replication:
            raise InputError(f"max_replication must be >= min_replication ({self.min_replication}), "
                             f"got {self.max_replication}")
        for name in ("storage_budget_bytes", "max_files_per_round", "max_replicas_per_round",
                     "max_bytes_per_round"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise InputError(f"{name} must be >= 0, got {v!r}")
        object.__setattr__(self, "protected", tuple(self.protected))

    def remaining(self, files: int = 0, replicas: int = 0, bytes_added: int = 0,
                  extra_elsewhere: int = 0) -> "Rails":
        """These rails less what is used already: ``files``, ``replicas`` and ``bytes_added``
        changed earlier in the same round (the daemon's fast polls and its round share the
        per-round caps), ``extra_elsewhere`` bytes above base held by files outside the plan's
        file table (the budget counts every file's)."""
        def less(cap, used):
            return None if cap is None else max(cap - used, 0)

        return dataclasses.replace(
            self, max_files_per_round=less(self.max_files_per_round, files),
            max_replicas_per_round=less(self.max_replicas_per_round, replicas),
            max_bytes_per_round=less(self.max_bytes_per_round, bytes_added),
            storage_budget_bytes=less(self.storage_budget_bytes, extra_elsewhere))

    def within(self, ceiling: int) -> "Rails":
        """These rails with ``max_replication`` at most ``ceiling`` (a policy's own maximum),
        and never below ``min_replication``, the floor every file is kept at anyway."""
        cap = ceiling if self.max_replication is None else min(self.max_replication, ceiling)
        return dataclasses.replace(self, max_replication=max(cap, self.min_replication))


@dataclass(frozen=True)
class FilePlan:
    """One row per file the policy wanted to change.

    ``current`` -> ``target`` (after rails), ``wanted`` (before rails); ``rf`` and ``rule`` of the
    driving block, the round's ``gavg``; ``status`` (STATUS_* codes); intended placement order
    of added replicas as CSR over the rows (node ids of the round's live-node list).
    ``would_target``: the target after the range and protection rails, before the holdout,
    caps and budget (a held-out row's decision as it would have been).
    """

    file_index: np.ndarray
    paths: np.ndarray
    current: np.ndarray
    wanted: np.ndarray
    target: np.ndarray
    rf: np.ndarray
    rule: np.ndarray
    status: np.ndarray
    placement_indptr: np.ndarray
    placement_nodes: np.ndarray
    would_target: np.ndarray
    gavg: float
    policy: str
    extra_bytes_before: int
    extra_bytes_after: int
    summary: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.file_index)

    def changed(self) -> np.ndarray:
        """Rows whose target differs from the current replication."""
        return np.flatnonzero(self.target != self.current)

    def held_out(self) -> np.ndarray:
        """Rows of control-group files whose raise was held out."""
        return np.flatnonzero(self.status == STATUS_HELD_OUT)

    def to_records(self, node_names, rows=None) -> list[dict]:
        """Plain dicts, one per row (or per row of ``rows``), for JSON output and decision
        logs."""
        out = []
        for k in range(len(self)) if rows is None else rows:
            nodes = self.placement_nodes[self.placement_indptr[k]:self.placement_indptr[k + 1]]
            out.append({
                "file": str(self.paths[k]),
                "current": int(self.current[k]),
                "wanted": int(self.wanted[k]),
                "target": int(self.target[k]),
                "reason": {"policy": self.policy, "rule": RULE_NAMES[int(self.rule[k])],
                           "rf": float(self.rf[k]), "gavg": float(self.gavg)},
                "status": STATUS_NAMES[int(self.status[k])],
                "placement": [str(node_names[j]) for j in nodes],
            })
            if self.status[k] == STATUS_HELD_OUT:
                out[-1]["would_target"] = int(self.would_target[k])
        return out


def plan_files(ri: RoundInput, decision: Decision, rails: Rails,
               holdout: ControlGroup | None = None) -> FilePlan:
    """Fold ``decision`` into per-file targets and apply ``rails`` (see the module doc);
    ``holdout``: the experiment whose control-group files are not raised.

    Memory follows the decided blocks, not the round: no array here is per block or per file
    of the round except the passes that sum the extra bytes already in place.
    """
    if not len(decision.replicate_block) and not len(decision.dereplicate_block):
        return _nothing_planned(ri, decision, rails)
    # per decided block: its delta, its file; placement CSR per decided-up block
    add = np.diff(decision.replicate_indptr)
    blocks = np.concatenate((decision.replicate_block, decision.dereplicate_block))
    delta = np.concatenate((add, -np.ones(len(decision.dereplicate_block), np.int64)))
    if ri.files is None:
        # each block its own file: a table of the decided blocks only (file = row of it)
        decided = np.unique(blocks)
        files = _one_block_files(ri, decided, rails.block_bytes)
        bfile = np.searchsorted(decided, blocks)
        extra_before = _one_block_extra_bytes(ri, rails.block_bytes)
    else:
        files = ri.files
        bfile = ri.file_index[blocks].astype(np.int64)
        extra_before = _extra_bytes(files)
    # the driving block of each file: largest delta, then highest RF, then lowest row
    order = np.lexsort((blocks, -decision.rf[blocks], -delta, bfile))
    first = np.ones(len(order), bool)
    first[1:] = bfile[order][1:] != bfile[order][:-1]
    drive = order[first]
    f = bfile[drive]
    f_delta = delta[drive]
    # a file shrinks only if all of its blocks shrink
    shrinking_files = np.sort(bfile[delta < 0])
    shrink_blocks = (np.searchsorted(shrinking_files, f, side="right")
                     - np.searchsorted(shrinking_files, f, side="left"))
    all_shrink = shrink_blocks >= files.block_count[f]
    f_delta = np.where((f_delta < 0) & ~all_shrink, 0, f_delta)
    keep = f_delta != 0
    drive, f, f_delta = drive[keep], f[keep], f_delta[keep]

    current = files.current_replication[f].astype(np.int64)
    base = files.base_replication[f].astype(np.int64)
    length = files.length_bytes[f]
    # a switchback's off period takes a file straight back to its base
    wanted = np.where(decision.rule[blocks[drive]] == RULE_SWITCHED_OFF, base, current + f_delta)
    floor = np.maximum(base, rails.min_replication)
    ceiling = ri.n_nodes if rails.max_replication is None else min(rails.max_replication, ri.n_nodes)
    up = f_delta > 0
    target = np.where(up, np.maximum(np.minimum(wanted, ceiling), current),
                      np.minimum(np.maximum(wanted, floor), current))
    status = np.where(target == current, STATUS_RANGE,
                      np.where(target != wanted, STATUS_CLAMPED, STATUS_OK)).astype(np.int8)
    if rails.protected:
        prot = np.array([any(fnmatch.fnmatchcase(str(p), g) for g in rails.protected)
                         for p in files.paths[f]], bool)
        target = np.where(prot, current, target)
        status[prot] = STATUS_PROTECTED
    would_target = target.copy()
    if holdout is not None and holdout.enabled:
        raising = np.flatnonzero(target > current)
        held = raising[holdout.is_control(files.paths[f[raising]])]
        target[held] = current[held]
        status[held] = STATUS_HELD_OUT

    # decreases first, then increases by priority; caps and budget as a prefix
    rf = decision.rf[blocks[drive]]
    prio = np.lexsort((f, -rf, up))  # decreases (up=False) sort first
    target = target.copy()
    files_left = _limit(rails.max_files_per_round)
    moving = prio[target[prio] != current[prio]]
    if len(moving) > files_left:
        refused = moving[files_left:]
        target[refused] = current[refused]
        status[refused] = STATUS_CAP
    down_rows = prio[(target[prio] < current[prio])]
    extra_now = extra_before - int(np.sum((current[down_rows] - target[down_rows])
                                          * length[down_rows]))
    budget_left = (_NO_LIMIT if rails.storage_budget_bytes is None
                   else max(rails.storage_budget_bytes - extra_now, 0))
    up_rows = prio[target[prio] > current[prio]]
    _grant_prefix(up_rows, target, current, length, status,
                  replicas_left=_limit(rails.max_replicas_per_round),
                  bytes_left=_limit(rails.max_bytes_per_round), budget_left=budget_left)
    added = np.maximum(target - current, 0)
    extra_after = extra_now + int(np.sum(added * length))

    # intended placement: the driving block's nodes, as many as the file gains; ``blocks``
    # lists the replicated blocks first, so a driving row below their count is their row
    k = np.where(drive < len(decision.replicate_block), drive, -1)
    starts = np.where(k >= 0, decision.replicate_indptr[np.maximum(k, 0)], 0)
    indptr = np.zeros(len(f) + 1, np.int64)
    np.cumsum(added, out=indptr[1:])
    seg = np.repeat(np.arange(len(f)), added)
    pos = np.arange(indptr[-1]) - indptr[:-1][seg]
    nodes = decision.replicate_nodes[starts[seg] + pos]

    row_order = np.argsort(f, kind="stable")
    file_index = f if ri.files is not None else decided[f]
    plan_rows = dict(file_index=file_index, paths=files.paths[f], current=current,
                     wanted=wanted, target=target, rf=rf, rule=decision.rule[blocks[drive]],
                     status=status, would_target=would_target)
    plan_rows = {name: a[row_order] for name, a in plan_rows.items()}
    n_add = added[row_order]
    p_indptr = np.zeros(len(f) + 1, np.int64)
    np.cumsum(n_add, out=p_indptr[1:])
    p_nodes = nodes[csr_positions(indptr, row_order)[0]]
    changed = plan_rows["target"] != plan_rows["current"]
    summary = {
        "files_wanted": int(len(f)),
        "files_changed": int(np.count_nonzero(changed)),
        "replicas_added": int(n_add.sum()),
        "replicas_removed": int(np.sum(np.maximum(current - target, 0))),
        "bytes_added": int(np.sum(added * length)),
        "storage_budget_bytes": rails.storage_budget_bytes,
        "files_held_out": int(np.count_nonzero(plan_rows["status"] == STATUS_HELD_OUT)),
    }
    return FilePlan(**plan_rows, placement_indptr=p_indptr,
                    placement_nodes=p_nodes.astype(np.int32), gavg=decision.gavg,
                    policy=decision.policy, extra_bytes_before=extra_before,
                    extra_bytes_after=extra_after, summary=summary)


def _limit(v: int | None) -> int:
    return _NO_LIMIT if v is None else int(v)


def _grant_prefix(rows, target, current, length, status, replicas_left, bytes_left,
                  budget_left) -> None:
    """Grant increases in ``rows`` order while replicas, bytes and budget last (in place).

    The first row that does not fit whole gets what still fits; every later row is refused.
    """
    inc = (target[rows] - current[rows]).astype(np.int64)
    cost = inc * length[rows]
    cum_inc, cum_cost = np.cumsum(inc), np.cumsum(cost)
    bytes_cap = min(bytes_left, budget_left)
    fits = (cum_inc <= replicas_left) & (cum_cost <= bytes_cap)
    n_fit = int(np.argmin(fits)) if not fits.all() else len(rows)
    if n_fit == len(rows):
        return
    used_inc = int(cum_inc[n_fit - 1]) if n_fit else 0
    used_cost = int(cum_cost[n_fit - 1]) if n_fit else 0
    blocker = rows[n_fit]
    per_replica = max(int(length[blocker]), 1)
    partial = min(int(inc[n_fit]), replicas_left - used_inc,
                  (bytes_cap - used_cost) // per_replica)
    code = STATUS_BUDGET if cum_cost[n_fit] > budget_left else STATUS_CAP
    target[blocker] = current[blocker] + max(partial, 0)
    status[blocker] = code
    later = rows[n_fit + 1:]
    target[later] = current[later]
    status[later] = code


def _nothing_planned(ri: RoundInput, decision: Decision, rails: Rails) -> FilePlan:
    """The plan of a round that decided nothing, as :func:`plan_files` would fold it (most of a
    quiet cluster's rounds: this skips its passes over empty arrays)."""
    extra = (_one_block_extra_bytes(ri, rails.block_bytes) if ri.files is None
             else _extra_bytes(ri.files))
    paths = np.empty(0, object if ri.files is None else ri.files.paths.dtype)
    none, nothing = np.zeros(0, np.int64), np.zeros(0, np.int8)
    return FilePlan(file_index=none, paths=paths, current=none, wanted=none, target=none,
                    rf=np.zeros(0, np.float64), rule=nothing, status=nothing,
                    would_target=none, placement_indptr=np.zeros(1, np.int64),
                    placement_nodes=np.zeros(0, np.int32), gavg=decision.gavg,
                    policy=decision.policy, extra_bytes_before=extra, extra_bytes_after=extra,
                    summary={"files_wanted": 0, "files_changed": 0, "replicas_added": 0,
                             "replicas_removed": 0, "bytes_added": 0,
                             "storage_budget_bytes": rails.storage_budget_bytes,
                             "files_held_out": 0})


def _extra_bytes(files: FileTable) -> int:
    """Bytes stored above base replication across ``files`` (only the raised files are
    gathered, so no per-file int64 temporaries)."""
    raised = np.flatnonzero(files.current_replication > files.base_replication)
    over = (files.current_replication[raised].astype(np.int64)
            - files.base_replication[raised])
    return int(np.sum(over * files.length_bytes[raised]))


def _one_block_files(ri: RoundInput, rows: np.ndarray, block_bytes: int) -> FileTable:
    """The one-block files of block ``rows``: current replication = live replicas (>= 1)."""
    rc = ri.replica_indptr[rows + 1] - ri.replica_indptr[rows]
    return FileTable.one_block_files(ri.block_ids[rows], ri.base_replication[rows],
                                     np.maximum(rc, 1), block_bytes)


_EXTRA_CHUNK = 1 << 18


def _one_block_extra_bytes(ri: RoundInput, block_bytes: int) -> int:
    """``_extra_bytes`` of every block of the round as its own file, a chunk of blocks at a
    time (the plan runs beside the round's decision and new state)."""
    extra = 0
    for lo in range(0, len(ri), _EXTRA_CHUNK):
        hi = min(lo + _EXTRA_CHUNK, len(ri))
        current = np.maximum(np.diff(ri.replica_indptr[lo:hi + 1]), 1)
        extra += int(np.sum(np.maximum(current - ri.base_replication[lo:hi], 0)))
    return extra * block_bytes
