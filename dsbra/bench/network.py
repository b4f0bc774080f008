"""Time a node-local, a rack-local and an off-rack read of the same HDFS block.

The block has one replica, on worker H. Each read is an HTTP GET of the file from H's DataNode
(its WebHDFS server reads the replica from its own disk) made from inside a worker namespace:
from H itself the bytes never leave the namespace (node-local), from another worker they cross
both veths and H's shaped egress (`dsbra cluster up --net-mbit`). Same block, same server,
same code path: the difference is the network.
"""

from __future__ import annotations

import statistics
import subprocess
from urllib.parse import quote, urlsplit

import requests

from dsbra.errors import ClusterError, InputError
from dsbra.hadoop.auth import secure_session
from dsbra.hadoop.rest import WebHdfs

LEVELS = ("node_local", "rack_local", "off_rack")

#: the block lookup's patience: a NameNode that has just started answers its first WebHDFS
#: call only once its REST stack has loaded, which took over 10 s (the clients' default) on a
#: loaded 2-core machine right after an HA failover to it
LOOKUP_TIMEOUT_S = 60.0


def reads_session(env: dict) -> requests.Session:
    """A session for the cluster's web endpoints: verified against its CA on a --tls cluster.
    A --kerberos cluster is refused: the reads below authenticate with user.name only."""
    if env.get("kerberos"):
        raise InputError("timing reads needs a cluster without --kerberos (its reads go as user.name=root)")
    session = requests.Session()
    secure_session(session, ca_bundle=env.get("ca_bundle"))
    return session


def replica_host(env: dict, path: str) -> str:
    """The one worker address holding the file's single block (asked of the active one of an
    --ha cluster's NameNodes, which env names comma-separated)."""
    located = WebHdfs(env["namenode"], user="root", session=reads_session(env),
                      timeout_s=LOOKUP_TIMEOUT_S).block_locations(path)
    blocks = located.get("locatedBlocks") or []
    if len(blocks) != 1 or len(blocks[0].get("locations") or []) != 1:
        raise InputError(f"{path} must be one block with one replica to time reads of it")
    return blocks[0]["locations"][0]["ipAddr"]


def readers(env: dict, holder: str) -> dict[str, dict]:
    """The worker to read from at each locality level (a level the layout lacks is left out)."""
    by_host = {w["host"]: w for w in env["workers"]}
    home = by_host[holder]
    out = {"node_local": home}
    same = [w for w in env["workers"] if w["rack"] == home["rack"] and w is not home]
    other = [w for w in env["workers"] if w["rack"] != home["rack"]]
    if same:
        out["rack_local"] = same[0]
    if other:
        out["off_rack"] = other[0]
    return out


def timed_read(reader: dict, datanode_url: str, path: str, namenode_rpc: str,
               ca_bundle: str | None = None) -> tuple[float, int]:
    """(seconds, bytes) of one read of ``path`` from ``datanode_url``, made in reader's namespace
    (over https verified against ``ca_bundle`` on a --tls cluster)."""
    url = (f"{datanode_url}/webhdfs/v1{quote(path)}?op=OPEN&user.name=root"
           f"&namenoderpcaddress={namenode_rpc}&offset=0")
    cmd = ["ip", "netns", "exec", reader["netns"], "curl", "-sSf", "-o", "/dev/null",
           *(["--cacert", ca_bundle] if ca_bundle else []), "-w", "%{time_total} %{size_download}", url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise ClusterError(f"reading {path} from {reader['name']} failed: {proc.stderr.strip()[:200]}")
    seconds, size = proc.stdout.split()
    return float(seconds), int(size)


def time_reads(env: dict, path: str, repeats: int = 3) -> dict:
    """Per locality level: every read's seconds and MB/s, and the median; levels interleaved
    so a change of machine load hits them alike. One warm-up read fills the page cache."""
    holder = replica_host(env, path)
    datanode = next(w["datanode"] for w in env["workers"] if w["host"] == holder)
    rpc = urlsplit(env["fs"]).netloc  # with --ha the nameservice: the DataNode asks its active NameNode
    who = readers(env, holder)
    ca_bundle = env.get("ca_bundle")
    timed_read(who["node_local"], datanode, path, rpc, ca_bundle)
    runs: dict[str, list[tuple[float, int]]] = {level: [] for level in who}
    for _ in range(repeats):
        for level, reader in who.items():
            runs[level].append(timed_read(reader, datanode, path, rpc, ca_bundle))
    out = {"holder": holder, "bytes": runs["node_local"][0][1], "levels": {}}
    for level, values in runs.items():
        seconds = [s for s, _ in values]
        out["levels"][level] = {"reader": who[level]["name"], "seconds": [round(s, 3) for s in seconds],
                                "median_s": round(statistics.median(seconds), 3),
                                "median_mb_s": round(values[0][1] / 2**20 / statistics.median(seconds), 1)}
    return out
