"""`dsbra impact DIR`: what the policy's raises did, read from the held-out control group.

The daemon with ``experiment.holdout`` > 0 assigns every file the policy decides to raise to
treatment (raised) or control (held out, never changed) by a hash of its path
(dsbra.experiment.design), records the group and the time of the file's first decision
(``experiment.jsonl``) and keeps the maps it observed (``maps/``, dsbra.experiment.records). Both
groups live through the same hours of the same cluster, so the rest of the cluster's load hits
them alike, which a before/after comparison cannot promise.

For the maps that read a treated or a control file and launched after that file's first
decision: node locality (the map ran on a node holding a replica of its block: as the data was
read, which a new replica changes even for a job whose splits were fixed before it), the
delay-scheduling wait per map, map duration; the treated-minus-control difference, with a 95% confidence interval from a
bootstrap over files (the maps of one file share its replicas and its jobs, so they are not
independent draws; files are). Intention to treat: a treated file counts even when a rail held
its raise back, as the operator's deployment would.

Several runs (`dsbra impact RUN1 RUN2 ...`) pool by draw: the unit of the bootstrap is a file
under one experiment.seed, its maps of every run with that seed added up (each run counted from
its own first decision of the file). Runs with the same seed put a file in the same group every
time, so its runs are one unit, not several: one schedule makes the same file hot in each.
Runs with a seed each draw the groups anew, and a file's runs are units of their own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dsbra.errors import InputError
from dsbra.experiment.assignment import ASSIGNMENTS_FILE, SWITCHBACK_FILE, Assignments
from dsbra.experiment.design import CONTROL, TREATMENT
from dsbra.experiment.records import MAPS_DIR, read_map_records
from dsbra.statedir import STATUS_FILE
from dsbra.stats import bootstrap_ratio_diff, units_needed

METRICS = ("node_locality", "delay_wait_s", "map_s")
#: files per group below which no interval is drawn: a percentile bootstrap over fewer units
#: undercovers (its resamples take few distinct values), and the simulator's check of the
#: design (benchmarks/experiment_designs.py) covered the truth less often with fewer files
MIN_FILES = 5


@dataclass
class FileSums:
    """Per file of one group: maps, and per metric the sum over maps and the maps it covers
    (map duration only counts finished maps). A run's files are paths; pooled, (seed, path)."""

    files: list
    maps: np.ndarray
    sums: dict[str, np.ndarray]
    counts: dict[str, np.ndarray]

    def rate(self, metric: str, rows=None) -> float | None:
        s = self.sums[metric] if rows is None else self.sums[metric][rows]
        n = self.counts[metric] if rows is None else self.counts[metric][rows]
        total = n.sum()
        return float(s.sum() / total) if total else None


def state_dir_of(path: Path) -> Path:
    """The daemon state dir in ``path``: itself, or the ``daemon-state`` of a
    ``dsbra bench replay --daemon-config`` results dir."""
    for candidate in (path, path / "daemon-state"):
        if ((candidate / ASSIGNMENTS_FILE).is_file() or (candidate / SWITCHBACK_FILE).is_file()
                or _ran_holdout(candidate)):
            return candidate
    raise InputError(f"no experiment in {path}: no {ASSIGNMENTS_FILE} or {SWITCHBACK_FILE} "
                     "there or in its daemon-state/ (was the daemon run with experiment.holdout "
                     "> 0 or experiment.design switchback?)")


def is_switchback(state: Path) -> bool:
    return (state / SWITCHBACK_FILE).is_file()


