"""The per-job and per-task result tables, shared by the simulator and the real-cluster benchmark.

Both write the same Parquet schema so their outputs can be compared side by side with one
reader. Times are seconds since the start of the schedule (float64). Locality levels use
YARN's names (``NODE_LOCAL``, ``RACK_LOCAL``, ``OFF_SWITCH``), coded 0, 1, 2.

Job table (``jobs.parquet``): one row per job.
  job_id      the job's identifier in its schedule (e.g. ``job17``)
  bin         job-size bin 1..9 of workload.md's Table 3 (by the job's unscaled map count)
  maps        map tasks the job ran
  submit_s    submission time
  start_s     first map launch
  finish_s    last map finish
  response_s  finish_s - submit_s
  node_local_maps / rack_local_maps / off_switch_maps   counts by locality level
  mean_wait_s        mean over its maps of launch - scheduled
  delay_wait_s       summed delay-scheduling wait of its maps (each capped at D)

Task table (``tasks.parquet``): one row per map task.
  task_id, job_id, block_id, node (the NodeManager host that ran it)
  locality      0 NODE_LOCAL, 1 RACK_LOCAL, 2 OFF_SWITCH (as the MapReduce AM counts it:
                against the split hosts fixed at job submission)
  scheduled_s   when the task became pending (the job's submission: maps have no dependencies)
  launch_s      container launch
  finish_s      task finish
  wait_s        launch_s - scheduled_s
  delay_wait_s  the part of the wait spent skipped by delay scheduling, capped at D
  delayed       delay_wait_s > 0
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

LOCALITY_NAMES = ("NODE_LOCAL", "RACK_LOCAL", "OFF_SWITCH")

JOB_SCHEMA = pa.schema([
    ("job_id", pa.string()),
    ("bin", pa.int8()),
    ("maps", pa.int32()),
    ("submit_s", pa.float64()),
    ("start_s", pa.float64()),
    ("finish_s", pa.float64()),
    ("response_s", pa.float64()),
    ("node_local_maps", pa.int32()),
    ("rack_local_maps", pa.int32()),
    ("off_switch_maps", pa.int32()),
    ("mean_wait_s", pa.float64()),
    ("delay_wait_s", pa.float64()),
])

TASK_SCHEMA = pa.schema([
    ("task_id", pa.int64()),
    ("job_id", pa.string()),
    ("block_id", pa.int64()),
    ("node", pa.string()),
    ("locality", pa.int8()),
    ("scheduled_s", pa.float64()),
    ("launch_s", pa.float64()),
    ("finish_s", pa.float64()),
    ("wait_s", pa.float64()),
    ("delay_wait_s", pa.float64()),
    ("delayed", pa.bool_()),
])

# Job-size bins of the delay scheduling paper's Table 3: bin k holds jobs with
# BIN_LOWER[k-1] <= maps <= BIN_UPPER[k-1].
BIN_LOWER = np.array([1, 2, 3, 21, 61, 151, 301, 501, 1501])
BIN_UPPER = np.array([1, 2, 20, 60, 150, 300, 500, 1500, np.iinfo(np.int64).max])


def size_bin(maps) -> np.ndarray:
    """Table 3 bin (1..9) of each map count (a count below 1 falls in bin 1)."""
    m = np.maximum(np.asarray(maps, np.int64), 1)
    return (np.searchsorted(BIN_LOWER, m, side="right")).astype(np.int8)


def _table(columns: dict, schema: pa.Schema) -> pa.Table:
    missing = [f.name for f in schema if f.name not in columns]
    if missing:
        raise ValueError(f"missing result columns: {', '.join(missing)}")
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema],
                                schema=schema)


def job_table(columns: dict) -> pa.Table:
    return _table(columns, JOB_SCHEMA)


def task_table(columns: dict) -> pa.Table:
    return _table(columns, TASK_SCHEMA)


def write_results(out_dir: Path, jobs: pa.Table, tasks: pa.Table) -> None:
    """Write ``jobs.parquet`` and ``tasks.parquet`` into ``out_dir`` (created if needed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(jobs.cast(JOB_SCHEMA), out_dir / "jobs.parquet")
    pq.write_table(tasks.cast(TASK_SCHEMA), out_dir / "tasks.parquet")
