"""Measure the shaped network of a running bundled cluster: one HDFS block read node-local,
rack-local and off-rack (dsbra.bench.network), repeated, with the machine's load beside.

    dsbra cluster up --net-mbit 100 --replication 2 [--state-dir DIR ...]
    .venv/bin/python benchmarks/bench_network.py [--state-dir DIR] [--block-mb 64] [--repeats 5]
writes benchmarks/results/network.json (this run; --out to change). With --replay-summary (the
summary.json of a `dsbra bench replay` on the same cluster) it also relates the read times to
the measured node-local map time: the non-local map time it implies (local map + the remote
read's extra seconds) and the rate at which a non-local map would take twice a local one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

from dsbra.bench.data import LINE_BYTES, grep_block
from dsbra.bench.network import reads_session, time_reads
from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout
from dsbra.errors import DsbraError

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--block-mb", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--replay-summary", type=Path, default=None,
                        help="summary.json of a replay on this cluster (its node-local map median)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "network.json")
    args = parser.parse_args()
    env = cl.env(StateLayout.at(args.state_dir))
    client = cl.hdfs_client(env["namenode"], session=reads_session(env))  # every NameNode of an --ha cluster
    path = f"/bench/network-{uuid.uuid4().hex[:8]}"
    block = args.block_mb << 20
    client.write(path, grep_block(block // LINE_BYTES, 1), replication=1, blocksize=block)
    load_before = os.getloadavg()
    try:
        result = time_reads(env, path, args.repeats)
    finally:
        client.delete(path)
    levels = result["levels"]
    local = levels["node_local"]["median_s"]
    doc = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cluster_network": env["network"], "workers": len(env["workers"]),
        "block_bytes": result["bytes"], "repeats": args.repeats,
        "loadavg_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)], "cpus": os.cpu_count(),
        "levels": levels,
        "remote_over_local_read": {k: round(v["median_s"] / local, 1) for k, v in levels.items()},
        "remote_extra_s_per_block": {k: round(v["median_s"] - local, 2) for k, v in levels.items()
                                     if k != "node_local"},
    }
    if args.replay_summary:
        replay = json.loads(args.replay_summary.read_text())
        map_s = replay["map_seconds_by_locality"]["NODE_LOCAL"]
        extra = max(doc["remote_extra_s_per_block"].values())
        doc["maps"] = {
            "replay_summary": str(args.replay_summary), "node_local_map_median_s": map_s,
            "replay_maps": replay["maps"],
            "implied_non_local_map_s": round(map_s + extra, 2),
            "implied_non_local_over_local_map": round((map_s + extra) / map_s, 2),
            "mbit_for_non_local_maps_2x": round(result["bytes"] * 8 / 1e6 / max(map_s - local, 0.1), 1),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    try:
        main()
    except DsbraError as exc:  # no cluster, a --kerberos one, a failed read: one line
        raise SystemExit(f"bench_network: error: {exc}") from None
