"""Window signals as the daemon derives them on a real cluster, from the simulated run.

The daemon cannot see the scheduler's skips; it infers them from task times and container
occupancy with :func:`dsbra.signals.attribution.attribute`. Under ``--signals observed`` the
simulator feeds that same function the simulated maps (scheduled = when the job's maps became
pending, launch, node, split hosts as of submission) and containers (every map one slot, every
ApplicationMaster its share of one, in thousandths of a slot), exactly as observed at the
round's time (running containers end "now"), each labelled with its job when the scheduler
shares fairly (the rule's "passed over" test assumes fair-share order; under FIFO only idle
nodes count), so the policy sees what it would see on a real cluster — and the run also measures how close that rule comes to
the scheduler's own accounting.
"""

from __future__ import annotations

import numpy as np

from dsbra.signals.attribution import AttributionParams, Containers, MapTasks, attribute


def _ms(seconds) -> np.ndarray:
    return np.round(np.asarray(seconds, np.float64) * 1000.0).astype(np.int64)


class Observer:
    """Attributes each window's maps with the real-cluster rule; keeps the per-task result."""

    def __init__(self, cfg, workload, t_launch, t_finish, t_node, launched, job_pending, ams):
        """The engine's live arrays; ``ams``: (AM start, AM node, job finish, slot units, AM
        units) per job, AM units 0 without AMs."""
        self.params = AttributionParams(delay_threshold_s=cfg.effective_delay_threshold_s,
                                        grace_s=cfg.observed_grace_s,
                                        settle_s=cfg.observed_settle_s,
                                        passed_over=cfg.scheduler != "capacity")
        self.per_app = cfg.scheduler in ("fair", "capacity")  # delay is per application on YARN
        self.launch = np.frombuffer(t_launch, np.float64)
        self.finish = np.frombuffer(t_finish, np.float64)
        self.node = np.frombuffer(t_node, np.int32)
        self.launched = np.frombuffer(launched, np.uint8)
        self.task_job = np.repeat(np.arange(workload.n_jobs), workload.maps)
        self.first_task = workload.task_indptr[:-1]
        self.pending = np.frombuffer(job_pending, np.float64)
        am_start, am_node, job_finish, self.slot, self.am_units = ams
        self.am_start = np.frombuffer(am_start, np.float64)
        self.am_node = np.frombuffer(am_node, np.int32)
        self.job_finish = np.frombuffer(job_finish, np.float64)
        self.capacity = np.full(cfg.nodes, cfg.slots_per_node * self.slot, np.int64)
        self.delayed = np.zeros(workload.n_tasks, bool)
        self.delay = np.zeros(workload.n_tasks)

    def attribute(self, now: float, ids: np.ndarray, job_split: list
                  ) -> tuple[np.ndarray, np.ndarray]:
        """(delayed as 0/1 floats, delay seconds) for the window's maps ``ids``."""
        if len(ids) == 0:
            return np.zeros(0), np.zeros(0)
        scheduled = self.pending[self.task_job[ids]]
        t_lo = float(scheduled.min())
        seen = np.flatnonzero(self.launched)
        fin = self.finish[seen]
        live = seen[(fin == 0.0) | (fin > t_lo)]
        end = np.where(self.finish[live] == 0.0, now, self.finish[live])
        node, start, app = self.node[live], self.launch[live], self.task_job[live]
        mem = np.full(len(live), self.slot, np.int64)
        if self.am_units:  # the AMs' containers hold their nodes too
            fin = self.job_finish
            ams = np.flatnonzero((self.am_start >= 0) & ((fin < 0) | (fin > t_lo)))
            node = np.concatenate((node, self.am_node[ams]))
            start = np.concatenate((start, self.am_start[ams]))
            end = np.concatenate((end, np.where(fin[ams] < 0, now, fin[ams])))
            app = np.concatenate((app, ams))
            mem = np.concatenate((mem, np.full(len(ams), self.am_units, np.int64)))
        containers = Containers(node=node, start_ms=_ms(start), end_ms=_ms(end), mem_mb=mem,
                                app=app.astype(np.int32) if self.per_app else None)
        rows = []
        for t in ids.tolist():
            j = int(self.task_job[t])
            holders, counts = job_split[j]
            k = t - int(self.first_task[j])
            rows.append(holders[k, :counts[k]])
        lengths = np.array([len(r) for r in rows], np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        tasks = MapTasks(scheduled_ms=_ms(scheduled), launch_ms=_ms(self.launch[ids]),
                         node=self.node[ids].astype(np.int32),
                         mem_mb=np.full(len(ids), self.slot, np.int64), split_indptr=indptr,
                         split_nodes=np.concatenate(rows).astype(np.int32),
                         app=self.task_job[ids].astype(np.int32) if self.per_app else None)
        delay_s, delayed, *_ = attribute(tasks, containers, self.capacity, self.params,
                                         end_ms=int(_ms(now)))
        self.delayed[ids] = delayed
        self.delay[ids] = delay_s
        return delayed.astype(np.float64), delay_s

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return self.delayed.copy(), self.delay.copy()
