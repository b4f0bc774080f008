"""What a run measured: the policy window's per-block signals, and the result tables/summary.

Window signals are derived as on the real cluster: N = map tasks that read the block (launched)
in the window, M = those delayed by delay scheduling, DT = their summed delay-scheduling wait
(each task's capped at D), plus non-node-local reads (DARE) and peak concurrent readers
(Scarlett).
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import numpy as np

from dsbra.results_schema import LOCALITY_NAMES, job_table, task_table, write_results
from dsbra.stats import precision_recall

LOCALITY_KEYS = ("node_local", "rack_local", "off_switch")  # locality 0, 1, 2


class Window:
    """Per-block counters since the previous policy round. The engine appends the id of every
    map it launches; the per-task arrays (block, locality, the scheduler's delay accounting,
    job) are read at the round."""

    def __init__(self, n_blocks: int, task_block: np.ndarray, task_locality: np.ndarray,
                 task_delayed: np.ndarray, task_delay: np.ndarray, task_job: np.ndarray):
        self.n_blocks = n_blocks
        self.task_block, self.task_locality, self.task_job = task_block, task_locality, task_job
        self.task_delayed, self.task_delay = task_delayed, task_delay
        self.readers = array("i", bytes(4 * n_blocks))
        self.peak = array("i", bytes(4 * n_blocks))
        self.tasks = array("q")

    def reading(self, block: int) -> None:
        r = self.readers[block] + 1
        self.readers[block] = r
        if r > self.peak[block]:
            self.peak[block] = r

    def done_reading(self, block: int) -> None:
        self.readers[block] -= 1

    def task_ids(self) -> np.ndarray:
        return np.array(self.tasks, dtype=np.int64)

    def drain(self, attributed: tuple[np.ndarray, np.ndarray] | None = None
              ) -> dict[str, np.ndarray]:
        """This window's per-block signals (length n_blocks); starts the next window.
        ``attributed``: (delayed, delay_s) per window task from another rule than the
        scheduler's own accounting (see :mod:`dsbra.sim.observed`)."""
        n = self.n_blocks
        ids = self.task_ids()
        blocks = self.task_block[ids]
        if attributed is None:
            delayed, delay = self.task_delayed[ids], self.task_delay[ids]
        else:
            delayed, delay = attributed
        out = {
            "tasks": np.bincount(blocks, minlength=n).astype(np.int32),
            "delayed_tasks": np.bincount(blocks, weights=delayed, minlength=n).astype(np.int32),
            "delay_s": np.bincount(blocks, weights=delay, minlength=n),
            "nonlocal_tasks": np.bincount(blocks, weights=self.task_locality[ids] != 0,
                                          minlength=n).astype(np.int32),
            "peak_readers": np.frombuffer(self.peak, np.int32).copy(),
            # the window's (job, block) reads: which blocks the same jobs read together
            "task_job": self.task_job[ids], "task_block": blocks,
        }
        del self.tasks[:]
        self.peak[:] = self.readers
        return out


def _bin_summary(mask_jobs, jobs, tasks_of_bin_mask, tasks) -> dict:
    jn = int(mask_jobs.sum())
    tn = int(tasks_of_bin_mask.sum())
    return {
        "jobs": jn,
        "tasks": tn,
        "node_locality": float((tasks["locality"][tasks_of_bin_mask] == 0).mean()) if tn else None,
        "mean_response_s": float(jobs["response_s"][mask_jobs].mean()) if jn else None,
        "mean_wait_s": float(tasks["wait_s"][tasks_of_bin_mask].mean()) if tn else None,
        "mean_delay_wait_s": (float(tasks["delay_wait_s"][tasks_of_bin_mask].mean())
                              if tn else None),
    }


def grant_counts(locality, grant) -> dict:
    """Maps by their locality and the level their container was granted at, and the off-node
    ones by cause: *handed on* (granted NODE_LOCAL, for another map's ask or one not yet
    withdrawn, and given to this map by the ApplicationMaster) and *delay expired* (granted
    RACK_LOCAL or OFF_SWITCH: the job's locality delay had run out). The one rule for real runs
    (benchmarks/container_grants.py) and simulated ones."""
    locality, grant = np.asarray(locality, np.int64), np.asarray(grant, np.int64)
    pairs = np.bincount(3 * locality + grant, minlength=9).reshape(3, 3).tolist()
    off = np.asarray(pairs[1:]).sum(axis=0).tolist()
    return {"by_locality_and_grant": {loc: dict(zip(LOCALITY_NAMES, row))
                                      for loc, row in zip(LOCALITY_KEYS, pairs)},
            "handed_on": off[0], "delay_expired": off[1] + off[2]}


def _agreement(raw) -> dict:
    """How the real-cluster attribution rule compares with the scheduler's own accounting."""
    obs, truth = raw.observed[0].astype(bool), raw.task_delayed.astype(bool)
    both, precision, recall = precision_recall(obs, truth)
    return {
        "delayed_both": both,
        "delayed_observed_only": int((obs & ~truth).sum()),
        "delayed_scheduler_only": int((~obs & truth).sum()),
        "precision": precision,
        "recall": recall,
        "delay_s_observed": float(raw.observed[1].sum()),
        "delay_s_scheduler": float(raw.task_delay.sum()),
    }


