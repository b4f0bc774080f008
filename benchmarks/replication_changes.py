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
import collections
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq

DECISION = re.compile(r"^ts=(?P<ts>\S+ \S+) .*logger=dsbra\.act\.apply decision "
                      r"round=(?P<round>\d+) file=(?P<file>\S+) "
                      r"replication=(?P<old>\d+)->(?P<new>\d+) .*rule=(?P<rule>\S+) .*outcome=sent")


def sent_changes(log: Path) -> list[dict]:
    """The replication changes a run's daemon sent, in order."""
    out = []
    for line in log.read_text().splitlines():
        m = DECISION.search(line)
        if m:
            at = datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)
            out.append({"round": int(m["round"]), "file": m["file"], "old": int(m["old"]),
                        "new": int(m["new"]), "rule": m["rule"], "wall_s": at.timestamp()})
    return out


def readers(schedule: dict) -> dict[str, list[str]]:
    """The ids of the schedule's jobs that read each input file."""
    out = collections.defaultdict(list)
    for job in schedule["jobs"]:
        for path in set(job["inputs"]):
            out[path].append(job["job_id"])
    return out


def churn(changes: list[dict]) -> dict:
    """Per run: files raised; of those, lowered after a raise (with the rounds from the raise to
    the first lowering) and raised again after being lowered."""
    raised, lowered, lowered_at, reraised = set(), {}, {}, set()
    last_raise: dict[str, int] = {}
    for c in changes:
        f = c["file"]
        if c["new"] > c["old"]:
            if f in lowered:
                reraised.add(f)
            raised.add(f)
            last_raise[f] = c["round"]
        elif f in last_raise and f not in lowered:
            lowered[f] = c["round"] - last_raise[f]
            lowered_at[f] = c["wall_s"]
    return {"raised": sorted(raised), "lowered_after_rounds": lowered, "lowered_at": lowered_at,
            "raised_again": sorted(reraised)}


def summarize(result_sets: list[Path]) -> list[dict]:
    rows = []
    for rs in result_sets:
        schedule = json.loads((rs / "schedule.json").read_text())
        reads, jobs = readers(schedule), len(schedule["jobs"])
        for log in sorted(rs.glob("*/rep*/daemon.log")):
            run = log.parent
            t0_s = json.loads((run / "summary.json").read_text())["t0_wall_ms"] / 1000
            submitted = dict(zip(*pq.read_table(run / "jobs.parquet", columns=["job_id", "submit_s"])
                                 .to_pydict().values()))
            c = churn(sent_changes(log))
            lowered_at = {f: at - t0_s for f, at in c.pop("lowered_at").items()}
            after = {f: sum(submitted[j] > at for j in reads.get(f, [])) for f, at in lowered_at.items()}
            any_after = {f: sum(t > at for t in submitted.values()) for f, at in lowered_at.items()}
            rows.append({"result_set": rs.name, "arm": run.parent.name, "rep": run.name,
                         "jobs": jobs, "hottest_jobs": max(map(len, reads.values())), **c,
                         "jobs_reading": {f: len(reads.get(f, [])) for f in c["raised"]},
                         "jobs_reading_after_lowering": after, "jobs_after_lowering": any_after})
    return rows


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
    rows = summarize(a.result_sets)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
