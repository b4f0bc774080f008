#!/usr/bin/env python3
"""Collector cost per poll: HTTP requests and CPU, at 100 running jobs.

    .venv/bin/python benchmarks/bench_observe.py [--jobs 100] [--repeat 5]

The 100-job scale is measured on *replayed* responses: the exchanges captured from the real
cluster in tests/fixtures/captured/hadoop-3.4.2/collector-binary (one grep job followed from
submission to its final history file) are served for N jobs at once. Each synthetic job gets
the captured job's answers with its ids rewritten (same length, so the Avro binary history
file stays valid), and the ResourceManager's running-apps listing lists all N. The collector
code is the real one, down to the ``requests`` transport. Reported per poll: requests (every
HTTP exchange, redirects included) and collector CPU (``time.process_time``), for the first
poll (N new jobs: conf, split files, history directory) and the steady polls after it, as the
median and range over ``--repeat`` runs. Results: benchmarks/results/bench_observe.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dsbra.bench.synthetic import COLLECTOR_CAPTURE, replay_collector
from dsbra.stats import repeats_summary

ROOT = Path(__file__).resolve().parents[1]


def one_run(n_jobs: int) -> dict:
    adapter, c = replay_collector(ROOT / COLLECTOR_CAPTURE, n_jobs)
    c.settings()
    polls = []
    for _ in range(adapter.polls_running):
        r0, c0 = adapter.requests, time.process_time()
        c.poll()
        polls.append({"requests": adapter.requests - r0, "cpu_s": time.process_time() - c0,
                      "running_jobs": len(c.jobs)})
    return {"polls": polls, "counted_tasks": len(c.pending)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    runs = [one_run(args.jobs) for _ in range(args.repeat)]

    first = [r["polls"][0] for r in runs]
    steady = [p for r in runs for p in r["polls"][1:]]
    worst = [max(p["cpu_s"] for p in r["polls"]) for r in runs]
    result = {
        "jobs": args.jobs, "repeat": args.repeat, "polls_per_run": len(runs[0]["polls"]),
        "source": "replayed captured responses (collector-binary), ids rewritten per job",
        "first_poll": {"requests": repeats_summary([p["requests"] for p in first], 4),
                       "cpu_s": repeats_summary([p["cpu_s"] for p in first], 4)},
        "steady_poll": {"requests": repeats_summary([p["requests"] for p in steady], 4),
                        "cpu_s": repeats_summary([p["cpu_s"] for p in steady], 4)},
        "worst_poll_cpu_s": repeats_summary(worst, 4),
        "counted_tasks": runs[0]["counted_tasks"],
        "target": "<= 1 s collector CPU per poll at 100 running jobs",
        "command": f".venv/bin/python benchmarks/bench_observe.py --jobs {args.jobs} "
                   f"--repeat {args.repeat}",
    }
    out = ROOT / "benchmarks" / "results" / "bench_observe.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
