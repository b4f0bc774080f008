"""Which of a real daemon's raises `read_factor` would have kept: every committed run's own
windows, MapReduce, Hive and Spark (docs/spark.md "Cold files").

The daemon keeps each round's window as map records (``daemon-state/maps``: one row per task
with the block it read) and its raises in the journal. `read_factor` f only takes raises away
(a hot block must also be read at least f times as often as the window's average read block, or
as often as its most read one), so on the window a raise was decided from, the test says
whether the profile with f would have made it too. That is the first round's answer, not the
run's: the raises it drops change the replicas and waits of the windows after. Raises by the
fast poll's demand rule are left out (read_factor is the round's test).

The check of the reconstruction: the runs whose daemon ran with `read_factor` 2 (6.18's
``dsbra-popular``) keep every raise at 2.

    .venv/bin/python benchmarks/read_factor_on_real_windows.py benchmarks/results/bench-* \\
        --out benchmarks/results/read-factor-real-windows
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from dsbra.daemon.page import read_journal
from dsbra.experiment.records import read_map_records
from dsbra.policy.dsbra import popular_floor

STATE = "daemon-state"


def run_raises(run: Path, factors: list[float]) -> dict | None:
    """One run's raises by the round's hot rule, each judged on its own window: None when the
    run kept no map records or raised nothing."""
    state = run / STATE
    maps = read_map_records(state / "maps") if (state / "maps").is_dir() else None
    if maps is None or not maps.num_rows:
        return None
    maps = maps.filter(pc.is_valid(maps["block_id"]))
    ends = np.asarray(maps["window_end_ms"])
    files = np.asarray(maps["file"].to_pylist(), dtype=object)
    blocks = np.asarray(maps["block_id"])
    hot_file = collections.Counter(files).most_common(1)[0][0]
    windows = np.unique(ends)
    journal = read_journal(state / "journal.jsonl")
    raises = []
    for rec in journal:
        reason = rec.get("reason") or {}
        if rec.get("op") != "intent" or rec["target"] <= rec["before"] or reason.get("rule") != "hot":
            continue
        decided = windows[windows <= rec["ts"] * 1000]
        if not len(decided):
            continue
        in_window = ends == decided[-1]
        ids, counts = np.unique(blocks[in_window], return_counts=True)
        own = np.unique(blocks[in_window & (files == rec["path"])])
        reads = int(counts[np.isin(ids, own)].max()) if len(own) else 0
        floor = {f: popular_floor(float(counts.sum()), len(ids), float(counts.max()), f)
                 for f in factors}
        raises.append({"path": rec["path"], "round": rec["round"], "reads": reads,
                       "hot": rec["path"] == hot_file,
                       "kept": {f: reads >= floor[f] for f in factors}})
    if not raises:
        return None
    policies = sorted({(r.get("reason") or {}).get("policy", "?")
                       for r in journal if r.get("op") == "intent"})
    # the replay records its engine since it had a second one (2026-11-24); MapReduce's before
    engine = json.loads((run / "summary.json").read_text()).get("engine", "mapreduce")
    return {"run": run, "engine": engine, "hot_file": hot_file, "raises": raises,
            "policies": policies}


def kept_counts(raises: list[dict], f: float) -> tuple[int, int, int, int]:
    """(hot-file raises, those ``f`` keeps, other raises, those ``f`` keeps)."""
    hot = [x["kept"][f] for x in raises if x["hot"]]
    other = [x["kept"][f] for x in raises if not x["hot"]]
    return len(hot), sum(hot), len(other), sum(other)


def summary_rows(results: list[dict], factors: list[float]) -> list[list[str]]:
    rows = []
    for r in results:
        raises = r["raises"]
        n_hot, _, n_other, _ = kept_counts(raises, factors[0])
        row = [f"{r['run'].parent.parent.name}/{r['run'].parent.name}/{r['run'].name}",
               r["engine"], ", ".join(r["policies"]),
               str(len(raises)), f"{n_hot} / {n_other}",
               str(sum(x["reads"] < 2 for x in raises))]
        for f in factors:
            _, kept_hot, _, kept_other = kept_counts(raises, f)
            row.append(f"{kept_hot} / {kept_other}")
        rows.append(row)
    return rows


def totals(results: list[dict], factors: list[float]) -> list[list[str]]:
    """Per engine: raises of the hot file and of the others, and how many each f keeps."""
    rows = []
    for engine in ("mapreduce", "hive", "spark"):
        raises = [x for r in results if r["engine"] == engine for x in r["raises"]]
        if not raises:
            continue
        n_hot, _, n_other, _ = kept_counts(raises, factors[0])
        runs = sum(r["engine"] == engine for r in results)
        row = [engine, str(runs), f"{n_hot} / {n_other}"]
        for f in factors:
            _, kept_hot, _, kept_other = kept_counts(raises, f)
            row.append(f"{kept_hot} of {n_hot} / {kept_other} of {n_other}")
        rows.append(row)
    return rows


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+", help="result sets of run_bench_matrix.py")
    ap.add_argument("--read-factors", type=float, nargs="+", default=[1.5, 2.0, 3.0])
    ap.add_argument("--out", type=Path, default=None, help="write read-factor.md here")
    a = ap.parse_args()
    if any(f <= 0 for f in a.read_factors):
        ap.error("--read-factors must be above 0")
    runs = sorted(p.parent for res in a.results for p in res.glob(f"*/rep*/{STATE}"))
    if not runs:
        ap.error("no daemon runs (<set>/<arm>/rep*/daemon-state) under the given result sets")
    results = [r for r in (run_raises(run, a.read_factors) for run in runs) if r is not None]
    fs = [f"f={f:g} keeps hot / other" for f in a.read_factors]
    text = "\n\n".join([
        "# The daemon's raises on their own windows, and which read_factor keeps\n\n"
        "Raises by the round's hot rule, each judged on the window it was decided from "
        "(`benchmarks/read_factor_on_real_windows.py`); the hot file is the run's most read.",
        "## By engine\n\n" + table(["engine", "runs", "raises hot / other"] + fs,
                                   totals(results, a.read_factors)),
        "## By run\n\n" + table(["run", "engine", "policy", "raises", "hot / other",
                                 "read < 2 times (mismatch)"] + fs,
                                summary_rows(results, a.read_factors))])
    print(text)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "read-factor.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
