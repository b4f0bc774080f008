"""Calls the replication policy through :mod:`dsbra.policy.api`, exactly as the daemon does:
one columnar :class:`RoundInput` per interval, one :class:`Decision` back, applied to the
simulated HDFS (copies take time, removals are immediate, never below base replication). A
round is the daemon's own choreography (:func:`dsbra.policy.step.step`): a switchback's off
period, a pause and the experiment's control group held out by the rails, as the daemon has them.

Placement ``heat`` applies the policy's nodes, as a NameNode with the placement plugin does;
``default`` keeps only how many replicas each block gains or loses and lets the stock
NameNode's BlockPlacementPolicyDefault pick the nodes (:mod:`dsbra.sim.replicas`)."""

from __future__ import annotations

import logging

import numpy as np

from dsbra.experiment.design import CONTROL, OFF, ON, TREATMENT, Holdout, Switchback
from dsbra.experiment.switchback import judge_finished_jobs
from dsbra.policy.api import FileTable, LiveDemand, RoundInput
from dsbra.policy.demand import DemandPolicy
from dsbra.policy.placement import csr_positions
from dsbra.policy.rails import Rails
from dsbra.policy.registry import make_policy
from dsbra.policy.step import PAUSED, SWITCHED_OFF, Step, step
from dsbra.sim.replicas import default_add_targets, default_drop_nodes

MB = 1 << 20
log = logging.getLogger(__name__)


def policy_params(name: str, *, delay_threshold_s: float, max_replication: int,
                  block_bytes: int, seed: int, overrides: dict) -> dict:
    """The parameters each policy needs from the simulated cluster, user overrides on top."""
    base: dict = {}
    if name in ("dsbra", "dsbra-literal", "dsbra-demand"):
        base = {"delay_threshold_s": delay_threshold_s, "max_replication": max_replication}
    elif name == "scarlett":
        base = {"max_replication": max_replication, "block_bytes": block_bytes}
    elif name == "dare":
        base = {"max_replication": max_replication, "seed": seed}
    return {**base, **overrides}


