"""The observed map and job records of every round, kept as Parquet for ``dsbra impact``.

The job history server forgets jobs after its retention (a week by default); the daemon keeps
what it observed, so the experiment can be judged on a live deployment for as long as the
operator wants. One file per round with maps, ``maps/<UTC day>/<window end ms>.parquet``,
written atomically (temporary file, then rename). Retention, applied after every write: files
whose window ended more than ``max_age_s`` ago go first, then the oldest until the total is
within ``max_bytes``. A map record is about 60 bytes compressed, so the default 1 GiB holds
some 15 million maps: a month of a busy cluster's maps reading hot files. Finished jobs go
to ``jobs/`` the same way (a switchback compares their response per period). With a
switchback, each map and job carries its period (of its launch, of its submission).
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

log = logging.getLogger(__name__)

MAPS_DIR = "maps"
JOBS_DIR = "jobs"

MAP_RECORD_SCHEMA = pa.schema([
    pa.field("window_end_ms", pa.int64(), nullable=False),  # the round that counted the map
    pa.field("job_id", pa.string(), nullable=False),
    pa.field("attempt_id", pa.string(), nullable=False),
    pa.field("file", pa.string()),  # null: the task's split could not be read
    pa.field("block_id", pa.int64()),  # HDFS block id; null: not mapped to a block
    pa.field("node", pa.string(), nullable=False),
    pa.field("scheduler_locality", pa.string()),  # NODE_LOCAL, RACK_LOCAL, OFF_SWITCH, null
    pa.field("split_local", pa.bool_(), nullable=False),  # on a host of its split (as the job asked)
    # on a node holding a replica of its block when the round read the NameNode (as the data
    # was read; a replica added between the map's launch and the round's end counts too);
    # null: not mapped to a block
    pa.field("replica_local", pa.bool_()),
    pa.field("delayed", pa.bool_(), nullable=False),  # waited for locality (attribution rule)
    pa.field("delay_wait_s", pa.float64(), nullable=False),
    pa.field("scheduled_ms", pa.int64(), nullable=False),
    pa.field("launch_ms", pa.int64(), nullable=False),
    pa.field("finish_ms", pa.int64()),  # null: still running at the window's end
    pa.field("period", pa.int64()),  # the switchback's period of launch_ms; null: no switchback
])

JOB_RECORD_SCHEMA = pa.schema([
    pa.field("window_end_ms", pa.int64(), nullable=False),  # the round that counted the job
    pa.field("job_id", pa.string(), nullable=False),
    pa.field("submit_ms", pa.int64(), nullable=False),  # the RM's startedTime
    pa.field("finish_ms", pa.int64(), nullable=False),  # the RM's finishedTime
    pa.field("maps", pa.int64(), nullable=False),
    pa.field("period", pa.int64()),  # the switchback's period of submit_ms; null: no switchback
])


def _periods(switchback, times_ms: list[int]) -> list[int | None]:
    if switchback is None:
        return [None] * len(times_ms)
    return [int(p) for p in switchback.period(times_ms)] if times_ms else []


def job_records(jobs: list[dict], window_end_ms: int, switchback=None) -> pa.Table:
    """One row per finished job (dsbra.observe.collector's take_jobs)."""
    return pa.table({
        "window_end_ms": [window_end_ms] * len(jobs),
        "job_id": [j["job_id"] for j in jobs],
        "submit_ms": [j["submit_ms"] for j in jobs],
        "finish_ms": [j["finish_ms"] for j in jobs],
        "maps": [j["maps"] for j in jobs],
        "period": _periods(switchback, [j["submit_ms"] for j in jobs]),
    }, schema=JOB_RECORD_SCHEMA)


def map_records(obs, task_rows: list[dict], window_end_ms: int, switchback=None) -> pa.Table:
    """One row per observed map: ``obs`` (MapObservation) and ``build_window(detail=True)``'s
    per-task rows, in the same order; ``switchback``: the experiment whose period each map
    launched in."""
    if len(obs) != len(task_rows):
        raise ValueError(f"{len(obs)} observations but {len(task_rows)} task rows")

    def block_number(name):
        return int(name[4:]) if isinstance(name, str) and name.startswith("blk_") else None

    cols = {
        "window_end_ms": [window_end_ms] * len(obs),
        "job_id": [o.job_id for o in obs],
        "attempt_id": [o.attempt_id for o in obs],
        "file": [o.path for o in obs],
        "block_id": [block_number(r.get("block_id")) for r in task_rows],
        "node": [o.node for o in obs],
        "scheduler_locality": [o.locality for o in obs],
        "split_local": [bool(r["local"]) for r in task_rows],
        "replica_local": [r.get("replica_local") for r in task_rows],
        "delayed": [bool(r["delayed"]) for r in task_rows],
        "delay_wait_s": [float(r["delay_s"]) for r in task_rows],
        "scheduled_ms": [o.scheduled_ms for o in obs],
        "launch_ms": [o.launch_ms for o in obs],
        "finish_ms": [o.finish_ms for o in obs],
        "period": _periods(switchback, [o.launch_ms for o in obs]),
    }
    return pa.table(cols, schema=MAP_RECORD_SCHEMA)


@dataclass
class RecordStore:
    """One round's records per Parquet file under ``root``, with the retention."""

    root: Path  #: the state directory's maps/ or jobs/
    max_age_s: float
    max_bytes: int

    def write(self, table: pa.Table, window_end_ms: int) -> Path | None:
        """Keep one round's records (nothing for a round without maps), then prune."""
        if not table.num_rows:
            return None
        day = datetime.fromtimestamp(window_end_ms / 1000, timezone.utc).strftime("%Y-%m-%d")
        dest = self.root / day / f"{window_end_ms}.parquet"
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".maps.", suffix=".parquet", dir=dest.parent)
        os.close(fd)
        try:
            pq.write_table(table, tmp)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.prune(window_end_ms)
        return dest

    def files(self) -> list[tuple[int, Path]]:
        """(window end ms, path) of every kept round, oldest first."""
        out = []
        for p in self.root.glob("*/*.parquet"):
            if p.stem.isdigit():
                out.append((int(p.stem), p))
        return sorted(out)

    def prune(self, now_ms: int | None = None) -> int:
        """Apply the retention; the number of files removed."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        kept = self.files()
        sizes = {p: p.stat().st_size for _, p in kept}
        total = sum(sizes.values())
        removed = 0
        for end_ms, p in kept:
            if now_ms - end_ms <= self.max_age_s * 1000 and total <= self.max_bytes:
                break  # oldest first: every later file is younger, and the total fits
            p.unlink(missing_ok=True)
            total -= sizes[p]
            removed += 1
            if not any(p.parent.iterdir()):
                p.parent.rmdir()
        if removed:
            log.info("%s records: removed %d round files past the retention (%.0f days, "
                     "%d bytes)", self.root.name, removed, self.max_age_s / 86400, self.max_bytes)
        return removed


def read_map_records(root: Path) -> pa.Table:
    """Every kept round's map records, oldest first (an empty table when there are none)."""
    return _read(root, MAP_RECORD_SCHEMA)


def read_job_records(root: Path) -> pa.Table:
    """Every kept round's job records, oldest first (an empty table when there are none)."""
    return _read(root, JOB_RECORD_SCHEMA)


def _read(root: Path, schema: pa.Schema) -> pa.Table:
    """Files written before a column existed read it as nulls."""
    store = RecordStore(root, float("inf"), 1 << 62)
    tables = [pq.read_table(p, schema=schema) for _, p in store.files()]
    return pa.concat_tables(tables) if tables else schema.empty_table()
