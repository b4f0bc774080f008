"""What each mode of `dsbra cluster up` costs: seconds to ready and the idle cluster's summed RSS.

Modes (--modes, all by default): default, ha (--ha, automatic failover), ha-manual (--ha
--ha-failover manual), kerberos-tls (--kerberos --tls), tls (--tls), ha-kerberos-tls (--ha
--kerberos --tls). Each is brought up cold (`dsbra cluster up`, then `down --purge`) --repeats times,
modes interleaved so a busy spell of the shared machine hits them alike, on a network of its
own (--prefix, --subnet, --port-offset: pick ones no test slot or other cluster uses). Seconds
to ready is the `up` command's wall time: it returns when every DataNode and NodeManager
registered with the active NameNode and RM, HDFS left safe mode and the JobHistoryServer
answers (through https and SPNEGO in the secure modes), so it includes making the CA, the
realm and the keytabs, or bootstrapping and activating the standbys. RSS is VmRSS summed over
every process of the cluster after --settle idle seconds, the KDC's included. The 1-minute
load average at each `up` is kept beside the numbers.

    .venv/bin/python benchmarks/bench_cluster_modes.py --repeats 3 --workers 4
writes benchmarks/results/cluster-modes.json (this run; --out to change) and appends the run
to cluster-modes-history.jsonl beside it, which also holds the runs of bench_secure_cluster.py,
the script this one replaced.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from dsbra.bench.sitting import cluster_cli
from dsbra.cluster import processes as procs
from dsbra.cluster import state as st
from dsbra.stats import repeats_summary

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".dsbra" / "bench-cluster-modes"
MODES = {"default": [], "ha": ["--ha"], "ha-manual": ["--ha", "--ha-failover", "manual"],
         "kerberos-tls": ["--kerberos", "--tls"], "tls": ["--tls"],
         "ha-kerberos-tls": ["--ha", "--kerberos", "--tls"]}
OUT = ROOT / "benchmarks" / "results" / "cluster-modes.json"


def cli(*args: str) -> subprocess.CompletedProcess:
    return cluster_cli(*args, state=STATE)


def cluster_pids() -> list[int]:
    """Every process of the running cluster: its daemons and their children, and the KDC."""
    pids = set(procs.state_processes(STATE.resolve()))
    kdc = (st.load(STATE.resolve() / "state.json") or {}).get("kdc")
    if kdc:
        pids.add(kdc["pid"])
    return sorted(pids)


def measure(flags: list[str], net: list[str], workers: int, settle_s: float) -> tuple[float, float, int]:
    """One cold bring-up: (seconds to ready, summed RSS in GiB, processes)."""
    start = time.monotonic()
    cli("up", "--workers", str(workers), *net, *flags)
    seconds = time.monotonic() - start
    time.sleep(settle_s)
    pids = cluster_pids()
    rss = procs.rss_bytes(pids) / 2**30
    cli("down", "--purge")
    return seconds, rss, len(pids)


def hold_bench_lock():
    """One run at a time: two runs at once share the machine's two cores (and the state dir),
    so each would measure the other."""
    STATE.parent.mkdir(parents=True, exist_ok=True)
    handle = open(STATE.parent / "bench-cluster-modes.lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit("another bench_cluster_modes.py run is under way; wait for it to end") from None
    return handle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES),
                        help="the modes to bring up, in this order within each repeat")
    parser.add_argument("--repeats", type=int, default=3, help="cold `up` runs per mode")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--settle", type=float, default=20.0, help="idle seconds before measuring RSS")
    parser.add_argument("--prefix", default="dsbram", help="the cluster's network name prefix")
    parser.add_argument("--subnet", default="10.81.0.0/24", help="the cluster's network")
    parser.add_argument("--port-offset", default="8500", help="added to every master port")
    parser.add_argument("--out", type=Path, default=OUT,
                        help="this run's JSON; the run is also appended to <out stem>-history.jsonl beside it")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    net = ["--prefix", args.prefix, "--subnet", args.subnet, "--port-offset", args.port_offset]
    lock = hold_bench_lock()
    subprocess.run([sys.executable, "-m", "dsbra", "cluster", "down", "--purge", "--state-dir", str(STATE)],
                   capture_output=True)
    load_before = os.getloadavg()
    runs = {m: {"up": [], "rss": [], "processes": [], "load": []} for m in args.modes}
    for _ in range(args.repeats):
        for mode in args.modes:
            runs[mode]["load"].append(round(os.getloadavg()[0], 2))
            seconds, rss, procs = measure(MODES[mode], net, args.workers, args.settle)
            runs[mode]["up"].append(seconds)
            runs[mode]["rss"].append(rss)
            runs[mode]["processes"].append(procs)
            print(f"{mode}: up {seconds:.1f} s, RSS {rss:.2f} GiB, {procs} processes", file=sys.stderr)
    lock.close()
    results = {
        "benchmark": "cluster-modes",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/bench_cluster_modes.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "workers": args.workers,
        "settle_s": args.settle,
        "modes": {mode: {"flags": MODES[mode], "up_seconds": repeats_summary(r["up"]),
                         "idle_rss_gib": repeats_summary(r["rss"]),
                         "processes": r["processes"], "load_at_up": r["load"]} for mode, r in runs.items()},
        "loadavg_1m": {"before": round(load_before[0], 1), "after": round(os.getloadavg()[0], 1)},
        "notes": "up: `dsbra cluster up` wall time from a cold start until ready (--ha: both NameNodes "
                 "formatted/bootstrapped and answering, one NameNode and one RM active (ha: elected "
                 "through ZooKeeper; ha-manual: nn1 and rm1 made active by haadmin); --kerberos/--tls: "
                 "the CA, realm and keytabs made, readiness checked through https and SPNEGO). RSS: sum "
                 f"of VmRSS of every process of the cluster, the KDC's included, after {args.settle:.0f} s "
                 "idle. --ha adds a NameNode, a ResourceManager and three JournalNodes, and with automatic "
                 "failover (ha) a ZooKeeper server and two ZKFCs. The machine is shared: expect noise; "
                 "compare modes within one run.",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    with open(args.out.with_name(f"{args.out.stem}-history.jsonl"), "a") as history:  # the spread across runs
        history.write(json.dumps(results) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
