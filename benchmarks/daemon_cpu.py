#!/usr/bin/env python3
"""The daemon's own CPU in a sitting's daemon arms, and what its fast polls cost (issue 68).

Per run (dsbra.bench.analysis.daemon_run_cpu): the daemon's CPU over its life as a percent of
the machine's two CPUs (``summary.json``), and its fast polls' CPU (each recent round's
``fast_poll`` in the daemon's ``status.json``). Per arm the mean percent with its 95%
t-interval; with ``--baseline ARM``, each other arm's percent minus the baseline's, paired by
repetition. (`dsbra report`'s "The daemon's own cost" gives each arm's mean and spread; the
pairing and the fast polls are what this adds.) Writes RESULTS/daemon-cpu.json.

    .venv/bin/python benchmarks/daemon_cpu.py benchmarks/results/bench-hotspot-fast-poll-cost \\
        --baseline dsbra-dry-run-amshare0.75
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dsbra.bench.analysis import daemon_run_cpu, paired_by_rep
from dsbra.errors import InputError
from dsbra.stats import t_interval


def rounded(interval):
    """(mean, low, high) to 2 decimals; None (one run) stays None."""
    return interval and [round(x, 2) for x in interval]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a run_bench_matrix.py --out directory")
    ap.add_argument("--baseline", help="the arm (directory name) to pair the others with")
    a = ap.parse_args()
    rows = {f"{run.parent.name}/{run.name}": cost
            for run in sorted(a.results.glob("*/rep*")) if (run / "summary.json").exists()
            and (cost := daemon_run_cpu(run)) is not None}
    if not rows:
        print(f"daemon_cpu.py: no daemon run with a summary.json under {a.results}", file=sys.stderr)
        return 2
    out = {"runs": rows, "arms": {}, "command": " ".join(["benchmarks/daemon_cpu.py", *sys.argv[1:]])}
    for name, r in rows.items():
        poll = f", {r['fast_polls']} fast polls {r['ms_per_fast_poll']:.1f} ms each" if r["fast_polls"] else ""
        print(f"{name}: {r['daemon_cpu_s']:.2f} CPU s over {r['wall_s']:.0f} s ({r['rounds']} rounds), "
              f"{r['daemon_cpu_pct']:.2f}% of 2 CPUs{poll}; load at start {r['load_avg_start']}")
    for arm in sorted({name.split("/")[0] for name in rows}):
        runs = [r for name, r in rows.items() if name.split("/")[0] == arm]
        out["arms"][arm] = {"daemon_cpu_pct": rounded(t_interval([r["daemon_cpu_pct"] for r in runs]))}
        if polled := [r["ms_per_fast_poll"] for r in runs if r["fast_polls"]]:
            out["arms"][arm]["ms_per_fast_poll"] = rounded(t_interval(polled))
        print(f"{arm}: " + ", ".join(f"{k} {v}" for k, v in out["arms"][arm].items()))
    if a.baseline:
        try:
            out["paired"] = paired_by_rep(rows, a.baseline, {"daemon_cpu_pct": lambda r: r["daemon_cpu_pct"]})
        except InputError as exc:
            print(f"daemon_cpu.py: {exc}", file=sys.stderr)
            return 2
        for arm, diff in out["paired"].items():
            print(f"{arm} - {a.baseline}, paired by repetition: {diff}")
    (a.results / "daemon-cpu.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
