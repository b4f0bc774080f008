"""What `dsbra cluster up --kerberos --tls` costs: seconds to ready and the idle cluster's summed
RSS, against the default cluster, on the same machine and network names, alternating modes.

Runs its own cluster (own state dir, name prefix, subnet and ports). Seconds to ready is the
`dsbra cluster up` command's wall time (it returns when every DataNode and NodeManager
registered, HDFS left safe mode and the JobHistoryServer answers, through SPNEGO and https in
the secure mode), so it includes making the CA, the realm and the keytabs. RSS is summed over
every process of the cluster after --settle idle seconds, the KDC's included. The machine's
1-minute load average at each `up` is kept with the numbers: other work on it shows there.

    .venv/bin/python benchmarks/bench_secure_cluster.py --repeats 2
prints the JSON and writes it to benchmarks/results/secure-cluster.json.
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
from dsbra.cluster import state as st  # noqa: E402

STATE = ROOT / ".dsbra" / "bench-secure-cluster"
NET = ["--prefix", "dsbrasb", "--subnet", "10.81.0.0/24", "--port-offset", "4500"]
MODES = {"default": [], "kerberos+tls": ["--kerberos", "--tls"]}
OUT = ROOT / "benchmarks" / "results" / "secure-cluster.json"


def cli(*args: str) -> subprocess.CompletedProcess:
    return bench_cluster.cli(*args, state=STATE)


def cluster_pids() -> list[int]:
    pids = set(dmn.state_processes(STATE.resolve()))
    data = st.load(STATE.resolve() / "state.json") or {}
    if data.get("kdc"):
        pids.add(data["kdc"]["pid"])
    return sorted(pids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="cold `up` runs per mode")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds idle before measuring RSS")
    args = parser.parse_args()

    subprocess.run([sys.executable, "-m", "dsbra", "cluster", "down", "--state-dir", str(STATE)],
                   capture_output=True)
    ready: dict[str, list[float]] = {m: [] for m in MODES}
    rss: dict[str, list[float]] = {m: [] for m in MODES}
    load: dict[str, list[float]] = {m: [] for m in MODES}  # 1-minute load average at each up
    for _ in range(args.repeats):
        for mode, flags in MODES.items():  # alternating, so drift in the machine's load hits both
            load[mode].append(round(os.getloadavg()[0], 2))
            start = time.monotonic()
            cli("up", "--workers", str(args.workers), *NET, *flags)
            ready[mode].append(time.monotonic() - start)
            time.sleep(args.settle)
            rss[mode].append(rss_bytes(cluster_pids()) / 2**30)
            cli("down")
    doc = {
        "benchmark": "secure-cluster",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "workers": args.workers,
        "settle_s": args.settle,
        "modes": {m: {"seconds_to_ready": summary(ready[m]), "idle_rss_gib": summary(rss[m]),
                      "load_at_up": load[m]} for m in MODES},
    }
    text = json.dumps(doc, indent=2)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
