"""The daemon's fast poll (issue 68, opt-in: ``demand.enabled``): act when demand arrives, not
a round after the maps have waited.

Every ``demand.poll_s`` inside a round's window, :class:`dsbra.observe.demand.DemandPoller`
reads the running jobs' pending maps (two ResourceManager requests; a job's task list only when
its asks changed), and the live-demand rule (:class:`dsbra.policy.demand.DemandPolicy`) judges
their blocks against what their holders serve within D. What it decides goes through the
round's own choreography (:func:`dsbra.policy.step.step`: the rails, the experiment's control
group, a pause) and apply path (:func:`dsbra.act.apply.apply_plan`: journaled before each
send, never below base), under the round's refusals (health, the cluster lock, dry run). HDFS
replicates files, so a block's raise is its file's (the rails fold blocks into files: a file
grows as much as its neediest block asks).

Who lowers what. The round and the fast poll must not undo each other: a file the fast poll
raised serves its maps node-local and without waiting, so the round's history sees it cool and
would drop the copy at once; and the rule would take a file the round raised back to base once
no map waits for it. The journal settles it, since it records the rule of every change HDFS
took (:meth:`dsbra.act.journal.Journal.demand_held`):

- a file whose last change was the fast poll's (rule ``demand`` or ``demand-gone``) is the fast
  poll's to hold, from the replication its first raise started at (the hold's floor);
- the round never lowers a held file (``keep`` in :func:`dsbra.policy.step.step`), and may
  raise it further, which hands the file back to the round;
- the fast poll lowers only the files it holds, one replica a poll once no map has waited for
  any of their blocks for ``idle_polls`` polls, and never below the floor: a file the round
  raised to 3 and the fast poll to 5 goes back to 3, the round's again;
- the per-round caps are shared: the fast polls' changes count against the round's (and the
  round gets what they left); the storage budget counts every file above base;
- in a switchback's off period the fast poll decides nothing (the round takes every raised file
  back to base, held ones too); with the fast poll turned off the round takes its files over.

The rule's idle counts live in memory: after a restart a held file waits ``idle_polls`` polls
again (longer, never shorter).

Requests: a file is read (GETFILESTATUS and GET_BLOCK_LOCATIONS) only when a pending map wants
it or the fast poll holds it, and the read is kept until the journal records a change to the
file (:class:`FastPollMemory`); each round's own reads of the kept files replace them, free.
The NameNode's health (JMX) is read only by a poll that has a change to make.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from dsbra.daemon.round import block_numbers
from dsbra.observe.demand import DemandPoll
from dsbra.observe.window import file_blocks, read_files
from dsbra.policy.api import BlockState, FileTable, LiveDemand, RoundInput
from dsbra.policy.demand import DemandPolicy, due_within_delay, servable_within_delay
from dsbra.policy.rails import ControlGroup, Rails
from dsbra.policy.step import Step, step

#: the last fast-poll decisions the status keeps
RECENT_DECISIONS = 20


@dataclass(frozen=True)
class FileRead:
    """A file as last read: its blocks (start, end, HDFS id), each block's holders (a CSR of
    names), its replication and length, and the journal's count of records about it then
    (``version``: the read holds until that changes)."""

    replication: int
    length: int
    starts: np.ndarray
    ends: np.ndarray
    block_ids: np.ndarray
    holder_counts: np.ndarray
    holder_names: np.ndarray
    version: int

    @classmethod
    def of(cls, reply: dict, version: int) -> FileRead:
        """From :func:`dsbra.observe.window.read_files`' reply for the file."""
        fb = file_blocks(reply["located"], int(reply["replication"] or 0))
        return cls(max(int(fb.replication), 1), int(reply["located"].get("fileLength") or 0),
                   fb.starts, fb.ends, block_numbers(fb.block_ids),
                   np.array([len(h) for h in fb.hosts], np.int64),
                   np.array([h for hosts in fb.hosts for h in hosts], str), version)


@dataclass
class FastPollMemory:
    """What the fast poll keeps between polls: its file reads, the rule's per-block state (its
    idle counts), and per file the last change it logged this round (a would-be change repeated
    poll after poll is logged and counted once a round)."""

    reads: dict[str, FileRead] = field(default_factory=dict)
    state: BlockState | None = None
    shown: dict[str, tuple] = field(default_factory=dict)

    def read(self, ep, paths, touched: dict[str, int]) -> dict[str, FileRead]:
        """``paths``' reads: kept ones unless the journal changed the file since (``touched``:
        :attr:`dsbra.act.journal.Journal.touched`), the others read now (a file that cannot be
        read is left out)."""
        stale = [p for p in paths
                 if p not in self.reads or self.reads[p].version != touched.get(p, 0)]
        for path, reply in read_files(ep, stale).items():
            if reply is None:
                self.reads.pop(path, None)
            else:
                self.reads[path] = FileRead.of(reply, touched.get(path, 0))
        return {p: self.reads[p] for p in paths if p in self.reads}

    def refresh(self, files: dict[str, dict | None], touched: dict[str, int]) -> None:
        """At a round's end: the kept files the round read, as it read them; the others
        forgotten (read again when a pending map wants them)."""
        self.reads = {p: FileRead.of(files[p], touched.get(p, 0)) for p in self.reads
                      if files.get(p)}
        self.shown.clear()


