"""Why a map ran off its data: the level at which the Fair Scheduler granted its container.

6.8 of docs/benchmark.md found dsbra's runs losing node locality on the files it did not
raise, mostly in maps launched within the locality delay, and named two Hadoop behaviours that
would give it. This script tells them apart, per map:

- its container was granted **NODE_LOCAL** on a node that does not hold the map's block: the
  scheduler granted it for another map's ask on that node (or an ask the ApplicationMaster had
  not yet withdrawn), and the ApplicationMaster, finding no map local to that node left, handed
  it to this one (RMContainerAllocator assigns by host, then rack, then any);
- its container was granted **RACK_LOCAL or OFF_SWITCH**: the job's locality delay had run out
  (the Fair Scheduler's clock per job and priority, FSAppAttempt.getAllowedLocalityLevelByTime).

Recording, during a sitting (`run_bench_matrix.py --record-grants`, the cluster up): the
ResourceManager's FSAppAttempt logger is raised to DEBUG through its /logLevel servlet, where it
logs each allocation ("allocate: applicationAttemptId=... container=... host=... type=...");
after each run RUN/grants.json gets those of the run's jobs and every map attempt of them from
the JobHistoryServer (its container, node and launch). Analysis, offline from committed runs:

    python benchmarks/container_grants.py RESULTS --baseline static-amshare0.75

writes RESULTS/container-grants.json and prints per run the maps by locality and grant level,
and each other arm's paired difference from the baseline (by repetition, 95% t-interval).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dsbra.bench.analysis import CAUSES, classify, paired_causes
from dsbra.errors import InputError


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a run_bench_matrix.py results directory recorded with --record-grants")
    ap.add_argument("--baseline", default=None,
                    help="an arm (a directory of RESULTS) to pair every other arm with, by repetition")
    a = ap.parse_args()
    rows = {str(d.relative_to(a.results)): classify(d)
            for d in sorted(a.results.glob("*/rep*")) if (d / "grants.json").exists()}
    if not rows:
        raise SystemExit(f"{a.results}: no run with grants.json (record them with run_bench_matrix.py --record-grants)")
    doc = {"command": "python benchmarks/container_grants.py " + " ".join(sys.argv[1:]), "causes": CAUSES,
           "runs": rows}
    if a.baseline:
        try:
            doc["paired_with"], doc["paired"] = a.baseline, paired_causes(rows, a.baseline)
        except InputError as exc:
            ap.error(str(exc))
    (a.results / "container-grants.json").write_text(json.dumps(doc, indent=1) + "\n")
    print("| run | maps | node-local | handed on | delay expired | unmatched, ambiguous |")
    for name, r in rows.items():
        node_local = sum(r["by_locality_and_grant"]["node_local"].values())
        print(f"| {name} | {r['maps']} | {node_local} | {r['handed_on']} | {r['delay_expired']} | "
              f"{r['unmatched']}, {r['ambiguous']} |")
    for arm, diff in doc.get("paired", {}).items():
        print(f"| {arm} - {a.baseline} ({diff['pairs']} pairs) | | | "
              + " | ".join(f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}]" for m, lo, hi in (diff[c] for c in CAUSES)) + " | |")


if __name__ == "__main__":
    main()
