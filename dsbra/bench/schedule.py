"""Job schedules of the reproduction benchmark, as JSON files anyone can read. Pure: no cluster.

Both sources come from the simulator's workload generators (dsbra.sim.workload), mapped onto
the grep data set of `dsbra bench data` (one file = one block = one map):

- ``fb2009-bins``: the delay scheduling paper's Facebook bins (workload.md, Table 3) scaled to
  the cluster's map slots, exponential gaps (mean 14 s), and every ``hot_period_s`` a fresh 10%
  of the files made hot (a map reads a hot file with probability ``hot_share``), as the DSBRA
  paper did. The generator's data set is exactly the data set's files.
- ``fb2010``: the first jobs of the FB-2010 trace. Jobs reading the same input path read the
  same files; paths read by several jobs of the window (the popularity DSBRA acts on) get
  disjoint files from the start of the data set as long as it has room, paths read once share
  the files left after them, wrapping round (``notes.files_of_several_paths`` counts the files
  so shared by accident: size the data set, or lower --max-maps, to keep it small).

A schedule file (its reading and writing: dsbra/schedule_format.py):
    {"format": 1, "source": ..., "seed": ..., "dataset": {path, files, block_bytes, seed, ...},
     "params": {...}, "notes": {...},
     "jobs": [{"job_id": "job0", "submit_s": 0.0, "bin": 1, "maps": 1,
               "inputs": ["/bench/grep/part-00012"], "trace_input": "inputPath1"?}, ...]}
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np

from dsbra.bench.data import DatasetPlan
from dsbra.schedule_format import write_schedule
from dsbra.stats import fieller_ratio, t_interval
from dsbra.errors import InputError
from dsbra.schedule_format import FORMAT
from dsbra.sim import workload as wl

SOURCES = ("fb2009-bins", "fb2010")
MB = 1 << 20


def fb2009_bins(plan: DatasetPlan, *, slots: int, jobs: int = 100, inter_arrival_s: float = 14.0,
                hot_fraction: float = 0.1, hot_share: float = 0.5, hot_period_s: float = 300.0,
                seed: int = 0) -> dict:
    """Table 3 bins on the data set; no job reads more than half of it (the generator's
    contiguous runs need that, and a 4-node cluster cannot run 4800-map jobs anyway)."""
    if slots < 1:
        raise InputError(f"--slots must be >= 1, got {slots}")
    block_mb = plan.block_bytes / MB
    params = dict(slots=slots, jobs=jobs, inter_arrival_s=inter_arrival_s, hot_fraction=hot_fraction,
                  hot_share=hot_share, hot_period_s=hot_period_s, max_maps=max(1, plan.files // 2))
    work = wl.fb2009_bins(total_slots=slots, block_size_mb=block_mb, jobs=jobs,
                          inter_arrival_s=inter_arrival_s, hot_fraction=hot_fraction, hot_share=hot_share,
                          hot_period_s=hot_period_s, dataset_gb=plan.files * block_mb / 1024,
                          max_maps=params["max_maps"], seed=seed)
    if work.dataset.n_blocks != plan.files:
        raise InputError(f"the data set ({plan.files} files) is too small for this schedule; "
                         f"write a bigger one with dsbra bench data --size")
    file_of_block = np.arange(plan.files)
    return _document("fb2009-bins", plan, seed, params, work, file_of_block)


def fb2010(plan: DatasetPlan, trace: Path, *, slots: int, jobs: int = 100,
           inter_arrival_s: float | None = 14.0, max_maps: int | None = None, seed: int = 0) -> dict:
    """The trace's first ``jobs`` jobs (see the module docstring); ``inter_arrival_s`` rescales
    their submit times to that mean gap (None: the trace's own)."""
    cap = max_maps if max_maps is not None else min(slots, max(1, plan.files // 2))
    params = dict(trace=str(trace), slots=slots, jobs=jobs, inter_arrival_s=inter_arrival_s, max_maps=cap)
    work = wl.swim(Path(trace), total_slots=slots, block_size_mb=plan.block_bytes / MB, max_maps=cap,
                   jobs=jobs, inter_arrival_s=inter_arrival_s, seed=seed)
    data = work.dataset
    if "files" not in work.notes:
        raise InputError(f"{trace} has no input-path column; use --source fb2009-bins for such traces")
    readers = np.zeros(len(data.file_paths), np.int64)
    first_seen = np.full(len(data.file_paths), np.iinfo(np.int64).max)
    task_file = data.block_file[work.task_block]
    job_of_task = np.repeat(np.arange(work.n_jobs), work.maps)
    for f in np.unique(task_file):
        readers[f] = len(np.unique(job_of_task[task_file == f]))
        first_seen[f] = job_of_task[task_file == f].min()
    # paths several jobs read get files from the start of the data set, in order of first
    # reader; paths read once share what is left (all of it if the shared ones filled it)
    shared = readers > 1
    start = np.zeros(len(data.file_paths), np.int64)
    region = np.zeros(len(data.file_paths), np.int64)  # (offset, size) of the files a path may use
    size = np.full(len(data.file_paths), plan.files, np.int64)
    used = 0
    for group in (shared, ~shared):
        order = np.flatnonzero(group)[np.argsort(first_seen[group], kind="stable")]
        start[order] = np.concatenate([[0], np.cumsum(data.file_blocks[order])[:-1]]).astype(np.int64)
        if group is not shared and used < plan.files:
            region[order], size[order] = used, plan.files - used
        used = int(data.file_blocks[order].sum()) if group is shared else used
    within = np.arange(data.n_blocks) - data.file_first_block[data.block_file]
    b = data.block_file
    file_of_block = region[b] + (start[b] + within) % size[b]
    paths_per_file = np.zeros(plan.files, np.int64)
    for f in range(plan.files):
        paths_per_file[f] = len(np.unique(data.block_file[file_of_block == f]))
    doc = _document("fb2010", plan, seed, params, work, file_of_block)
    doc["notes"].update(trace_paths=int(len(data.file_paths)), trace_paths_shared=int((readers > 1).sum()),
                        files_of_several_paths=int((paths_per_file > 1).sum()))
    for job, k in zip(doc["jobs"], range(work.n_jobs)):
        job["trace_input"] = str(data.file_paths[task_file[work.task_indptr[k]]])
    return doc


#: a scale study runs its fewer ``large_seeds`` on clusters of more workers than this (a
#: 600-worker run of the default takes minutes)
LARGE_SCALE_WORKERS = 100


def scale_study_seeds(workers: int, seeds: int, large_seeds: int) -> int:
    """How many placement seeds a scale study runs at ``workers``."""
    return seeds if workers <= LARGE_SCALE_WORKERS else large_seeds


def seed_paired(rows: list[dict], key: str, base: dict, other: dict) -> dict | None:
    """A scale study's ``key`` of the rows matching ``other`` minus those matching ``base``
    (fields and their values), paired by seed: mean and 95% t-interval."""
    def by_seed(match: dict) -> dict[int, float]:
        return {r["seed"]: r[key] for r in rows if all(r[k] == v for k, v in match.items())}

    a, b = by_seed(other), by_seed(base)
    ci = t_interval([a[s] - b[s] for s in sorted(set(a) & set(b))])
    return None if ci is None else dict(zip(("mean", "low", "high"), ci))


def _response_by_arm_seed(rows: list[dict], match: dict) -> dict[tuple[str, int], float]:
    """(arm, seed) -> mean response of the rows matching ``match``."""
    return {(r["arm"], r["seed"]): r["mean_response_s"] for r in rows
            if all(r[k] == v for k, v in match.items())}


def seed_captured(rows: list[dict], arm: str, **match) -> dict | None:
    """``arm``'s share of the oracle's gain in mean response over static, per seed among the rows
    matching ``match``, in percent (seeds where the oracle gains nothing, or without a static
    and an oracle run, left out): mean and
    95% t-interval over the seeds."""
    by = _response_by_arm_seed(rows, match)
    shares = [100 * (by[("static", s)] - by[(arm, s)]) / (by[("static", s)] - by[("oracle", s)])
              for (a, s) in by if a == arm and ("static", s) in by and ("oracle", s) in by
              and by[("static", s)] > by[("oracle", s)]]
    ci = t_interval(shares)
    return None if ci is None else dict(zip(("mean", "low", "high"), ci))


def seed_captured_ratio(rows: list[dict], arm: str, **match) -> dict | None:
    """``arm``'s captured share of the oracle's gain as `dsbra report` takes it on real
    sittings: mean(static - arm) / mean(static - oracle) in mean response over the seeds all
    three ran among the rows matching ``match``, in percent, with its 95% Fieller interval
    (bounds None where the oracle's gain is not separated from zero); None under 2 seeds."""
    by = _response_by_arm_seed(rows, match)
    seeds = sorted({s for (_, s) in by if all((x, s) in by for x in ("static", arm, "oracle"))})
    if len(seeds) < 2:
        return None
    b, a, o = (np.array([by[(x, s)] for s in seeds]) for x in ("static", arm, "oracle"))
    if (b - o).mean() <= 0:
        return None
    low, high = fieller_ratio(b - a, b - o)
    return {"mean": 100 * (b - a).mean() / (b - o).mean(),
            "low": None if low is None else 100 * low, "high": None if high is None else 100 * high}


def format_interval(c: dict | None, digits: int = 1) -> str:
    """``seed_paired``'s or a captured share's mean [low, high], signed; "-" for None."""
    if c is None:
        return "-"
    bound = "unbounded" if c["low"] is None else f"{c['low']:+.{digits}f}, {c['high']:+.{digits}f}"
    return f"{c['mean']:+.{digits}f} [{bound}]"


def add_scale_study_arguments(ap, seeds: int, workers: list[int], base_workers: int, what: str = "") -> None:
    """A scale study's --seeds, --large-seeds and --workers (``what``: the clusters' schedule);
    check them with :func:`scale_study_error`."""
    ap.add_argument("--seeds", type=int, default=seeds)
    ap.add_argument("--large-seeds", type=int, default=3,
                    help=f"seeds on clusters over {LARGE_SCALE_WORKERS} workers (a 600-worker run takes minutes)")
    ap.add_argument("--workers", type=int, nargs="+", default=workers,
                    help=f"cluster sizes{what}, each a multiple of {base_workers}")


def scale_study_error(seeds: int, large_seeds: int, workers: list[int], base_workers: int) -> str | None:
    """The one-line error of a scale study's seed counts and cluster sizes (each a multiple of
    the schedule's own ``base_workers``, see :func:`scaled_schedule`), or None."""
    if min(seeds, large_seeds) < 2:
        return (f"--seeds and --large-seeds must be at least 2 (intervals are paired over seeds), "
                f"got {min(seeds, large_seeds)}")
    bad = [w for w in workers if w < base_workers or w % base_workers]
    return f"--workers must be multiples of {base_workers}, got {bad[0]}" if bad else None


def scaled_schedule(schedule: dict, copies: int) -> dict:
    """``copies`` of the schedule, copy c reading files c x F .. c x F + F - 1 of a data set
    ``copies`` times as large and submitting its jobs c x (mean gap / copies) later: the same
    jobs per slot per second on a cluster ``copies`` times as large."""
    files = schedule["dataset"]["files"]
    root = schedule["dataset"]["path"].rstrip("/")
    jobs = schedule["jobs"]
    gap = (jobs[-1]["submit_s"] - jobs[0]["submit_s"]) / max(len(jobs) - 1, 1)
    scaled = []
    for c in range(copies):
        for job in jobs:
            inputs = [f"{root}/part-{c * files + int(p.rsplit('-', 1)[1]):05d}" for p in job["inputs"]]
            scaled.append({**job, "job_id": f"c{c}-{job['job_id']}", "inputs": inputs,
                           "submit_s": round(job["submit_s"] + c * gap / copies, 3)})
    scaled.sort(key=lambda j: j["submit_s"])
    return {**schedule, "dataset": {**schedule["dataset"], "files": files * copies}, "jobs": scaled,
            "notes": {**schedule.get("notes", {}), "scaled_copies": copies}}


def write_scaled_schedule(out_dir: Path, schedule: dict, workers: int, base_workers: int) -> Path:
    """:func:`scaled_schedule` for ``workers`` (``schedule`` ran on ``base_workers``), written to
    out_dir/schedule-<workers>w.json, a scale study's input; its path."""
    path = out_dir / f"schedule-{workers}w.json"
    write_schedule(path, scaled_schedule(schedule, workers // base_workers))
    return path


def hot_files(schedule: dict, copies: int) -> set[int]:
    """The block (file row) each copy's hot file has: the file most of the schedule's maps read."""
    counts = collections.Counter(int(p.rsplit("-", 1)[1]) for j in schedule["jobs"] for p in j["inputs"])
    hot = counts.most_common(1)[0][0]
    return {c * schedule["dataset"]["files"] + hot for c in range(copies)}


def _document(source: str, plan: DatasetPlan, seed: int, params: dict, work: wl.Workload,
              file_of_block: np.ndarray) -> dict:
    notes = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in work.notes.items()}
    jobs = []
    for k in range(work.n_jobs):
        blocks = work.task_block[work.task_indptr[k]:work.task_indptr[k + 1]]
        files = sorted(set(int(f) for f in file_of_block[blocks]))
        jobs.append({"job_id": str(work.job_ids[k]), "submit_s": round(float(work.submit_s[k]), 3),
                     "bin": int(work.bins[k]), "maps": len(files),
                     "inputs": [plan.file_path(f) for f in files]})
    return {"format": FORMAT, "source": source, "seed": seed, "dataset": plan.manifest(),
            "params": params, "notes": notes, "jobs": jobs}


def summary(doc: dict) -> str:
    """A few lines on a schedule: jobs and maps per bin, span, how much the inputs are shared."""
    jobs = doc["jobs"]
    reads: dict[str, int] = {}
    for job in jobs:
        for f in job["inputs"]:
            reads[f] = reads.get(f, 0) + 1
    by_bin: dict[int, list[int]] = {}
    for job in jobs:
        by_bin.setdefault(job["bin"], []).append(job["maps"])
    bins = ", ".join(f"{b}: {len(m)} x {min(m)}-{max(m)}" if min(m) != max(m) else f"{b}: {len(m)} x {m[0]}"
                     for b, m in sorted(by_bin.items()))
    top = sorted(reads.values(), reverse=True)
    return (f"{doc['source']} schedule: {len(jobs)} jobs over {jobs[-1]['submit_s']:.0f} s, "
            f"{sum(j['maps'] for j in jobs)} maps on {len(reads)} of {doc['dataset']['files']} files\n"
            f"  jobs x maps by bin: {bins}\n"
            f"  reads per file: max {top[0]}, top 10% of files take "
            f"{sum(top[:max(1, len(top) // 10)]) / sum(top):.0%} of the reads")
