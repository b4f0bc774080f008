"""Node locality of the hot file's maps and of the other maps, an arm against the baseline,
paired by repetition (docs/benchmark.md 6.8).

A replica added to the hot file lets its maps run node-local on more nodes, and the other files'
maps may then run off theirs more often. This script shows both sides of that trade from the
runs' own ``tasks.parquet`` (the hot block is the one most maps of the baseline read), and
splits the off-node maps by whether they launched within the delay D of becoming pending (so
not because their own wait ran out) or after it.

    python benchmarks/locality_by_file.py benchmarks/results/bench-hotspot-long \\
        benchmarks/results/bench-hotspot-long-oracle --arm dsbra-amshare0.75 --baseline static-amshare0.75
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

from dsbra.bench.analysis import locality_split, off_node_by_wait, read_tasks
from dsbra.stats import t_interval


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+", help="result sets of run_bench_matrix.py")
    ap.add_argument("--arm", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--delay-s", type=float, default=10.0, help="the cluster's node-locality delay D")
    args = ap.parse_args()
    rows = []
    for results in args.results:
        for base in sorted((results / args.baseline).glob("rep*/tasks.parquet")):
            other = results / args.arm / base.parent.name / "tasks.parquet"
            if not other.exists():
                continue
            base_tasks, arm_tasks = read_tasks(base), read_tasks(other)
            hot = collections.Counter(base_tasks["block_id"]).most_common(1)[0][0]
            rows.append((f"{results.name}/{base.parent.name}", hot,
                         locality_split(base_tasks, hot) + off_node_by_wait(base_tasks, args.delay_s),
                         locality_split(arm_tasks, hot) + off_node_by_wait(arm_tasks, args.delay_s)))
    print(f"| pair | hot block | hot maps local %: {args.baseline} / {args.arm} | "
          f"other maps local %: {args.baseline} / {args.arm} | off-node maps launched under / over "
          f"{args.delay_s:g} s after pending: {args.baseline}; {args.arm} |")
    print("| --- | --- | --- | --- | --- |")
    for name, hot, (bh, bo, bu, bv), (ah, ao, au, av) in rows:
        print(f"| {name} | {hot} | {bh:.1f} / {ah:.1f} | {bo:.1f} / {ao:.1f} | {bu} / {bv}; {au} / {av} |")
    for label, i in (("hot maps, local %", 0), ("other maps, local %", 1),
                     (f"off-node maps launched under {args.delay_s:g} s", 2),
                     (f"off-node maps launched after {args.delay_s:g} s", 3)):
        ci = t_interval([a[i] - b[i] for _, _, b, a in rows])
        if ci:
            print(f"\n{args.arm} - {args.baseline}, {label}: {ci[0]:+.1f} "
                  f"[{ci[1]:+.1f}, {ci[2]:+.1f}] over {len(rows)} pairs")


if __name__ == "__main__":
    main()
