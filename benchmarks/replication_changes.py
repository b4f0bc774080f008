"""What the daemon raised and lowered in each benchmark run, and how hot those files were.

The daemon logs one ``decision`` line per replication change it sent (``dsbra.act.apply``,
key=value). This script reads those lines from every ``<arm>/rep*/daemon.log`` of the result
sets given and the jobs of each set's ``schedule.json``, and answers whether the daemon churns:
how many files it raised, how many of those it lowered again and after how many rounds, how many
it raised again after that, how many of the schedule's jobs read each such file, how many of
those were submitted after the daemon lowered it (a lowering with none after it only gave back
a copy nobody would have read), and how many jobs at all were (none: the schedule was over, and
the run says nothing of what the daemon would do mid-schedule). The log's times are read as
UTC, as the bundled cluster's hosts write them.

    python benchmarks/replication_changes.py benchmarks/results/bench-hotspot-long \\
        benchmarks/results/bench-hotspot-long-oracle benchmarks/results/bench-hotspot-amshare0.75-6reps
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dsbra.bench.churn import churn_by_run


def table(rows: list[dict]) -> str:
    lines = ["| result set | arm | rep | files raised | lowered again (rounds after the raise; "
             "jobs reading it submitted later / all jobs submitted later) | raised again "
             "| jobs reading each raised file (of jobs; hottest) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lowered = ", ".join(f"{Path(f).name} ({n}; {r['jobs_reading_after_lowering'][f]} / "
                            f"{r['jobs_after_lowering'][f]})"
                            for f, n in r["lowered_after_rounds"].items())
        reading = ", ".join(f"{Path(f).name} {n}" for f, n in r["jobs_reading"].items())
        lines.append(f"| {r['result_set']} | {r['arm']} | {r['rep']} | {len(r['raised'])} | "
                     f"{lowered or '-'} | {len(r['raised_again'])} | "
                     f"{reading or '-'} (of {r['jobs']}; {r['hottest_jobs']}) |")
    raised = sum(len(r["raised"]) for r in rows)
    lowered = sum(len(r["lowered_after_rounds"]) for r in rows)
    again = sum(len(r["raised_again"]) for r in rows)
    later = sorted(n for r in rows for n in r["jobs_reading_after_lowering"].values())
    over = sum(n == 0 for r in rows for n in r["jobs_after_lowering"].values())
    lines.append(f"\n{len(rows)} runs: {raised} files raised, {lowered} of them lowered again "
                 f"({over} after the schedule's last submission; {sum(n == 0 for n in later)} "
                 f"with no job reading them submitted later, the others "
                 f"{', '.join(map(str, [n for n in later if n]))} jobs), {again} raised "
                 "again after that.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result_sets", nargs="+", type=Path,
                    help="result set directories (schedule.json and <arm>/rep*/daemon.log)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    a = ap.parse_args()
    for rs in a.result_sets:
        if not (rs / "schedule.json").is_file():
            ap.error(f"{rs}: no schedule.json (not a run_bench_matrix.py result set)")
    rows = churn_by_run(a.result_sets)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