def window_jobs(task_job: np.ndarray, task_block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The window's jobs as CSR over the block rows their maps read, each block once a job."""
    pairs = np.unique(np.stack((task_job, task_block), axis=1).astype(np.int64), axis=0)
    _, starts = np.unique(pairs[:, 0], return_index=True)
    return np.append(starts, len(pairs)).astype(np.int64), pairs[:, 1]


class PolicyDriver:
    """One policy, its state across rounds, and the simulated HDFS it acts on."""

    def __init__(self, name: str, params: dict, topology, dataset, replicas,
                 copy_mbps: float, holdout: Holdout | None = None, placement: str = "heat",
                 rng: np.random.Generator | None = None, switchback: Switchback | None = None):
        self.name = name
        #: "heat": the policy's nodes; "default": the NameNode's own, drawn from ``rng``
        self.placement, self.rng = placement, rng
        #: per round, each node's share of the window's block reads: a map reading a block
        #: counts 1 / its replicas on each holder (the load reads spread over replicas put there)
        self.node_reads: list[np.ndarray] = []
        #: copies started to each node over the run (where the new replicas went)
        self.copies_received = np.zeros(topology.nodes, np.int64)
        #: the daemon's experiment: control-group files are never raised
        self.holdout = holdout or Holdout()
        #: the daemon's switchback: in its off periods no copy starts and every block above
        #: base goes back to base (simulated seconds from 0)
        self.switchback = switchback
        #: the do-no-harm guard's margin (None: no guard), the jobs' submit times it reads with
        #: their finish times so far, and when it stopped the policy (None: it did not)
        self.guard_margin: float | None = None
        self.job_submit_s: np.ndarray | None = None
        self.paused_at: float | None = None
        self._last_period: int | None = None
        #: file row -> (group, time of its first raise decision s, round), as the daemon records
        self.assignments: dict[int, tuple[str, float, int]] = {}
        self.groups: dict[str, str] = {}  #: path -> group, the same record by path
        self.rounds = 0
        self.policy = make_policy(name, **dict(params))
        #: whether the policy reads the window's jobs (DSBRA's co-read options)
        self.reads_jobs = getattr(getattr(self.policy, "params", None), "reads_jobs", False)
        #: whether the policy acts on the live demand of each (fast) poll
        self.reads_demand = isinstance(self.policy, DemandPolicy)
        self.state = None
        self.topo, self.dataset, self.replicas = topology, dataset, replicas
        self.copy_mbps = copy_mbps
        #: the daemon's rails as the simulator has them: no caps, the replica matrix's width
        self.rails = Rails(max_replication=replicas.width)
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

    def round_input(self, signals: dict, demand: LiveDemand | None = None) -> RoundInput:
        indptr, nodes = self.replicas.csr()
        job_indptr = job_blocks = None
        if self.reads_jobs:
            job_indptr, job_blocks = window_jobs(signals["task_job"], signals["task_block"])
        return RoundInput(block_ids=self.block_ids, file_index=self.dataset.block_file,
                          tasks=signals["tasks"], delayed_tasks=signals["delayed_tasks"],
                          delay_s=signals["delay_s"], nonlocal_tasks=signals["nonlocal_tasks"],
                          peak_readers=signals["peak_readers"], replica_indptr=indptr,
                          replica_nodes=nodes, base_replication=self.replicas.base,
                          node_names=self.topo.node_names, files=self.files(),
                          node_racks=self.topo.rack_of, job_indptr=job_indptr,
                          job_blocks=job_blocks, demand=demand)

    def _held_out(self, done: Step, now: float) -> np.ndarray:
        """Per block to raise, whether the rails held its file out (the range rail, then the
        holdout; uncapped here); files decided for the first time get their group (treatment
        for all without an experiment: the record of first decisions the estimator's check
        compares against, benchmarks/impact_bias.py)."""
        blocks, plan = done.decided.replicate_block, done.plan
        if not len(blocks):
            return np.zeros(0, bool)
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

    def _node_reads(self, ri: RoundInput) -> np.ndarray:
        """The window's block reads per node, each split evenly over its block's holders:
        how placement spreads the read load, whatever the scheduler did with it."""
        read = np.flatnonzero(ri.tasks)
        pos, held_by = csr_positions(ri.replica_indptr, read)
        share = np.repeat(ri.tasks[read] / held_by, held_by)
        return np.bincount(ri.replica_nodes[pos], weights=share, minlength=ri.n_nodes)

    def _drop_nodes(self, decision) -> np.ndarray:
        """The node each lowered block loses: the policy's, or the default policy's pick."""
        blocks = decision.dereplicate_block
        if self.placement == "heat" or not len(blocks):
            return decision.dereplicate_node
        reps = self.replicas
        _, nodes = reps.csr()
        stored = np.bincount(nodes, weights=np.repeat(self.block_bytes, reps.count),
                             minlength=self.topo.nodes)
        return default_drop_nodes(reps.nodes[blocks], reps.count[blocks], self.topo.rack_of,
                                  stored, self.rng)

    def _copies(self, decision, held: np.ndarray, in_flight: dict[int, list[int]]) -> list:
        """(block, node, seconds) of the copies to start: per raised block not held out, as
        many as it asks for beyond its copies in flight, within max replication; on the
        policy's nodes, or where the default policy puts them."""
        reps = self.replicas
        keep = ~held
        blocks = decision.replicate_block[keep]
        asked = np.diff(decision.replicate_indptr)[keep]
        flying = [in_flight.get(blk, ()) for blk in blocks.tolist()]
        n_flying = np.array([len(f) for f in flying], np.int64)
        room = np.maximum(reps.width - reps.count[blocks] - n_flying, 0)
        n_new = np.minimum(np.maximum(asked - n_flying, 0), room)
        if self.placement == "heat":
            starts, targets = decision.replicate_indptr[:-1][keep], decision.replicate_nodes
        else:
            busy = (np.repeat(np.arange(len(blocks)), n_flying),
                    np.array([n for f in flying for n in f], np.int64))
            indptr, targets = default_add_targets(reps.nodes[blocks], reps.count[blocks], n_new,
                                                  busy, self.topo.rack_of, self.rng)
            starts = indptr[:-1]
        copies = []
        for blk, start, n in zip(blocks.tolist(), starts.tolist(), n_new.tolist()):
            seconds = float(self.block_bytes[blk]) / MB / self.copy_mbps
            for node in targets[start:start + n].tolist():
                if not reps.holds(blk, node):
                    copies.append((blk, node, seconds))
        return copies

    def _lower_to_base(self, plan) -> list[int]:
        """Every block of the files ``plan`` lowers (an off period's: those above base) back
        to base, dropping the replicas added last (the policy's copies); one entry per
        replica removed."""
        reps, lowered = self.replicas, []
        files = plan.file_index[plan.target < plan.current]
        above = (reps.count > reps.base) & np.isin(self.dataset.block_file, files)
        for blk in np.flatnonzero(above).tolist():
            for node in reps.holders(blk)[int(reps.base[blk]):][::-1].tolist():
                if reps.remove(blk, node):
                    lowered.append(blk)
        return lowered

    def extra_storage(self) -> float:
        """Bytes stored above base replication, as a fraction of the base bytes."""
        stored = float((self.replicas.count.astype(np.int64) * self.block_bytes).sum())
        return (stored - self.base_bytes) / self.base_bytes if self.base_bytes else 0.0

    def _guard(self, now: float, job_finish, map_times) -> None:
        """At the end of each block: the guard's verdict on the jobs finished so far and the maps
        launched so far (``map_times``: the engine's launch and finish times and launched
        flags), as the daemon reads its records (dsbra.experiment.switchback); a firing guard stops the
        policy for good."""
        sb = self.switchback
        period = int(sb.period(int(round(now * 1000))))
        if (self.guard_margin is None or self.paused_at is not None or period == self._last_period
                or period % 2):  # judged when a block ends, as the daemon does
            return
        self._last_period = period
        t_launch, t_finish, launched = (np.frombuffer(a, dtype) for a, dtype in
                                        zip(map_times, (np.float64, np.float64, np.uint8)))
        started = launched.astype(bool)
        reason = judge_finished_jobs(sb, self.job_submit_s, np.frombuffer(job_finish, np.float64),
                                     now, self.guard_margin,
                                     map_launch_s=np.where(started, t_launch, -1.0),
                                     map_finish_s=np.where(started & (t_finish > 0), t_finish, -1.0))
        if reason is not None:
            self.paused_at = now
            log.info("guard at %.0fs: %s; the policy stops", now, reason)

    def round(self, now: float, window, in_flight: dict[int, list[int]],
              attributed=None, job_finish=None, map_times=None,
              demand: LiveDemand | None = None) -> dict:
        """Run one round and apply it. Returns the round's record, with ``copies``: a list of
        (block, node, seconds) the engine schedules; ``in_flight``: block -> target nodes of
        its copies under way, which count toward its requested replicas, so a repeated request
        does not copy twice. ``job_finish``, ``map_times``: the engine's job finish times and its
        maps' launch and finish times and launched flags, which the guard reads. ``demand``:
        the live demand at this poll, for a policy that reads it."""
        signals = window.drain(attributed)
        ri = self.round_input(signals, demand)
        self.node_reads.append(self._node_reads(ri))
        sb = self.switchback
        arm = ON if sb is None else sb.arm_at(int(round(now * 1000)))
        if sb is not None and job_finish is not None:
            self._guard(now, job_finish, map_times)
        control = Holdout(self.holdout.fraction, self.holdout.seed, assigned=self.groups)
        done = step(self.policy, ri, self.state, self.rails,
                    control_group=control, off=arm == OFF, paused=self.paused_at is not None)
        self.state, decision = done.state, done.decided
        self.rounds += 1
        reps = self.replicas
        if done.mode == PAUSED:  # as `dsbra pause`: nothing raised, nothing lowered
            held = np.ones(len(decision.replicate_block), bool)
            lowered, copies = [], []
        elif done.mode == SWITCHED_OFF:  # the policy learns; its raises wait for an on period
            held = np.ones(len(decision.replicate_block), bool)
            lowered = self._lower_to_base(done.plan)
            copies = []
        else:
            held = self._held_out(done, now)
            lowered = [blk for blk, node in zip(decision.dereplicate_block.tolist(),
                                                self._drop_nodes(decision).tolist())
                       if reps.remove(blk, node)]  # refuses to go below base replication
            copies = self._copies(decision, held, in_flight)
        np.add.at(self.copies_received, [node for _, node, _ in copies], 1)
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
            "removed": len(lowered),
            "raised_blocks": sorted({blk for blk, _, _ in copies}),
            "lowered_blocks": lowered,
            "extra_storage": self.extra_storage(),
            "copies": copies,
        }
        if self.switchback is not None:
            record["arm"] = arm
            record["paused"] = self.paused_at is not None
        if copies or lowered:
            log.info("round at %.0fs: %s gavg=%.3f, %d copies started, %d replicas removed, "
                     "extra storage %.1f%%", now, self.name, decision.gavg, len(copies), len(lowered),
                     100 * record["extra_storage"])
        return record
