"""What one map-only GrepScan job of --maps one-block maps costs the machine in CPU, by process
(dsbra.bench.cpu), repeated --jobs times one after another on the bundled cluster, which must be
up (`dsbra cluster up`) and otherwise idle, after one job that is not counted (the first job
after start-up also pays for the cluster settling). Writes OUT/job-cpu.json and OUT/job-cpu.md.

    python benchmarks/job_cpu_by_process.py --out benchmarks/results/job-cpu --maps 9 --jobs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from dsbra.bench.cpu import job_cpu
from dsbra.cluster import state as st
from dsbra.cluster.paths import StateLayout


def _mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.1f} ± {sd:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--maps", type=int, default=9)
    ap.add_argument("--jobs", type=int, default=3)
    a = ap.parse_args()
    if a.maps < 1 or a.jobs < 2:
        ap.error(f"--maps must be >= 1 and --jobs >= 2 (a spread needs two), got {a.maps} and {a.jobs}")
    layout = StateLayout.at()
    data = st.load(layout.state_file)
    if data is None or data.get("phase") != "up":
        ap.error("the bundled cluster is not up: start it with `dsbra cluster up`")
    command = "python benchmarks/job_cpu_by_process.py " + " ".join(sys.argv[1:])
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    job_cpu(layout, a.maps)  # the warm-up
    runs = []
    for i in range(a.jobs):
        runs.append(job_cpu(layout, a.maps))
        print(f"job {i + 1}: {sum(sum(v) for v in runs[-1].values()):.1f} CPU s", flush=True)
    classes = sorted({c for r in runs for c in r}, key=lambda c: -sum(sum(r.get(c, [])) for r in runs))
    lines = [f"# CPU of one GrepScan job of {a.maps} one-block maps, by process", "", f"`{command}`", "",
             f"{started}, {a.jobs} jobs one after another on the idle bundled cluster ({data['spec']['workers']} "
             f"workers); 1-minute load {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after. CPU seconds "
             "(utime + stime from /proc, sampled every 0.3 s) over each job, from its submission to the "
             "exit of its client, ApplicationMaster and maps, after one warm-up job; mean ± sd over the jobs.", "",
             "| process | processes a job | CPU s a job | CPU s a process |", "| --- | --- | --- | --- |"]
    for c in classes:
        per_job = [sum(r.get(c, [])) for r in runs]
        per_process = [x for r in runs for x in r.get(c, [])]
        lines.append(f"| {c} | {statistics.fmean(len(r.get(c, [])) for r in runs):.1f} | {_mean_sd(per_job)} | "
                     f"{statistics.fmean(per_process):.2f} |")
    lines.append(f"| all | | {_mean_sd([sum(sum(v) for v in r.values()) for r in runs])} | |")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "job-cpu.json").write_text(json.dumps({"command": command, "started": started,
                                                    "load_before": load_before, "runs": runs}, indent=1) + "\n")
    (a.out / "job-cpu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
