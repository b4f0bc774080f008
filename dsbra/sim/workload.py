"""Job schedules: which jobs arrive when, and which HDFS blocks each map reads.

Three sources:
- ``fb2009-bins``: the delay scheduling paper's Facebook macrobenchmark (workload.md, Table 3):
  jobs drawn from the nine size bins in the benchmark's proportions, exponential inter-arrival
  gaps (mean 14 s), map counts scaled for small clusters (:func:`scaled_bin_maps`).
- ``swim:PATH``: a SWIM trace (FB-2009 / FB-2010 TSV). Map count = ceil(map input bytes /
  block size), at least 1, capped at ``max_maps`` (default: the cluster's map slots). With an
  input-path column (FB-2010), same path = same file = same blocks: real popularity.
- ``schedule:PATH``: a `dsbra bench schedule` file, the very jobs a real-cluster replay runs
  (one-block files of the grep data set), so a simulated and a real run can be compared job
  for job.

Without input paths, inputs come from a shared data set with hot spots (workload.md, after the
DSBRA paper): every ``hot_period_s`` a fresh ``hot_fraction`` of the data set's blocks is picked
at random; each map reads a hot block with probability ``hot_share``, otherwise the job reads a
contiguous run of the data set from a random offset (a table or partition).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dsbra.errors import InputError
from dsbra.results_schema import size_bin
from dsbra.schedule_format import load_schedule

MB = 1 << 20

# workload.md, Table 3: benchmark maps per bin and jobs per bin (out of 100)
BIN_MAPS = np.array([1, 2, 10, 50, 100, 200, 400, 800, 4800])
BIN_JOBS = np.array([38, 16, 14, 8, 6, 6, 4, 4, 4])
# The cluster the benchmark's map counts were sized for (our reference for scaling down).
REFERENCE_SLOTS = 100 * 4
ARRIVALS = ("exp", "fixed")  # exponential or fixed inter-arrival times


@dataclass(frozen=True)
class Dataset:
    """The HDFS namespace the jobs read: files made of blocks (block row = block id)."""

    block_bytes: np.ndarray  # int64 per block
    block_file: np.ndarray  # int32 per block: its file row
    file_paths: np.ndarray  # object per file
    file_first_block: np.ndarray  # int64 per file
    file_blocks: np.ndarray  # int64 per file

    @property
    def n_blocks(self) -> int:
        return len(self.block_bytes)

    @classmethod
    def one_block_files(cls, n_blocks: int, block_bytes: int, prefix: str = "/data/part-"
                        ) -> Dataset:
        n = int(n_blocks)
        return cls(block_bytes=np.full(n, block_bytes, np.int64),
                   block_file=np.arange(n, dtype=np.int32),
                   file_paths=np.array([f"{prefix}{i:06d}" for i in range(n)], dtype=object),
                   file_first_block=np.arange(n, dtype=np.int64),
                   file_blocks=np.ones(n, np.int64))


@dataclass(frozen=True)
class Workload:
    """Jobs in submission order; tasks in CSR (job k's maps are rows task_indptr[k]..[k+1])."""

    name: str
    job_ids: np.ndarray  # object
    submit_s: np.ndarray  # float64, non-decreasing
    bins: np.ndarray  # int8, Table 3 bin of the job's unscaled size
    task_indptr: np.ndarray  # int64, jobs + 1
    task_block: np.ndarray  # int64 per task: the block it reads
    task_mb: np.ndarray  # float64 per task: MB it reads
    dataset: Dataset
    notes: dict = field(default_factory=dict)

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def n_tasks(self) -> int:
        return len(self.task_block)

    @property
    def maps(self) -> np.ndarray:
        return np.diff(self.task_indptr).astype(np.int32)


def scaled_bin_maps(total_slots: int, bin_scale: float | None = None) -> tuple[np.ndarray, float]:
    """Map counts of the nine bins for a cluster of ``total_slots`` map slots.

    Bins 1 and 2 (1 and 2 maps, most of the jobs) are kept; bins 3-9 are multiplied by
    ``scale = min(1, total_slots / 400)`` (the benchmark's 100 nodes x 4 map slots), rounded,
    and kept >= 3 so they stay bigger than bin 2. ``bin_scale`` overrides the factor.
    """
    scale = min(1.0, total_slots / REFERENCE_SLOTS) if bin_scale is None else float(bin_scale)
    if not scale > 0:
        raise InputError(f"bin scale must be > 0, got {bin_scale!r}")
    maps = BIN_MAPS.copy()
    maps[2:] = np.maximum(3, np.rint(BIN_MAPS[2:] * scale)).astype(np.int64)
    return maps, scale


def _bin_counts(n_jobs: int) -> np.ndarray:
    """Jobs per bin for ``n_jobs`` jobs in Table 3's proportions (largest remainder)."""
    exact = BIN_JOBS * n_jobs / BIN_JOBS.sum()
    counts = np.floor(exact).astype(np.int64)
    short = n_jobs - counts.sum()
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return counts


class _HotSpots:
    """Per-job block choice from a shared data set with periodically re-drawn hot blocks."""

    def __init__(self, rng: np.random.Generator, n_blocks: int, hot_fraction: float,
                 hot_share: float, hot_period_s: float):
        self.rng, self.n = rng, n_blocks
        self.hot_size = int(round(hot_fraction * n_blocks)) if hot_fraction > 0 else 0
        self.hot_share, self.period = hot_share, hot_period_s
        self._hot_period, self._hot = -1, np.zeros(0, np.int64)

    def blocks(self, maps: int, submit_s: float) -> np.ndarray:
        rng = self.rng
        k_hot = 0
        if self.hot_size:
            period = int(submit_s // self.period)
            if period != self._hot_period:
                self._hot_period = period
                self._hot = rng.choice(self.n, size=self.hot_size, replace=False)
            k_hot = min(int(rng.binomial(maps, self.hot_share)), self.hot_size)
        hot = rng.choice(self._hot, size=k_hot, replace=False) if k_hot else np.zeros(0, np.int64)
        start = int(rng.integers(self.n))
        run = (start + np.arange(maps, dtype=np.int64)) % self.n  # maps <= n / 2
        rest = run[~np.isin(run, hot)][:maps - k_hot] if k_hot else run
        out = np.concatenate([hot.astype(np.int64), rest])
        rng.shuffle(out)
        return out


def _check_hot(hot_fraction: float, hot_share: float, hot_period_s: float) -> None:
    if not 0 <= hot_fraction <= 1:
        raise InputError(f"hot fraction must be in [0, 1], got {hot_fraction!r}")
    if not 0 <= hot_share <= 1:
        raise InputError(f"hot share must be in [0, 1], got {hot_share!r}")
    if not hot_period_s > 0:
        raise InputError(f"hot period must be > 0 s, got {hot_period_s!r}")


def fb2009_bins(*, total_slots: int, block_size_mb: float, jobs: int = 100,
                inter_arrival_s: float = 14.0, arrivals: str = "exp", hot_fraction: float = 0.1,
                hot_share: float = 0.5, hot_period_s: float = 300.0, dataset_gb: float = 100.0,
                bin_scale: float | None = None, max_maps: int | None = None, seed: int = 0) -> Workload:
    """The Table 3 macrobenchmark schedule (see the module docstring). ``max_maps`` caps the
    scaled map counts (a small data set: no job reads more than its share of it)."""
    if jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {jobs}")
    if not inter_arrival_s > 0:
        raise InputError(f"--inter-arrival-s must be > 0, got {inter_arrival_s}")
    if arrivals not in ARRIVALS:
        raise InputError(f"arrivals must be {' or '.join(ARRIVALS)}, got {arrivals!r}")
    _check_hot(hot_fraction, hot_share, hot_period_s)
    rng = np.random.default_rng([seed, 2009])
    bin_maps, scale = scaled_bin_maps(total_slots, bin_scale)
    if max_maps is not None:
        if max_maps < 1:
            raise InputError(f"--max-maps must be >= 1, got {max_maps}")
        bin_maps = np.minimum(bin_maps, max_maps)
    bins = np.repeat(np.arange(1, 10), _bin_counts(jobs))
    rng.shuffle(bins)
    maps = bin_maps[bins - 1]
    gaps = (rng.exponential(inter_arrival_s, jobs) if arrivals == "exp"
            else np.full(jobs, inter_arrival_s))
    submit = np.cumsum(gaps) - gaps[0]
    block_bytes = int(block_size_mb * MB)
    n_blocks = max(int(math.ceil(dataset_gb * 1024 / block_size_mb)), 2 * int(maps.max()))
    dataset = Dataset.one_block_files(n_blocks, block_bytes)
    picker = _HotSpots(rng, n_blocks, hot_fraction, hot_share, hot_period_s)
    blocks = [picker.blocks(int(m), float(s)) for m, s in zip(maps, submit)]
    indptr = np.concatenate([[0], np.cumsum(maps)]).astype(np.int64)
    task_block = np.concatenate(blocks)
    notes = {"bin_maps": bin_maps.tolist(), "bin_scale": scale, "dataset_blocks": n_blocks,
             "hot_fraction": hot_fraction, "hot_share": hot_share, "hot_period_s": hot_period_s,
             "arrivals": arrivals, "inter_arrival_s": inter_arrival_s}
    return Workload(name="fb2009-bins", job_ids=np.array([f"job{i}" for i in range(jobs)],
                                                         dtype=object),
                    submit_s=submit.astype(np.float64), bins=bins.astype(np.int8),
                    task_indptr=indptr, task_block=task_block,
                    task_mb=np.full(len(task_block), block_size_mb), dataset=dataset,
                    notes=notes)


def read_swim(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(job ids, submit s, map input bytes, input paths or None) of a SWIM TSV trace."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    ids, submit, inputs, paths = [], [], [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 6:
            raise InputError(f"{path}:{lineno}: expected >= 6 tab-separated columns (job id, "
                             f"submit s, gap s, map input, shuffle, reduce output bytes), "
                             f"got {len(cols)}")
        try:
            s, b = float(cols[1]), int(cols[3])
        except ValueError:
            raise InputError(f"{path}:{lineno}: submit time {cols[1]!r} or map input bytes "
                             f"{cols[3]!r} is not a number") from None
        if b < 0 or not s >= 0:
            raise InputError(f"{path}:{lineno}: negative submit time or input bytes")
        ids.append(cols[0])
        submit.append(s)
        inputs.append(b)
        paths.append(cols[6] if len(cols) > 6 and cols[6] else None)
    if not ids:
        raise InputError(f"trace {path} has no jobs")
    have_paths = any(p is not None for p in paths)
    if have_paths:
        paths = [p if p is not None else f"<no-path:{i}>" for i, p in enumerate(paths)]
    return (np.array(ids, dtype=object), np.array(submit, np.float64),
            np.array(inputs, np.int64), np.array(paths, dtype=object) if have_paths else None)


def swim(path: Path, *, total_slots: int, block_size_mb: float, max_maps: int | None = None,
         jobs: int | None = None, inter_arrival_s: float | None = None,
         hot_fraction: float = 0.1, hot_share: float = 0.5, hot_period_s: float = 300.0,
         dataset_gb: float = 100.0, seed: int = 0) -> Workload:
    """A SWIM trace as a schedule (see the module docstring).

    ``jobs``: keep the first N. ``inter_arrival_s``: rescale submit times so the mean gap is S
    (keeps the trace's burstiness). Hot spots apply only to traces without input paths.
    """
    _check_hot(hot_fraction, hot_share, hot_period_s)
    ids, submit, inputs, paths = read_swim(path)
    order = np.argsort(submit, kind="stable")
    ids, submit, inputs = ids[order], submit[order], inputs[order]
    paths = paths[order] if paths is not None else None
    if jobs is not None:
        if jobs < 1:
            raise InputError(f"--jobs must be >= 1, got {jobs}")
        ids, submit, inputs = ids[:jobs], submit[:jobs], inputs[:jobs]
        paths = paths[:jobs] if paths is not None else None
    submit = submit - submit[0]
    if inter_arrival_s is not None:
        if not inter_arrival_s > 0:
            raise InputError(f"--inter-arrival-s must be > 0, got {inter_arrival_s}")
        span = submit[-1]
        if len(submit) > 1 and span > 0:
            submit = submit * (inter_arrival_s * (len(submit) - 1) / span)
    cap = int(max_maps) if max_maps is not None else int(total_slots)
    if cap < 1:
        raise InputError(f"--max-maps must be >= 1, got {max_maps}")
    block_bytes = int(block_size_mb * MB)
    full_maps = np.maximum(1, -(-inputs // block_bytes))
    maps = np.minimum(full_maps, cap)
    bins = size_bin(full_maps)
    # MB per map: the job's input spread over its (uncapped) maps, at most one block
    per_task_mb = np.minimum(inputs / full_maps, block_bytes) / MB
    rng = np.random.default_rng([seed, 2010])
    indptr = np.concatenate([[0], np.cumsum(maps)]).astype(np.int64)
    task_mb = np.repeat(per_task_mb, maps)
    notes = {"trace": str(path), "max_maps": cap, "capped_jobs": int((full_maps > cap).sum()),
             "maps_before_cap": int(full_maps.sum()), "maps": int(maps.sum())}
    if paths is not None:
        uniq, inverse = np.unique(paths, return_inverse=True)
        file_blocks = np.zeros(len(uniq), np.int64)
        np.maximum.at(file_blocks, inverse, maps)
        file_bytes = np.zeros(len(uniq), np.int64)
        np.maximum.at(file_bytes, inverse, np.minimum(inputs, maps * block_bytes))
        first = np.concatenate([[0], np.cumsum(file_blocks)[:-1]]).astype(np.int64)
        n_blocks = int(file_blocks.sum())
        block_file = np.repeat(np.arange(len(uniq), dtype=np.int32), file_blocks)
        within = np.arange(n_blocks) - first[block_file]
        # the file's last block holds the remainder
        block_bytes_arr = np.minimum(block_bytes,
                                     np.maximum(file_bytes[block_file] - within * block_bytes, 1))
        dataset = Dataset(block_bytes=block_bytes_arr.astype(np.int64), block_file=block_file,
                          file_paths=uniq.astype(object), file_first_block=first,
                          file_blocks=file_blocks)
        job_first = first[inverse]
        task_block = (np.repeat(job_first - indptr[:-1], maps) + np.arange(indptr[-1]))
        notes.update({"files": len(uniq), "dataset_blocks": n_blocks,
                      "popularity": "input path column (same path = same file)"})
    else:
        n_blocks = max(int(math.ceil(dataset_gb * 1024 / block_size_mb)), 2 * int(maps.max()))
        dataset = Dataset.one_block_files(n_blocks, block_bytes)
        picker = _HotSpots(rng, n_blocks, hot_fraction, hot_share, hot_period_s)
        task_block = np.concatenate([picker.blocks(int(m), float(s))
                                     for m, s in zip(maps, submit)])
        notes.update({"dataset_blocks": n_blocks, "hot_fraction": hot_fraction,
                      "hot_share": hot_share, "hot_period_s": hot_period_s})
    name = "swim:" + Path(path).name
    return Workload(name=name, job_ids=ids, submit_s=submit.astype(np.float64),
                    bins=bins.astype(np.int8), task_indptr=indptr,
                    task_block=task_block.astype(np.int64), task_mb=task_mb.astype(np.float64),
                    dataset=dataset, notes=notes)


def bench_schedule(path: Path) -> Workload:
    """A `dsbra bench schedule` file as a workload: its jobs, submit times and input files
    (each one block of the data set's block size), bins as the schedule recorded them."""
    doc = load_schedule(path)
    data = doc["dataset"]
    n_files, block_bytes = int(data["files"]), int(data["block_bytes"])
    names = [f"{data['path'].rstrip('/')}/part-{i:05d}" for i in range(n_files)]  # bench data's
    dataset = dataclasses.replace(Dataset.one_block_files(n_files, block_bytes),
                                  file_paths=np.array(names, dtype=object))
    row = {p: i for i, p in enumerate(names)}
    jobs = doc["jobs"]
    unknown = sorted({f for j in jobs for f in j["inputs"] if f not in row})
    if unknown:
        raise InputError(f"schedule {path}: {len(unknown)} inputs are not files of its data set, "
                         f"e.g. {unknown[0]}")
    maps = np.array([len(j["inputs"]) for j in jobs], np.int64)
    by_size = size_bin(maps)  # for a job the schedule gives no bin
    task_block = np.array([row[f] for j in jobs for f in j["inputs"]], np.int64)
    block_mb = block_bytes / MB
    return Workload(name=f"schedule:{Path(path).name}",
                    job_ids=np.array([j["job_id"] for j in jobs], dtype=object),
                    submit_s=np.array([float(j["submit_s"]) for j in jobs], np.float64),
                    bins=np.array([int(j.get("bin", b)) for j, b in zip(jobs, by_size)], np.int8),
                    task_indptr=np.concatenate([[0], np.cumsum(maps)]).astype(np.int64),
                    task_block=task_block, task_mb=np.full(len(task_block), block_mb),
                    dataset=dataset, notes={"schedule": str(path), "source": doc["source"],
                                            "files": n_files, "dataset_blocks": n_files})
