#!/usr/bin/env python3
"""Does dsbra's placement plugin slow the NameNode? Its cost per call against HDFS's default.

    .venv/bin/python benchmarks/bench_placement_speed.py [--hadoop-version 3.4.2] [--rounds 15]
        [--warmup 3] [--out benchmarks/results/placement/speed.json]

Runs placement/src/test/.../PlacementSpeed.java (compiled by Maven with the plugin's tests)
on synthetic topologies of 6, 200 and 2,000 DataNodes: every round times the same calls with
BlockPlacementPolicyDefault and with BlockPlacementPolicyDsbraHeat (a heat for every node, one
raised file, one lowered file with a block per call), alternating which goes first.
Operations: ``delete-lowered`` (chooseReplicasToDelete of a block of the lowered file, four
holders on two racks, down to 3: by heat), ``delete-other`` (the same holders down to 2: any
other file's excess replicas, the default's behind the plugin's lookup), ``replicate-raised``
(one new copy of a raised file's block: the heat-aware draw), ``replicate-other`` (one new copy
of another file's block: the default's draw behind the plugin's check), ``write`` (a new
file's three targets: the default's). The ratio heat/default per round, after the warm-up
rounds, gives a geometric mean with a 95% t-interval. Run it on a quiet machine; the load
average before and after is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dsbra.stats import T95

ROOT = Path(__file__).resolve().parents[1]
MAIN = "org.apache.hadoop.hdfs.server.blockmanagement.PlacementSpeed"
#: (DataNodes, racks, calls per round and operation)
TOPOLOGIES = [(6, 2, 20000), (200, 10, 5000), (2000, 40, 1000)]


def classpath(version: str) -> str:
    """The plugin's classes and test classes (PlacementSpeed) and Hadoop's jars, by Maven."""
    build = ROOT / ".dsbra" / "placement" / version / "build"
    with tempfile.NamedTemporaryFile("r", suffix=".cp") as out:
        subprocess.run(["mvn", "-B", "-q", "-f", str(ROOT / "placement" / "pom.xml"), f"-Dhadoop.version={version}",
                        "test-compile", "dependency:build-classpath", f"-Dmdep.outputFile={out.name}",
                        "-Dmdep.includeScope=test"], check=True)
        return os.pathsep.join([str(build / "test-classes"), str(build / "classes"), out.read().strip()])


def run(cp: str, nodes: int, racks: int, rounds: int, calls: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(["java", "-Xmx1g", "-cp", cp, MAIN, str(nodes), str(racks), str(rounds), str(calls),
                               str(Path(tmp) / "heat.json")], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def summarize(rows: list[dict], warmup: int) -> dict:
    out = {}
    for op in dict.fromkeys(r["op"] for r in rows):
        kept = [r for r in rows if r["op"] == op and r["round"] >= warmup]
        logs = np.log([r["heat_ns"] / r["default_ns"] for r in kept])
        half = T95[min(len(logs) - 1, len(T95)) - 1] * logs.std(ddof=1) / np.sqrt(len(logs))
        out[op] = {"default_ns_median": round(float(np.median([r["default_ns"] for r in kept])), 1),
                   "heat_ns_median": round(float(np.median([r["heat_ns"] for r in kept])), 1),
                   "ratio": round(float(np.exp(logs.mean())), 3),
                   "ratio_ci95": [round(float(np.exp(logs.mean() - half)), 3),
                                  round(float(np.exp(logs.mean() + half)), 3)],
                   "rounds": len(kept)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hadoop-version", default="3.4.2")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3, help="first rounds left out (JIT warm-up)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "placement" / "speed.json")
    args = parser.parse_args()
    if args.rounds - args.warmup < 3:
        sys.exit("bench_placement_speed: needs at least 3 rounds after the warm-up")
    cp = classpath(args.hadoop_version)
    load_before = os.getloadavg()
    started = time.time()
    results = []
    for nodes, racks, calls in TOPOLOGIES:
        rows = run(cp, nodes, racks, args.rounds, calls)
        results.append({"datanodes": nodes, "racks": racks, "calls_per_round": calls,
                        "ops": summarize(rows, args.warmup), "rounds": rows})
        print(f"{nodes} DataNodes: " + ", ".join(f"{op} x{s['ratio']} [{s['ratio_ci95'][0]}, {s['ratio_ci95'][1]}]"
                                                 f" ({s['heat_ns_median'] / 1000:.1f} vs {s['default_ns_median'] / 1000:.1f} us)"
                                                 for op, s in results[-1]["ops"].items()))
    doc = {"command": "python benchmarks/bench_placement_speed.py " + " ".join(sys.argv[1:]),
           "hadoop_version": args.hadoop_version, "rounds": args.rounds, "warmup": args.warmup,
           "seconds": round(time.time() - started, 1), "load_before": [round(x, 2) for x in load_before],
           "load_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(), "topologies": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"load {doc['load_before'][0]} -> {doc['load_after'][0]}; written {args.out}")


if __name__ == "__main__":
    main()
