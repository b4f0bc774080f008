"""Result sets, real or simulated, read as arms of runs: what `dsbra report` and the benchmarks'
analyses compare.

A *run* is a directory with ``jobs.parquet`` and ``tasks.parquet`` (dsbra/results_schema.py:
`dsbra bench replay` and `dsbra sim` write the same schema) and its replica storage over time:
``storage.json`` (the replay's replica bytes against base) or ``rounds.parquet`` (the
simulator's ``extra_storage`` per policy round). Runs are grouped into *arms* by directory:
``<arm>/seed<k>``, ``<arm>/rep<k>`` or ``<arm>/run<k>`` are repetitions of ``<arm>``; any other
run directory is an arm of one run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from dsbra.errors import InputError
from dsbra.stats import mean_or_none

REPETITION = re.compile(r"^(seed|rep|run)\d+$")
#: the jobs' size bins (``bin`` of dsbra/results_schema.py): locality and delay wait are also taken per bin
BINS = range(1, 10)


@dataclass
class Run:
    """One run's per-job and per-task columns and its extra storage over time."""

    path: Path
    jobs: dict
    tasks: dict
    storage_t: np.ndarray  #: seconds
    storage_extra: np.ndarray  #: extra replica bytes over base, as a fraction of base

    @classmethod
    def load(cls, path: Path) -> Run:
        try:
            jobs = pq.read_table(path / "jobs.parquet").to_pydict()
            tasks = pq.read_table(path / "tasks.parquet").to_pydict()
        except Exception as exc:  # noqa: BLE001 -- pyarrow raises several types; one message
            raise InputError(f"{path}: not a readable result set ({exc})") from None
        missing = {"bin", "maps", "response_s", "node_local_maps", "delay_wait_s"} - set(jobs)
        if missing:
            raise InputError(f"{path}/jobs.parquet lacks columns {sorted(missing)}")
        t, extra = _storage(path)
        return cls(path, jobs, tasks, t, extra)

    def metrics(self) -> dict:
        maps = np.asarray(self.jobs["maps"], np.float64)
        local = np.asarray(self.jobs["node_local_maps"], np.float64)
        bins = np.asarray(self.jobs["bin"])
        delay = np.asarray(self.jobs["delay_wait_s"], np.float64)
        out = {"jobs": len(maps), "maps": int(maps.sum()),
               "mean_response_s": mean_or_none(self.jobs["response_s"]),
               "node_locality": 100 * local.sum() / maps.sum() if maps.sum() else None,
               # per map, as the paper's "waiting time" of tasks for a local slot
               "delay_wait_s_per_map": delay.sum() / maps.sum() if maps.sum() else None,
               "extra_storage_mean": (100 * float(self.storage_extra.mean())
                                      if len(self.storage_extra) else None),
               "extra_storage_max": (100 * float(self.storage_extra.max())
                                     if len(self.storage_extra) else None)}
        for b in BINS:
            sel = bins == b
            if maps[sel].sum():
                out[f"locality_bin{b}"] = 100 * local[sel].sum() / maps[sel].sum()
                out[f"delay_bin{b}"] = delay[sel].sum() / maps[sel].sum()
        return out


def _storage(path: Path) -> tuple[np.ndarray, np.ndarray]:
    if (path / "storage.json").exists():
        try:
            rows = json.loads((path / "storage.json").read_text())["rows"]
            rows = [(float(t), float(r), float(b)) for t, r, b in rows if float(b) > 0]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}/storage.json: malformed ({exc})") from None
        if rows:
            t, r, b = map(np.asarray, zip(*rows))
            return t, (r - b) / b
    elif (path / "rounds.parquet").exists():
        rounds = pq.read_table(path / "rounds.parquet", columns=["time_s", "extra_storage"])
        return (rounds["time_s"].to_numpy(zero_copy_only=False),
                rounds["extra_storage"].to_numpy(zero_copy_only=False))
    return np.zeros(0), np.zeros(0)


def find_runs(paths: list[Path]) -> dict[str, list[Run]]:
    """Arm name -> its runs, in a stable order (arms as first met, repetitions by name)."""
    arms: dict[str, list[Run]] = {}
    for root in paths:
        if not root.exists():
            raise InputError(f"no such results directory: {root}")
        found = sorted({p.parent for p in root.rglob("jobs.parquet")})
        if not found:
            raise InputError(f"{root}: no run found (a directory with jobs.parquet)")
        for run_dir in found:
            arm = run_dir.parent.name if REPETITION.match(run_dir.name) else run_dir.name
            arms.setdefault(arm, []).append(Run.load(run_dir))
    return arms


def arm_table(arms: dict[str, list[Run]]) -> dict[str, dict[str, list[float]]]:
    """Arm -> metric -> its value in each repetition (None values left out)."""
    out: dict[str, dict[str, list[float]]] = {}
    for arm, runs in arms.items():
        per: dict[str, list[float]] = {}
        for run in runs:
            for k, v in run.metrics().items():
                if v is not None:
                    per.setdefault(k, []).append(float(v))
        out[arm] = per
    return out