def _ran_holdout(state: Path) -> bool:
    """Whether the daemon's last status says it ran an experiment: a run that held out files
    but decided none writes no assignments, and has no draws to give."""

    try:
        status = json.loads((state / STATUS_FILE).read_text())
        return float((status.get("experiment") or {}).get("holdout") or 0) > 0
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def per_file_sums(maps: pa.Table, assignments: dict[str, tuple[str, int]], group: str,
                  after: bool = True) -> FileSums:
    """Per file of ``group``: its maps launched after (``after``) or before its first decision."""
    files = sorted(f for f, (g, _) in assignments.items() if g == group)
    index = {f: i for i, f in enumerate(files)}
    path = maps.column("file").to_pylist()
    row_file = np.array([index.get(p, -1) if p is not None else -1 for p in path], np.int64)
    first = np.array([assignments[f][1] for f in files], np.int64)
    launch = maps.column("launch_ms").to_numpy()
    ours = row_file >= 0
    when = np.zeros(len(row_file), bool)
    when[ours] = (launch[ours] >= first[row_file[ours]]) == after
    rows = np.flatnonzero(ours & when)
    f = row_file[rows]
    n = len(files)
    local = pc.fill_null(maps.column("replica_local"), False).to_numpy(
        zero_copy_only=False)[rows].astype(float)
    wait = maps.column("delay_wait_s").to_numpy()[rows]
    finish = maps.column("finish_ms").to_numpy(zero_copy_only=False)[rows]
    done = ~np.isnan(finish.astype(float))
    dur = np.where(done, (np.nan_to_num(finish.astype(float)) - launch[rows]) / 1000.0, 0.0)
    maps_per_file = np.bincount(f, minlength=n)
    done_per_file = np.bincount(f, weights=done, minlength=n)
    return FileSums(files, maps_per_file, {
        "node_locality": np.bincount(f, weights=local, minlength=n),
        "delay_wait_s": np.bincount(f, weights=wait, minlength=n),
        "map_s": np.bincount(f, weights=dur, minlength=n)},
        {"node_locality": maps_per_file, "delay_wait_s": maps_per_file, "map_s": done_per_file})


def pooled(parts: list[FileSums]) -> FileSums:
    """One FileSums of several runs' per-unit sums: a unit's maps of every run added up."""
    files = sorted({f for s in parts for f in s.files})
    index = {f: i for i, f in enumerate(files)}
    maps = np.zeros(len(files), np.int64)
    sums = {m: np.zeros(len(files)) for m in METRICS}
    counts = {m: np.zeros(len(files)) for m in METRICS}
    for s in parts:
        rows = np.array([index[f] for f in s.files], np.int64)
        np.add.at(maps, rows, s.maps)
        for m in METRICS:
            np.add.at(sums[m], rows, s.sums[m])
            np.add.at(counts[m], rows, s.counts[m])
    return FileSums(files, maps, sums, counts)


def _with_maps(s: FileSums) -> FileSums:
    keep = np.flatnonzero(s.maps > 0)
    return FileSums([s.files[i] for i in keep], s.maps[keep],
                    {k: v[keep] for k, v in s.sums.items()},
                    {k: v[keep] for k, v in s.counts.items()})


def impact(paths: Path | list[Path]) -> dict:
    """The experiment's read-out of a daemon state dir (or a replay's daemon-state), or of
    several runs' pooled by draw, (seed, file)."""
    states = [state_dir_of(p) for p in ([paths] if isinstance(paths, Path) else paths)]
    groups = {TREATMENT: "treated", CONTROL: "control"}
    group_of: dict[tuple[int, str], tuple[str, Path]] = {}  # (seed, file): group, first run
    runs_after: dict[str, list[FileSums]] = {name: [] for name in groups.values()}
    runs_before: dict[str, list[FileSums]] = {name: [] for name in groups.values()}
    no_decision = [s for s in states if not (s / ASSIGNMENTS_FILE).is_file()]
    if len(no_decision) == len(states):
        raise InputError(f"the daemon decided no file in {', '.join(map(str, states))}: "
                         "no treated or held-out file to compare yet")
    for state in states:
        if state in no_decision:
            continue
        book = Assignments.open(state / ASSIGNMENTS_FILE)
        for f, g in book.groups.items():
            seen = group_of.setdefault((book.seeds[f], f), (g, state))
            if seen[0] != g:
                raise InputError(f"{f} is {seen[0]} in {seen[1]} but {g} in {state} under one "
                                 "experiment.seed: runs with different holdouts cannot be pooled")
        assignments = {f: (g, book.first_decision_ms[f]) for f, g in book.groups.items()}
        maps = read_map_records(state / MAPS_DIR)
        for g, name in groups.items():
            for runs, after in ((runs_after, True), (runs_before, False)):
                part = per_file_sums(maps, assignments, g, after=after)
                part.files = [(book.seeds[f], f) for f in part.files]
                runs[name].append(part)
    sums = {name: _with_maps(pooled(parts)) for name, parts in runs_after.items()}
    before = {name: pooled(parts) for name, parts in runs_before.items()}
    t, c = sums["treated"], sums["control"]
    out: dict = {
        "dirs": [str(s) for s in states],
        "dirs_without_decisions": [str(s) for s in no_decision],
        "files": {name: sum(1 for g, _ in group_of.values() if g == grp)
                  for grp, name in groups.items()},  # (seed, file) draws
        "files_with_maps": {"treated": len(t.files), "control": len(c.files)},
        "maps": {"treated": int(t.maps.sum()), "control": int(c.maps.sum())},
    }
    undecided = []
    enough = min(len(t.files), len(c.files)) >= MIN_FILES  # else no interval
    for metric in METRICS:
        x, y = t.rate(metric), c.rate(metric)
        diff = None if x is None or y is None else x - y
        ci = (bootstrap_ratio_diff((t.sums[metric], t.counts[metric]), (c.sums[metric], c.counts[metric]))
              if enough else None)
        more = units_needed(len(t.files) + len(c.files), diff, ci)
        out[metric] = {"treated": _round(x), "control": _round(y), "diff": _round(diff),
                       "ci95": None if ci is None else [_round(ci[0]), _round(ci[1])],
                       "more_files_needed": more}
        if ci is None or ci[0] <= 0 <= ci[1]:
            undecided.append(metric)
    out["verdict"] = _verdict(out, undecided)
    row_before = {name: {f: k for k, f in enumerate(s.files)} for name, s in before.items()}
    out["per_file"] = [
        {"file": f, "seed": seed, "group": name,
         "before": _view(before[name], row_before[name][(seed, f)]), "after": _view(s, k)}
        for name, s in sums.items() for k, (seed, f) in enumerate(s.files)]
    return out


