"""The cluster's network: a bridge holding the master's address, one namespace per worker.

Worker i lives in namespace <prefix>-w<i> with a veth into the bridge and its own address, so
each worker's daemons bind and connect from a distinct IP. Nothing leaves this machine: no
default route, no NAT. Every step is recorded in the state file *before* it is made, so `down`
can undo a half-built network after a crash.
"""

from __future__ import annotations

import shutil
import subprocess

from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ClusterError


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ClusterError(f"'ip {' '.join(args)}' failed: {proc.stderr.strip() or proc.returncode}")
    return proc


def check_tools() -> None:
    if shutil.which("ip") is None:
        raise ClusterError("the 'ip' tool is missing: apt-get install -y iproute2")


def link_exists(name: str) -> bool:
    return _ip("link", "show", name, check=False).returncode == 0


def netns_exists(name: str) -> bool:
    return name in list_netns()


def list_netns() -> list[str]:
    proc = _ip("netns", "list", check=False)
    return [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]


def check_free(spec: ClusterSpec) -> None:
    """Fail if a device or namespace this cluster would create exists already (another cluster's)."""
    taken = [name for name in [spec.bridge] + [w.veth for w in spec.worker_list] if link_exists(name)]
    taken += [w.netns for w in spec.worker_list if netns_exists(w.netns)]
    if taken:
        raise ClusterError(
            f"network names {', '.join(taken)} are taken (another cluster, maybe with another state dir; "
            f"pick --prefix or run 'dsbra cluster down' with that state dir)"
        )


def create_bridge(spec: ClusterSpec) -> None:
    _ip("link", "add", spec.bridge, "type", "bridge")
    _ip("addr", "add", f"{spec.master}/{spec.prefixlen}", "dev", spec.bridge)
    _ip("link", "set", spec.bridge, "up")


def create_worker(spec: ClusterSpec, worker) -> None:
    _ip("netns", "add", worker.netns)
    _ip("link", "add", worker.veth, "type", "veth", "peer", "name", "eth0", "netns", worker.netns)
    _ip("link", "set", worker.veth, "master", spec.bridge, "up")
    ns = ("-n", worker.netns)
    _ip(*ns, "addr", "add", f"{worker.host}/{spec.prefixlen}", "dev", "eth0")
    _ip(*ns, "link", "set", "eth0", "up")
    _ip(*ns, "link", "set", "lo", "up")


def netns_pids(name: str) -> list[int]:
    proc = _ip("netns", "pids", name, check=False)
    return [int(p) for p in proc.stdout.split() if p.isdigit()]


def delete_netns(name: str) -> None:
    if netns_exists(name):
        _ip("netns", "del", name)


def delete_link(name: str) -> None:
    """Delete a link if it exists. A veth vanishes by itself, asynchronously, once the namespace
    holding its peer is gone, so a failed delete only counts if the link is still there."""
    proc = _ip("link", "del", name, check=False)
    if proc.returncode != 0 and link_exists(name):
        raise ClusterError(f"'ip link del {name}' failed: {proc.stderr.strip() or proc.returncode}")