def build_tables(workload, raw, node_names) -> tuple[dict, dict]:
    """Column dicts for the job and task tables (see dsbra.results_schema)."""
    wl = workload
    maps = wl.maps
    task_job = np.repeat(np.arange(wl.n_jobs), maps)
    scheduled = raw.job_pending[task_job]
    wait = raw.task_launch - scheduled
    # the delay columns hold what the policy saw: the scheduler's accounting, or under
    # --signals observed the real-cluster rule (as the real-cluster benchmark records it)
    delayed, delay = raw.observed if raw.observed is not None else (raw.task_delayed,
                                                                     raw.task_delay)
    tasks = {
        "task_id": np.arange(wl.n_tasks, dtype=np.int64),
        "job_id": wl.job_ids[task_job],
        "block_id": wl.task_block,
        "node": np.asarray(node_names, dtype=object)[raw.task_node],
        "locality": raw.task_locality,
        "scheduled_s": scheduled,
        "launch_s": raw.task_launch,
        "finish_s": raw.task_finish,
        "wait_s": wait,
        "delay_wait_s": delay,
        "delayed": delayed,
        # not in the shared schema: the level the map's container was granted at
        "grant": raw.task_grant,
    }
    starts = wl.task_indptr[:-1]

    def per_job(values):
        return np.add.reduceat(values, starts) if wl.n_tasks else np.zeros(wl.n_jobs)

    loc = raw.task_locality
    jobs = {
        "job_id": wl.job_ids,
        "bin": wl.bins,
        "maps": maps,
        "submit_s": wl.submit_s,
        "start_s": raw.job_start,
        "finish_s": raw.job_finish,
        "response_s": raw.job_finish - wl.submit_s,
        "node_local_maps": per_job((loc == 0).astype(np.int64)).astype(np.int32),
        "rack_local_maps": per_job((loc == 1).astype(np.int64)).astype(np.int32),
        "off_switch_maps": per_job((loc == 2).astype(np.int64)).astype(np.int32),
        "mean_wait_s": per_job(wait) / maps,
        "delay_wait_s": per_job(delay),
    }
    return jobs, tasks


def summarize(workload, raw, jobs: dict, tasks: dict, config_dict: dict,
              policy_rounds: list) -> dict:
    """summary.json: headline numbers, per-bin numbers, storage, and the run's cost."""
    loc = tasks["locality"]
    n_tasks = len(loc)
    task_bin = np.repeat(jobs["bin"], jobs["maps"])
    extra = [r["extra_storage"] for r in policy_rounds]
    by_bin = {str(b): _bin_summary(jobs["bin"] == b, jobs, task_bin == b, tasks)
              for b in range(1, 10)}
    return {
        "workload": workload.name,
        "workload_notes": workload.notes,
        "config": config_dict,
        "jobs": int(workload.n_jobs),
        "tasks": int(n_tasks),
        "node_locality": float((loc == 0).mean()) if n_tasks else None,
        "rack_locality": float((loc == 1).mean()) if n_tasks else None,
        "off_switch": float((loc == 2).mean()) if n_tasks else None,
        "mean_response_s": float(jobs["response_s"].mean()),
        "median_response_s": float(np.median(jobs["response_s"])),
        "mean_wait_s": float(tasks["wait_s"].mean()) if n_tasks else None,
        "mean_delay_wait_s": float(tasks["delay_wait_s"].mean()) if n_tasks else None,
        "delayed_tasks": int(tasks["delayed"].sum()),
        "makespan_s": float(np.max(jobs["finish_s"])),
        "observed_vs_scheduler": _agreement(raw) if raw.observed is not None else None,
        "by_bin": by_bin,
        "signals": config_dict.get("signals", "scheduler"),
        "scheduler_delayed_tasks": int(raw.task_delayed.sum()),
        "scheduler_mean_delay_wait_s": float(raw.task_delay.mean()) if n_tasks else None,
        "extra_storage_mean": float(np.mean(extra)) if extra else 0.0,
        "extra_storage_max": float(np.max(extra)) if extra else 0.0,
        "policy_rounds": len(policy_rounds),
        "replicas_added": int(sum(r["copies_started"] for r in policy_rounds)),
        "replicas_removed": int(sum(r["removed"] for r in policy_rounds)),
        "raised_after_lowering": raised_after_lowering(policy_rounds),
        "binding": config_dict.get("binding", "task"),
        "container_grants": {**grant_counts(loc, raw.task_grant),
                             "containers_granted": int(raw.containers_granted),
                             "containers_released": int(raw.containers_granted - n_tasks)},
        "events": int(raw.events),
        "heartbeats": int(raw.heartbeats),
        "stale_reads": int(raw.stale_reads),
        "wall_s": float(raw.wall_s),
        "events_per_s": float(raw.events / raw.wall_s) if raw.wall_s > 0 else None,
    }


def raised_after_lowering(policy_rounds: list) -> int:
    """Copies started for a block that lost a replica in an earlier round (each lowering counted
    once): the policy taking back what it gave back, i.e. churn."""
    lowered: set[int] = set()
    again = 0
    for r in policy_rounds:
        for blk in r["raised_blocks"]:
            if blk in lowered:
                again += 1
                lowered.discard(blk)
        lowered.update(r["lowered_blocks"])
    return again


def write_run(out_dir: Path, jobs: dict, tasks: dict, summary: dict, policy_rounds: list) -> None:
    """DIR/jobs.parquet, DIR/tasks.parquet, DIR/rounds.parquet, DIR/summary.json."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir = Path(out_dir)
    write_results(out_dir, job_table(jobs), task_table(tasks))
    if policy_rounds:
        cols = {k: [r[k] for r in policy_rounds] for k in policy_rounds[0]}
        for k in ("raised_blocks", "lowered_blocks"):  # typed even when every list is empty
            cols[k] = pa.array(cols[k], pa.list_(pa.int64()))
        pq.write_table(pa.table(cols), out_dir / "rounds.parquet")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
