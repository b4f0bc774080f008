"""Calls the replication policy through :mod:`dsbra.policy.api`, exactly as the daemon does:
one columnar :class:`RoundInput` per interval, one :class:`Decision` back, applied to the
simulated HDFS (copies take time, removals are immediate, never below base replication). An
experiment's control group is held out by the daemon's rails (:func:`plan_files`)."""

from __future__ import annotations

import logging

import numpy as np

from dsbra.policy.api import FileTable, RoundInput, make_policy
from dsbra.policy.experiment import CONTROL, TREATMENT, Holdout
from dsbra.policy.rails import Rails, plan_files

MB = 1 << 20
log = logging.getLogger(__name__)


def policy_params(name: str, *, delay_threshold_s: float, max_replication: int,
                  block_bytes: int, seed: int, overrides: dict) -> dict:
    """The parameters each policy needs from the simulated cluster, user overrides on top."""
    base: dict = {}
    if name in ("dsbra", "dsbra-literal"):
        base = {"delay_threshold_s": delay_threshold_s, "max_replication": max_replication}
    elif name == "scarlett":
        base = {"max_replication": max_replication, "block_bytes": block_bytes}
    elif name == "dare":
        base = {"max_replication": max_replication, "seed": seed}
    return {**base, **overrides}


class PolicyDriver:
    """One policy, its state across rounds, and the simulated HDFS it acts on."""

    def __init__(self, name: str, params: dict, topology, dataset, replicas,
                 copy_mbps: float, holdout: Holdout | None = None):
        self.name = name
        #: the daemon's experiment: control-group files are never raised
        self.holdout = holdout or Holdout()
        #: file row -> (group, time of its first raise decision s, round), as the daemon records
        self.assignments: dict[int, tuple[str, float, int]] = {}
        self.groups: dict[str, str] = {}  #: path -> group, the same record by path
        self.rounds = 0
        self.policy = make_policy(name, **dict(params))
        self.state = None
        self.topo, self.dataset, self.replicas = topology, dataset, replicas
        self.copy_mbps = copy_mbps
        n = dataset.n_blocks
        self.block_ids = np.arange(n, dtype=np.int64)
        self.block_bytes = dataset.block_bytes.astype(np.int64)
        self.base_bytes = float((replicas.base.astype(np.int64) * self.block_bytes).sum())
        self.file_length = np.add.reduceat(self.block_bytes, dataset.file_first_block)
        self.file_base = np.maximum.reduceat(replicas.base, dataset.file_first_block)
        self._files = (-1, None)

    def files(self) -> FileTable:
        """The per-file table, rebuilt only when a replica changed since the last round (a
        reduceat over every block is most of a quiet round on a large data set)."""
        reps = self.replicas
        if self._files[0] != reps.version:
            ds = self.dataset
            current = np.maximum.reduceat(reps.count, ds.file_first_block)
            self._files = (reps.version, FileTable(
                paths=ds.file_paths, base_replication=self.file_base,
                current_replication=current, length_bytes=self.file_length,
                block_count=ds.file_blocks))
        return self._files[1]

    def round_input(self, signals: dict) -> RoundInput:
        indptr, nodes = self.replicas.csr()
        return RoundInput(block_ids=self.block_ids, file_index=self.dataset.block_file,
                          tasks=signals["tasks"], delayed_tasks=signals["delayed_tasks"],
                          delay_s=signals["delay_s"], nonlocal_tasks=signals["nonlocal_tasks"],
                          peak_readers=signals["peak_readers"], replica_indptr=indptr,
                          replica_nodes=nodes, base_replication=self.replicas.base,
                          node_names=self.topo.node_names, files=self.files())

    def _held_out(self, ri: RoundInput, decision, now: float) -> np.ndarray:
        """Per block to raise, whether the daemon's rails hold its file out (the range rail,
        then the holdout: dsbra.policy.rails.plan_files, uncapped here); files decided for the
        first time get their group (treatment for all without an experiment: the record of
        first decisions the estimator's check compares against, benchmarks/impact_bias.py)."""
        blocks = decision.replicate_block
        if not len(blocks):
            return np.zeros(0, bool)
        holdout = Holdout(self.holdout.fraction, self.holdout.seed, assigned=self.groups)
        plan = plan_files(ri, decision, Rails(max_replication=self.replicas.width), holdout)
        raising = np.flatnonzero(plan.would_target > plan.current)
        held_rows = set(plan.held_out().tolist())
        for k in raising.tolist():
            f = int(plan.file_index[k])
            if f not in self.assignments:
                group = CONTROL if k in held_rows else TREATMENT
                self.assignments[f] = (group, now, self.rounds)
                self.groups[str(plan.paths[k])] = group
        held_files = plan.file_index[plan.held_out()]
        return np.isin(self.dataset.block_file[blocks], held_files)

    def extra_storage(self) -> float:
        """Bytes stored above base replication, as a fraction of the base bytes."""
        stored = float((self.replicas.count.astype(np.int64) * self.block_bytes).sum())
        return (stored - self.base_bytes) / self.base_bytes if self.base_bytes else 0.0

    def round(self, now: float, window, in_flight: dict[int, int], attributed=None) -> dict:
        """Run one round and apply it. Returns the round's record, with ``copies``: a list of
        (block, node, seconds) the engine schedules; in-flight copies count toward a block's
        requested replicas, so a repeated request does not copy twice."""
        signals = window.drain(attributed)
        ri = self.round_input(signals)
        decision, self.state = self.policy.decide(ri, self.state)
        self.rounds += 1
        held = self._held_out(ri, decision, now)
        reps = self.replicas
        removed = 0
        for blk, node in zip(decision.dereplicate_block.tolist(),
                             decision.dereplicate_node.tolist()):
            removed += reps.remove(blk, node)  # refuses to go below base replication
        copies = []
        ip = decision.replicate_indptr
        targets = decision.replicate_nodes
        for k, blk in enumerate(decision.replicate_block.tolist()):
            if held[k]:
                continue
            wanted = targets[ip[k]:ip[k + 1]].tolist()
            room = reps.width - int(reps.count[blk]) - in_flight.get(blk, 0)
            fresh = max(0, len(wanted) - in_flight.get(blk, 0))
            seconds = float(self.block_bytes[blk]) / MB / self.copy_mbps
            for node in wanted[:min(fresh, room)]:
                if not reps.holds(blk, node):
                    copies.append((blk, node, seconds))
        record = {
            "time_s": now,
            "gavg": float(decision.gavg),
            "active_blocks": int((signals["tasks"] > 0).sum()),
            "window_tasks": int(signals["tasks"].sum()),
            "window_delayed": int(signals["delayed_tasks"].sum()),
            "window_delay_s": float(signals["delay_s"].sum()),
            "replicate_blocks": int(len(decision.replicate_block)),
            "held_out_blocks": int(held.sum()),
            "copies_started": len(copies),
            "removed": int(removed),
            "extra_storage": self.extra_storage(),
            "copies": copies,
        }
        if copies or removed:
            log.info("round at %.0fs: %s gavg=%.3f, %d copies started, %d replicas removed, "
                     "extra storage %.1f%%", now, self.name, decision.gavg, len(copies), removed,
                     100 * record["extra_storage"])
        return record
