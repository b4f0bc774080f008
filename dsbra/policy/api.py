"""The policy interface shared by the simulator, the daemon and ``dsbra plan``.

Everything is columnar: one numpy array per signal, one row per block (or node, or file), so
one round over ten million blocks is a handful of vector operations, never a Python loop over
blocks. Policies are pure: ``decide(round_input, state) -> (Decision, new_state)`` reads its
arguments, returns new objects and performs no I/O.

Indices, not names, travel between arrays:
- a *block row* is a row of :class:`RoundInput` (0 .. n_blocks-1);
- a *node id* is an index into ``RoundInput.node_names`` (the live DataNodes only);
- a *file index* is a row of :class:`FileTable`.

Stability promise: fields may be added (always with a default); none is renamed or removed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from dsbra.errors import InputError

# --- rule codes (Decision.rule), one per block: why the block was (not) changed -------------
RULE_NONE = 0  #: nothing fired
RULE_HOT = 1  #: DSBRA step 7: RF > GAvg + hot_margin -> replicate
RULE_COLD = 2  #: DSBRA step 6: GAvg <= gate and RF <= cold_low and RC > DRC -> drop one
RULE_COOL = 3  #: DSBRA step 7: GAvg > gate and RF <= cold_high and RC > DRC -> drop one
RULE_HOT_AT_CAP = 4  #: hot, but already at min(max replication, live nodes)
RULE_READERS = 5  #: Scarlett: replicas raised toward the file's peak concurrent readers
RULE_READERS_LOWER = 6  #: Scarlett: readers fell, extra replica released
RULE_BUDGET = 7  #: Scarlett: wanted more replicas, the storage budget said no
RULE_NONLOCAL = 8  #: DARE: a non-local read kept a replica (coin came up heads)
RULE_AGED = 9  #: DARE: an extra replica unused for too many rounds was aged out
RULE_HOT_PENDING = 10  #: DSBRA hysteresis: hot this round, not yet in enough recent rounds
RULE_CO_READ = 11  #: DSBRA co-read: read by the same jobs as a hot block, raised beside it
RULE_SWITCHED_OFF = 12  #: a switchback's off period: the file goes back to base replication
RULE_DEMAND = 13  #: live demand: more maps wait for the block than its holders serve within D
RULE_DEMAND_GONE = 14  #: live demand: no map has waited for it for a while, one extra dropped

RULE_NAMES: dict[int, str] = {
    RULE_NONE: "none",
    RULE_HOT: "hot",
    RULE_COLD: "cold",
    RULE_COOL: "cool",
    RULE_HOT_AT_CAP: "hot-at-cap",
    RULE_READERS: "readers",
    RULE_READERS_LOWER: "readers-lower",
    RULE_BUDGET: "budget",
    RULE_NONLOCAL: "nonlocal",
    RULE_AGED: "aged",
    RULE_HOT_PENDING: "hot-pending",
    RULE_CO_READ: "co-read",
    RULE_SWITCHED_OFF: "switched-off",
    RULE_DEMAND: "demand",
    RULE_DEMAND_GONE: "demand-gone",
}

STATE_FORMAT_VERSION = 2


def _as(a, dtype) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


def _narrowest(limit: int, *dtypes) -> type:
    """The first of ``dtypes`` that holds ``limit``, else int64: the replica CSR is the largest
    part of a round's input at millions of blocks (the daemon's 1 GiB at 10 M blocks)."""
    return next((dt for dt in dtypes if limit <= np.iinfo(dt).max), np.int64)


@dataclass(frozen=True)
class FileTable:
    """One row per file. Replication changes are per file in HDFS (SETREPLICATION).

    ``paths``: the file's HDFS path (any string identifier; used by protected-path globs).
    ``base_replication``: the file's replication before any policy changed it.
    ``current_replication``: the file's replication setting now (what SETREPLICATION last set).
    ``length_bytes``: the file's length; extra storage of a file = (replication - base) * length.
    ``block_count``: blocks of the file.
    """

    paths: np.ndarray
    base_replication: np.ndarray
    current_replication: np.ndarray
    length_bytes: np.ndarray
    block_count: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "paths", np.asarray(self.paths, dtype=object))
        for name, dt in (("base_replication", np.int16), ("current_replication", np.int16),
                         ("length_bytes", np.int64), ("block_count", np.int64)):
            object.__setattr__(self, name, _as(getattr(self, name), dt))

    def __len__(self) -> int:
        return len(self.paths)

    @classmethod
    def one_block_files(cls, block_ids, base_replication, current_replication,
                        block_bytes) -> FileTable:
        """A file table where every block is its own file (the benchmark data set's layout)."""
        n = len(block_ids)
        return cls(paths=np.asarray([str(b) for b in block_ids], dtype=object),
                   base_replication=base_replication, current_replication=current_replication,
                   length_bytes=np.broadcast_to(np.asarray(block_bytes, np.int64), (n,)),
                   block_count=np.ones(n, np.int64))


@dataclass(frozen=True)
class LiveDemand:
    """The demand a fast poll sees now (issue 68), as YARN shows it live.

    Per running job, in submission order: ``job_indptr`` / ``job_blocks``, the block rows of its
    maps not yet bound to a container, one entry a map (its AM's outstanding asks, each known
    by its split's block from job.split; a CSR), and ``job_running``, the containers it holds
    (the Fair Scheduler serves the job holding fewest first). Per live node:
    ``free_containers`` (the ResourceManager's nodes API) and ``running_maps`` (containers
    running maps there, which free as their maps end). ``mean_map_s``: how long the finished
    maps ran; None when none has finished yet.
    """

    job_indptr: np.ndarray
    job_blocks: np.ndarray
    job_running: np.ndarray
    free_containers: np.ndarray
    running_maps: np.ndarray
    mean_map_s: float | None = None

    def __post_init__(self):
        for name in ("job_indptr", "job_blocks"):
            object.__setattr__(self, name, _as(getattr(self, name), np.int64))
        for name in ("job_running", "free_containers", "running_maps"):
            object.__setattr__(self, name, _as(getattr(self, name), np.int32))

    def pending_maps(self, n_blocks: int) -> np.ndarray:
        """Per block row, the running jobs' maps waiting to read it (int64)."""
        return np.bincount(self.job_blocks, minlength=n_blocks)

    def validate(self, n_blocks: int, n_nodes: int) -> None:
        """Raise InputError naming the first column of the wrong length, sign or range."""
        ip, jobs = self.job_indptr, len(self.job_running)
        if ip.shape != (jobs + 1,) or ip[0] != 0 or ip[-1] != len(self.job_blocks) \
                or np.any(np.diff(ip) < 0):
            raise InputError("live demand: job_indptr is not a CSR index over job_running")
        if len(self.job_blocks) and (self.job_blocks.min() < 0
                                     or self.job_blocks.max() >= n_blocks):
            raise InputError(f"live demand: job_blocks out of range [0, {n_blocks})")
        for name, n in (("job_running", jobs), ("free_containers", n_nodes),
                        ("running_maps", n_nodes)):
            a = getattr(self, name)
            if a.shape != (n,):
                raise InputError(f"live demand: {name} has shape {a.shape}, expected ({n},)")
            if n and a.min() < 0:
                raise InputError(f"live demand: negative {name}")
        if self.mean_map_s is not None and not (np.isfinite(self.mean_map_s)
                                                and self.mean_map_s > 0):
            raise InputError(f"live demand: mean_map_s must be > 0, got {self.mean_map_s!r}")


@dataclass(frozen=True)
class RoundInput:
    """What one round sees: the window's per-block signals and the cluster now.

    Per block (all of length n_blocks):
      ``block_ids``      the block's identifier (int64 HDFS block id, or strings in ``dsbra plan``);
                         unique.
      ``file_index``     row of ``files`` the block belongs to (int32).
      ``tasks``          N_i: map tasks that read the block in the window (>= 0).
      ``delayed_tasks``  M_i: of those, tasks delayed by delay scheduling (0 <= M_i <= N_i).
      ``delay_s``        DT_i: their summed delay-scheduling wait, seconds (>= 0).
      ``nonlocal_tasks`` map tasks of the window that read it non-node-local (DARE).
      ``peak_readers``   peak concurrent map tasks reading it in the window (Scarlett).
      ``replica_indptr`` / ``replica_nodes``  CSR of live replicas: the replicas of block row b
                         are ``replica_nodes[replica_indptr[b]:replica_indptr[b+1]]``, node ids
                         into ``node_names``; RC_i = the row's length. Stored narrow: the
                         pointers int32 (int64 past 2^31 replicas), the node ids int16 (int32
                         past 32,767 nodes); do arithmetic on them in a wider type.
      ``base_replication`` DRC_i for blocks the state has not seen yet (the file's replication
                         as observed); for known blocks the state's recorded base wins, since a
                         policy may have changed the current replication since.
    Per node: ``node_names`` the live DataNodes (node id = index), unique strings.
    Per file: ``files`` (optional; without it each block counts as a one-block file).
    ``storage_base_bytes``: the bytes a policy's storage budget is a fraction of. None = the
    round's own blocks at base replication, right when the round covers the whole file system
    (the simulator); the daemon, whose round holds only the window's blocks, passes the
    cluster's stored bytes.
    ``node_racks`` (optional): per live node, its rack (any hashable label; node id = index).
    None = rack unknown, counted as one rack (a replica cap's rack floor is then 1).
    ``job_indptr`` / ``job_blocks`` (optional, together): the window's jobs, each as the block
    rows its maps read (CSR, a row once per job): which blocks the same jobs read together, for
    DSBRA's co-read options. None = not observed (those options then change nothing).
    ``demand`` (optional): the live demand of a fast poll (:class:`LiveDemand`); None = no
    poll (the demand policy then only lowers what has cooled).
    """

    block_ids: np.ndarray
    file_index: np.ndarray
    tasks: np.ndarray
    delayed_tasks: np.ndarray
    delay_s: np.ndarray
    nonlocal_tasks: np.ndarray
    peak_readers: np.ndarray
    replica_indptr: np.ndarray
    replica_nodes: np.ndarray
    base_replication: np.ndarray
    node_names: np.ndarray
    files: FileTable | None = None
    storage_base_bytes: float | None = None
    node_racks: np.ndarray | None = None
    job_indptr: np.ndarray | None = None
    job_blocks: np.ndarray | None = None
    demand: LiveDemand | None = None

    def __post_init__(self):
        if self.node_racks is not None:
            object.__setattr__(self, "node_racks", np.asarray(self.node_racks))
        for name in ("job_indptr", "job_blocks"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _as(getattr(self, name), np.int64))
        for name, dt in (("file_index", np.int32), ("tasks", np.int32),
                         ("delayed_tasks", np.int32), ("delay_s", np.float64),
                         ("nonlocal_tasks", np.int32), ("peak_readers", np.int32),
                         ("base_replication", np.int16)):
            object.__setattr__(self, name, _as(getattr(self, name), dt))
        # sized to the values too, so validate() still sees an out-of-range id as it was given
        indptr, nodes = np.asarray(self.replica_indptr), np.asarray(self.replica_nodes)
        top = lambda a: max(int(a.max()), -int(a.min())) if a.size else 0  # noqa: E731
        object.__setattr__(self, "replica_indptr", _as(
            indptr, _narrowest(max(len(nodes), top(indptr)), np.int32)))
        object.__setattr__(self, "replica_nodes", _as(
            nodes, _narrowest(max(len(self.node_names), top(nodes)), np.int16, np.int32)))
        ids = np.asarray(self.block_ids)
        if ids.dtype.kind in "iu":
            ids = ids.astype(np.int64, copy=False)
        object.__setattr__(self, "block_ids", ids)
        object.__setattr__(self, "node_names", np.asarray(self.node_names, dtype=object))

    def __len__(self) -> int:
        return len(self.block_ids)

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_racks(self) -> int:
        """Racks among the live nodes (1 without ``node_racks``)."""
        if self.node_racks is None or not len(self.node_racks):
            return 1
        return len(np.unique(self.node_racks))

    def budget_base_bytes(self, own: float) -> float:
        """What a storage budget is a fraction of: ``storage_base_bytes`` when the caller gave
        it, else ``own`` (the round's blocks at base replication, as the policy counts them)."""
        return own if self.storage_base_bytes is None else float(self.storage_base_bytes)

    def replica_count(self) -> np.ndarray:
        """RC_i: live replicas per block (int32)."""
        return np.diff(self.replica_indptr).astype(np.int32)

    def validate(self) -> None:
        """Raise InputError naming the first inconsistency; cheap (a few vector passes)."""
        n = len(self)
        for name in ("file_index", "tasks", "delayed_tasks", "delay_s", "nonlocal_tasks",
                     "peak_readers", "base_replication"):
            a = getattr(self, name)
            if a.shape != (n,):
                raise InputError(f"round input: {name} has shape {a.shape}, expected ({n},)")
        if self.replica_indptr.shape != (n + 1,):
            raise InputError(f"round input: replica_indptr has shape {self.replica_indptr.shape},"
                             f" expected ({n + 1},)")
        for name in ("tasks", "delayed_tasks", "nonlocal_tasks", "peak_readers"):
            a = getattr(self, name)
            if n and a.min() < 0:
                raise InputError(f"round input: negative {name} for block "
                                 f"{self.block_ids[int(np.argmin(a))]}")
        if n and not np.all(np.isfinite(self.delay_s)):
            raise InputError("round input: delay_s is not finite for block "
                             f"{self.block_ids[int(np.argmin(np.isfinite(self.delay_s)))]}")
        if n and self.delay_s.min() < 0:
            raise InputError(f"round input: negative delay_s for block "
                             f"{self.block_ids[int(np.argmin(self.delay_s))]}")
        if n and np.any(self.delayed_tasks > self.tasks):
            bad = int(np.argmax(self.delayed_tasks > self.tasks))
            raise InputError(f"round input: block {self.block_ids[bad]} has delayed_tasks "
                             f"{self.delayed_tasks[bad]} > tasks {self.tasks[bad]}")
        if n and np.any(self.nonlocal_tasks > self.tasks):
            bad = int(np.argmax(self.nonlocal_tasks > self.tasks))
            raise InputError(f"round input: block {self.block_ids[bad]} has nonlocal_tasks "
                             f"{self.nonlocal_tasks[bad]} > tasks {self.tasks[bad]}")
        if n and self.base_replication.min() < 1:
            raise InputError(f"round input: base_replication < 1 for block "
                             f"{self.block_ids[int(np.argmin(self.base_replication))]}")
        ip = self.replica_indptr
        if ip[0] != 0 or ip[-1] != len(self.replica_nodes) or np.any(np.diff(ip) < 0):
            raise InputError("round input: replica_indptr is not a valid CSR index")
        rn = self.replica_nodes
        if len(rn) and (rn.min() < 0 or rn.max() >= self.n_nodes):
            raise InputError(f"round input: replica node id out of range [0, {self.n_nodes})")
        if len(np.unique(self.node_names)) != self.n_nodes:
            raise InputError("round input: node_names are not unique")
        sb = self.storage_base_bytes
        if sb is not None and not (np.isfinite(sb) and sb >= 0):
            raise InputError(f"round input: storage_base_bytes must be >= 0, got {sb!r}")
        if self.node_racks is not None and self.node_racks.shape != (self.n_nodes,):
            raise InputError(f"round input: node_racks has shape {self.node_racks.shape}, "
                             f"expected ({self.n_nodes},)")
        if self.demand is not None:
            self.demand.validate(n, self.n_nodes)
        if (self.job_indptr is None) != (self.job_blocks is None):
            raise InputError("round input: job_indptr and job_blocks come together")
        if self.job_indptr is not None:
            jp, jb = self.job_indptr, self.job_blocks
            if (jp.ndim != 1 or not len(jp) or jp[0] != 0 or jp[-1] != len(jb)
                    or np.any(np.diff(jp) < 0)):
                raise InputError("round input: job_indptr is not a valid CSR index")
            if len(jb) and (jb.min() < 0 or jb.max() >= n):
                raise InputError(f"round input: job_blocks has a block row out of range [0, {n})")
        if self.files is not None:
            if n and (self.file_index.min() < 0 or self.file_index.max() >= len(self.files)):
                raise InputError("round input: file_index out of range of the file table")


@dataclass(frozen=True)
class BlockState:
    """Per-block history carried between rounds, one row per block, sorted by nothing.

    ``y``: Y_i, running mean of RF_i. ``n``: rounds since the block was first seen.
    ``base_replication``: DRC_i, recorded when the block was first seen. ``file_index``: its file
    (row in that round's FileTable). ``idle_rounds``: rounds since the block was last read (DARE
    ages extra replicas out on it). ``round``: rounds completed so far (seeds DARE's RNG).
    ``hot_history``: bit k set when the block was hot (DSBRA's adaptive hot rule, before any
    hysteresis) k + 1 rounds ago (uint8, the last 8 rounds; the rounds since a block was last
    hot are its lowest set bit, which is all the hold rule needs). It defaults when omitted (no
    history), so states written before it load as blocks without hot rounds.
    """

    block_ids: np.ndarray
    y: np.ndarray
    n: np.ndarray
    base_replication: np.ndarray
    file_index: np.ndarray
    idle_rounds: np.ndarray
    round: int = 0
    format_version: int = STATE_FORMAT_VERSION
    hot_history: np.ndarray | None = None

    def __post_init__(self):
        for name, dt in (("y", np.float64), ("n", np.int32), ("base_replication", np.int16),
                         ("file_index", np.int32), ("idle_rounds", np.int32)):
            object.__setattr__(self, name, _as(getattr(self, name), dt))
        k = len(self.y)
        history = np.zeros(k, np.uint8) if self.hot_history is None else self.hot_history
        object.__setattr__(self, "hot_history", _as(history, np.uint8))
        ids = np.asarray(self.block_ids)
        if ids.dtype.kind in "iu":
            ids = ids.astype(np.int64, copy=False)
        object.__setattr__(self, "block_ids", ids)

    def __len__(self) -> int:
        return len(self.block_ids)

    @property
    def nbytes(self) -> int:
        """Bytes held by the per-block arrays (object ids count their pointers only)."""
        return sum(getattr(self, f).nbytes for f in
                   ("block_ids", "y", "n", "base_replication", "file_index", "idle_rounds",
                    "hot_history"))

    @classmethod
    def empty(cls) -> BlockState:
        return cls(block_ids=np.zeros(0, np.int64), y=[], n=[], base_replication=[],
                   file_index=[], idle_rounds=[])

    @classmethod
    def fresh(cls, ri: RoundInput) -> BlockState:
        """State for blocks never seen before: Y = 0, n = 0, base from the round input."""
        k = len(ri)
        return cls(block_ids=ri.block_ids, y=np.zeros(k), n=np.zeros(k, np.int32),
                   base_replication=ri.base_replication, file_index=ri.file_index,
                   idle_rounds=np.zeros(k, np.int32))

    def aligned_to(self, ri: RoundInput) -> BlockState:
        """This state re-indexed to the round's block rows.

        Blocks new to the state start fresh (base from the round input); blocks of the state
        absent from the round (deleted) are dropped. The file index always follows the round.
        """
        if self.block_ids is ri.block_ids or (
                len(self) == len(ri) and np.array_equal(self.block_ids, ri.block_ids)):
            if self.block_ids is ri.block_ids and self.file_index is ri.file_index:
                return self
            # the round's id and file arrays: this state's own copies can be freed
            return dataclasses.replace(self, block_ids=ri.block_ids, file_index=ri.file_index)
        out = BlockState.fresh(ri)
        if len(self) == 0:
            return dataclasses.replace(out, round=self.round)
        ids = self.block_ids
        if ids.dtype.kind in "iu" and np.all(ids[1:] > ids[:-1]):
            order, sorted_ids = np.arange(len(ids)), ids  # already sorted: skip the sort
        else:
            order = np.argsort(ids, kind="stable")
            sorted_ids = ids[order]
        pos = np.searchsorted(sorted_ids, ri.block_ids)
        pos_c = np.minimum(pos, len(sorted_ids) - 1)
        hit = sorted_ids[pos_c] == ri.block_ids
        src = order[pos_c[hit]]
        y, n = out.y.copy(), out.n.copy()
        base, idle = out.base_replication.copy(), out.idle_rounds.copy()
        hist = out.hot_history.copy()
        y[hit], n[hit] = self.y[src], self.n[src]
        base[hit], idle[hit] = self.base_replication[src], self.idle_rounds[src]
        hist[hit] = self.hot_history[src]
        return BlockState(block_ids=ri.block_ids, y=y, n=n, base_replication=base,
                          file_index=ri.file_index, idle_rounds=idle, round=self.round,
                          hot_history=hist)


@dataclass(frozen=True)
class Decision:
    """One round's per-block decisions, columnar.

    Replicate (CSR): block row ``replicate_block[k]`` gains the nodes
    ``replicate_nodes[replicate_indptr[k]:replicate_indptr[k+1]]``, in intended placement order.
    Dereplicate: block row ``dereplicate_block[k]`` loses its replica on ``dereplicate_node[k]``.
    A block appears at most once in each, never in both.
    Diagnostics: ``rf`` per block (DSBRA's RF_i; for baselines their own score, documented
    there), ``rule`` per block (RULE_* codes), ``gavg`` scalar, ``dn_avg`` per node (the heat
    used for placement/removal order).
    """

    policy: str
    replicate_block: np.ndarray
    replicate_indptr: np.ndarray
    replicate_nodes: np.ndarray
    dereplicate_block: np.ndarray
    dereplicate_node: np.ndarray
    rf: np.ndarray
    rule: np.ndarray
    gavg: float
    dn_avg: np.ndarray
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        for name, dt in (("replicate_block", np.int64), ("replicate_indptr", np.int64),
                         ("replicate_nodes", np.int32), ("dereplicate_block", np.int64),
                         ("dereplicate_node", np.int32), ("rule", np.int8),
                         ("rf", np.float64), ("dn_avg", np.float64)):
            object.__setattr__(self, name, _as(getattr(self, name), dt))
        object.__setattr__(self, "gavg", float(self.gavg))

    @classmethod
    def nothing(cls, policy: str, ri: RoundInput) -> Decision:
        """A round that changes nothing (the static policy)."""
        return cls(policy=policy, replicate_block=[], replicate_indptr=[0], replicate_nodes=[],
                   dereplicate_block=[], dereplicate_node=[], rf=np.zeros(len(ri)),
                   rule=np.zeros(len(ri), np.int8), gavg=0.0, dn_avg=np.zeros(ri.n_nodes))


@runtime_checkable
class Policy(Protocol):
    """A replication policy: pure, deterministic for a given (input, state)."""

    name: str

    def decide(self, round_input: RoundInput,
               state: BlockState | None) -> tuple[Decision, BlockState]:
        """One round. ``state`` may be None (first round) or cover other blocks (it is aligned
        to the round's rows). Returns the decision and the new state, aligned to the round."""
        ...