def _view(s: FileSums, k: int) -> dict:
    return {"maps": int(s.maps[k]),
            **{m: _round(s.rate(m, [k])) for m in METRICS}}


def _round(v: float | None) -> float | None:
    return None if v is None else round(float(v), 4)


def _verdict(out: dict, undecided: list[str]) -> str:
    t, c = out["files_with_maps"]["treated"], out["files_with_maps"]["control"]
    if t < MIN_FILES or c < MIN_FILES:
        return (f"too few files to tell: {t} treated and {c} control files have maps since "
                f"their first decision; at least {MIN_FILES} each are needed for an interval")
    if not undecided:
        return "every difference's 95% interval excludes zero"
    needs = [f"{m} needs ~{out[m]['more_files_needed']} more decided files"
             for m in undecided if out[m]["more_files_needed"]]
    return (f"too few files to tell for {', '.join(undecided)}: the 95% interval includes zero"
            + (f" ({'; '.join(needs)} at the measured spread)" if needs else ""))


def plot(result: dict, png: Path) -> None:
    """Left: each metric's difference with its interval; right: node locality before and
    after the first decision, per file, by group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    labels = {"node_locality": "node locality", "delay_wait_s": "delay wait s/map",
              "map_s": "map s"}
    for k, m in enumerate(METRICS):
        r = result[m]
        if r["diff"] is None:
            continue
        err = None
        if r["ci95"]:
            err = [[r["diff"] - r["ci95"][0]], [r["ci95"][1] - r["diff"]]]
        ax1.errorbar([k], [r["diff"]], yerr=err, fmt="o", capsize=6)
    ax1.axhline(0, color="grey", lw=0.8)
    ax1.set_xticks(range(len(METRICS)), [labels[m] for m in METRICS])
    ax1.set_title("treated - control (95% CI, bootstrap over files)")
    for name, color in (("treated", "tab:blue"), ("control", "tab:orange")):
        pts = [(p["before"]["node_locality"], p["after"]["node_locality"])
               for p in result["per_file"] if p["group"] == name
               and p["before"]["node_locality"] is not None]
        if pts:
            ax2.scatter(*zip(*pts), label=name, color=color, alpha=0.7)
    ax2.plot([0, 1], [0, 1], color="grey", lw=0.8)
    ax2.set_xlabel("node locality before first decision")
    ax2.set_ylabel("after")
    ax2.set_title("per file")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def text(r: dict) -> str:
    """The holdout's read-out as `dsbra impact` prints it."""
    lines = [f"{', '.join(r['dirs'])}: files treated {r['files']['treated']}, control "
             f"{r['files']['control']}; maps since the first decision treated "
             f"{r['maps']['treated']}, control {r['maps']['control']}"]
    if r["dirs_without_decisions"]:
        lines.append(f"  no file decided (no draws) in {', '.join(r['dirs_without_decisions'])}")
    for m in METRICS:
        x = r[m]
        ci = "n/a" if x["ci95"] is None else f"[{x['ci95'][0]}, {x['ci95'][1]}]"
        lines.append(f"  {m:14} treated {x['treated']}  control {x['control']}  diff "
                     f"{x['diff']}  95% CI {ci}")
    lines.append(r["verdict"])
    return "\n".join(lines)
