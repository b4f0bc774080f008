"""What `dsbra cluster up --ha` costs over the default cluster: seconds to ready, summed RSS;
with automatic failover (ZooKeeper, two ZKFCs; the default) and with manual failover.

Each mode is brought up cold (`dsbra cluster up`, then `down --purge`) ``--repeats`` times on a
network of its own (name prefix, subnet and ports no test slot or other benchmark uses); after
``--settle`` idle seconds the VmRSS of every process of the cluster is summed. Prints JSON and
writes it to benchmarks/results/cluster-modes.json (every run appended to
cluster-modes-history.jsonl).

    .venv/bin/python benchmarks/bench_cluster_modes.py --repeats 2 --workers 4
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bench_cluster  # noqa: E402
from bench_cluster import rss_bytes, summary  # noqa: E402

from dsbra.cluster import daemons as dmn  # noqa: E402

STATE = ROOT / ".dsbra" / "bench-cluster-modes"
NET = ["--prefix", "dsbram", "--subnet", "10.81.0.0/24", "--port-offset", "8500"]
MODES = {"default": [], "ha": ["--ha"], "ha-manual": ["--ha", "--ha-failover", "manual"]}


def cli(*args: str) -> subprocess.CompletedProcess:
    return bench_cluster.cli(*args, state=STATE)


def measure(flags: list[str], workers: int, settle_s: float) -> tuple[float, float, int]:
    """One cold bring-up: (seconds to ready, summed RSS in GiB, processes)."""
    start = time.monotonic()
    cli("up", "--workers", str(workers), *NET, *flags)
    seconds = time.monotonic() - start
    time.sleep(settle_s)
    pids = dmn.state_processes(STATE.resolve())
    rss = rss_bytes(pids) / 2**30
    cli("down", "--purge")
    return seconds, rss, len(pids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--settle", type=float, default=15.0, help="idle seconds before measuring RSS")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "dsbra", "cluster", "down", "--purge", "--state-dir", str(STATE)],
                   capture_output=True)
    load_before = os.getloadavg()
    runs: dict[str, dict[str, list]] = {m: {"up": [], "rss": [], "processes": []} for m in MODES}
    for _ in range(args.repeats):  # modes interleaved, so a busy spell of the machine hits both
        for mode, flags in MODES.items():
            seconds, rss, procs = measure(flags, args.workers, args.settle)
            runs[mode]["up"].append(seconds)
            runs[mode]["rss"].append(rss)
            runs[mode]["processes"].append(procs)
            print(f"{mode}: up {seconds:.1f} s, RSS {rss:.2f} GiB, {procs} processes", file=sys.stderr)
    results = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/bench_cluster_modes.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "workers": args.workers,
        "modes": {mode: {"up_seconds": summary(r["up"]), "idle_rss_gib": summary(r["rss"]),
                         "processes": r["processes"]} for mode, r in runs.items()},
        "loadavg_1m": {"before": round(load_before[0], 1), "after": round(os.getloadavg()[0], 1)},
        "notes": "up: `dsbra cluster up` wall time from a cold start until ready (with --ha: both "
                 "NameNodes formatted/bootstrapped and answering, one NameNode and one RM active "
                 "(ha: elected through ZooKeeper; ha-manual: nn1 and rm1 made active by haadmin), "
                 "every DataNode and NodeManager registered with the active ones). RSS: sum of VmRSS "
                 f"of every process of the cluster after {args.settle:.0f} s idle. --ha adds a "
                 "NameNode, a ResourceManager and three JournalNodes; its automatic failover "
                 "(ha) a ZooKeeper server and two ZKFCs. The machine is shared: expect noise.",
    }
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "cluster-modes.json").write_text(json.dumps(results, indent=2) + "\n")
    with open(out / "cluster-modes-history.jsonl", "a") as history:  # every run: the spread across runs
        history.write(json.dumps(results) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