def demand_input(poll: DemandPoll, reads: dict[str, FileRead],
                 base: dict[str, int]) -> RoundInput:
    """The rule's input: every block of the files in ``reads`` (their holders as HDFS reports
    them now, not the splits' hosts of the job's submission), the poll's pending maps on the
    blocks they want (a map whose file was not read is left out), and each file's base
    replication (``base``; else its replication now). Nodes: the poll's hosts, then the holders
    the ResourceManager does not list (they run no container)."""
    paths = sorted(reads)
    files = [reads[p] for p in paths]
    counts = np.array([len(r.starts) for r in files], np.int64)
    file_index = np.repeat(np.arange(len(paths)), counts)
    first_row = np.cumsum(counts) - counts
    holders = (np.concatenate([r.holder_names for r in files]) if files
               else np.zeros(0, str))
    hosts = np.array(poll.hosts, str)
    names = np.concatenate((hosts, np.setdiff1d(holders, hosts))).astype(object)
    order = np.argsort(names.astype(str), kind="stable")
    replica_nodes = order[np.searchsorted(names[order].astype(str), holders)]
    # each pending block (path, start) to the row of the block holding its start
    row_of = np.full(len(poll.blocks), -1, np.int64)
    wanted: dict[str, list[int]] = {}
    for i, (path, _) in enumerate(poll.blocks):
        wanted.setdefault(path, []).append(i)
    position = {p: k for k, p in enumerate(paths)}
    for path, idx in wanted.items():
        if path not in position:
            continue
        r, idx = files[position[path]], np.array(idx)
        starts = np.array([poll.blocks[i][1] for i in idx], np.int64)
        at = np.searchsorted(r.starts, starts, side="right") - 1
        inside = (at >= 0) & (starts < r.ends[np.maximum(at, 0)])
        row_of[idx[inside]] = first_row[position[path]] + at[inside]
    d = poll.demand
    n_jobs = len(d.job_indptr) - 1
    job_of = np.repeat(np.arange(n_jobs), np.diff(d.job_indptr))
    rows = row_of[d.job_blocks]
    mapped = rows >= 0
    pad = len(names) - len(d.free_containers)
    demand = LiveDemand(
        job_indptr=np.concatenate(([0], np.cumsum(np.bincount(job_of[mapped], minlength=n_jobs)))),
        job_blocks=rows[mapped], job_running=d.job_running,
        free_containers=np.pad(d.free_containers, (0, pad)),
        running_maps=np.pad(d.running_maps, (0, pad)), mean_map_s=d.mean_map_s)
    fbase = np.array([base.get(p, r.replication) for p, r in zip(paths, files)], np.int64)
    table = FileTable(paths=np.array(paths, object), base_replication=fbase,
                      current_replication=[r.replication for r in files],
                      length_bytes=[r.length for r in files], block_count=counts)
    zeros = np.zeros(len(file_index), np.int32)
    ids = np.concatenate([r.block_ids for r in files]) if files else np.zeros(0, np.int64)
    return RoundInput(block_ids=ids, file_index=file_index, tasks=zeros, delayed_tasks=zeros,
                      delay_s=np.zeros(len(file_index)), nonlocal_tasks=zeros,
                      peak_readers=zeros,
                      replica_indptr=np.concatenate(([0], np.cumsum(
                          np.concatenate([r.holder_counts for r in files]) if files
                          else np.zeros(0, np.int64)))),
                      replica_nodes=replica_nodes, base_replication=fbase[file_index],
                      node_names=names, files=table, demand=demand)


@dataclass
class FastStep:
    """One fast poll's decision: the step (plan, new state), and per plan row the due maps of
    its driving block (the one with the largest shortfall) and what its holders serve of them
    within D."""

    ri: RoundInput
    done: Step
    due: np.ndarray
    servable: np.ndarray


def decide_demand(ri: RoundInput, state: BlockState | None, policy: DemandPolicy, rails: Rails,
                  held: dict[str, int], *, control_group: ControlGroup | None = None,
                  paused: bool = False) -> FastStep:
    """The live-demand rule on ``ri`` through :func:`dsbra.policy.step.step`, lowering only the
    files in ``held`` (the fast poll's, :meth:`dsbra.act.journal.Journal.demand_held`; ``ri``'s
    base for them is their floor). ``state``: the rule's state of the last poll (its idle
    counts), re-based on ``ri``'s."""
    if state is not None:
        state = dataclasses.replace(state.aligned_to(ri), base_replication=ri.base_replication)
    keep = ~np.isin(ri.files.paths.astype(str), np.array(list(held), str))
    done = step(policy, ri, state, rails.within(policy.max_replication),
                control_group=control_group, paused=paused, keep=keep)
    short = done.decided.rf
    due = due_within_delay(ri.demand, servable_within_delay(ri.demand, policy.delay_threshold_s),
                           len(ri))
    by_file = np.lexsort((-short, ri.file_index))  # each file's neediest block first
    drive = by_file[np.searchsorted(ri.file_index[by_file], done.plan.file_index)]
    return FastStep(ri, done, due[drive], np.maximum(due[drive] - short[drive], 0.0))
