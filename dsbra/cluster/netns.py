"""The cluster's network: a bridge holding the master's address, one namespace per worker.

Worker i lives in namespace <prefix>-w<i> with a veth into the bridge and its own address, so
each worker's daemons bind and connect from a distinct IP. Nothing leaves this machine: no
default route, no NAT. Every step is recorded in the state file *before* it is made, so `down`
can undo a half-built network after a crash.

The bridge itself lives in a namespace of its own (<prefix>-sw); the master's address sits on
<prefix>0, a veth in the root namespace whose peer is a bridge port. So worker-to-worker frames
never cross the root namespace's firewall: with br_netfilter loaded (Docker loads it) and a
FORWARD policy of DROP (Docker sets it), a bridge in the root namespace silently drops them,
and every non-local read fails.
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


def check_tools(spec: ClusterSpec | None = None) -> None:
    if shutil.which("ip") is None:
        raise ClusterError("the 'ip' tool is missing: apt-get install -y iproute2")
    if spec is not None and spec.net_mbit and shutil.which("tc") is None:
        raise ClusterError("--net-mbit needs the 'tc' tool: apt-get install -y iproute2")


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
    taken += [ns for ns in [spec.switch_netns] + [w.netns for w in spec.worker_list] if netns_exists(ns)]
    if taken:
        raise ClusterError(
            f"network names {', '.join(taken)} are taken (another cluster, maybe with another state dir; "
            f"pick --prefix or run 'dsbra cluster down' with that state dir)"
        )


SWITCH_BRIDGE = "br0"  # the bridge, inside the switch namespace


def create_switch(spec: ClusterSpec) -> None:
    """The switch namespace and its bridge."""
    sw = ("-n", spec.switch_netns)
    _ip("netns", "add", spec.switch_netns)
    _ip(*sw, "link", "add", SWITCH_BRIDGE, "type", "bridge")
    _ip(*sw, "link", "set", SWITCH_BRIDGE, "up")


def create_bridge(spec: ClusterSpec) -> None:
    """The master's link into the switch: <prefix>0 in the root namespace holds its address."""
    sw = ("-n", spec.switch_netns)
    _ip("link", "add", spec.bridge, "type", "veth", "peer", "name", "m0", "netns", spec.switch_netns)
    _ip(*sw, "link", "set", "m0", "master", SWITCH_BRIDGE, "up")
    _ip("addr", "add", f"{spec.master}/{spec.prefixlen}", "dev", spec.bridge)
    _ip("link", "set", spec.bridge, "up")


def create_worker(spec: ClusterSpec, worker) -> None:
    _ip("netns", "add", worker.netns)
    sw = ("-n", spec.switch_netns)
    _ip(*sw, "link", "add", worker.veth, "type", "veth", "peer", "name", "eth0", "netns", worker.netns)
    _ip(*sw, "link", "set", worker.veth, "master", SWITCH_BRIDGE, "up")
    ns = ("-n", worker.netns)
    _ip(*ns, "addr", "add", f"{worker.host}/{spec.prefixlen}", "dev", "eth0")
    _ip(*ns, "link", "set", "eth0", "up")
    _ip(*ns, "link", "set", "lo", "up")


def shaping_commands(spec: ClusterSpec, worker) -> list[list[str]]:
    """`tc` argument lists (run in the worker's namespace) that shape what the worker sends to
    the other workers: an HTB class per rate on its eth0, one u32 filter per destination worker.
    Traffic to the master (RPC, heartbeats, client writes) matches no filter and HTB sends it
    unshaped; a node-local read never reaches eth0 (local addresses route over lo)."""
    rates = {}  # rate -> class minor id
    filters = []
    for other in spec.worker_list:
        rate = spec.link_mbit(worker, other) if other.index != worker.index else 0
        if rate:
            minor = rates.setdefault(rate, 10 + len(rates))
            filters.append(["filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1",
                            "u32", "match", "ip", "dst", f"{other.host}/32", "flowid", f"1:{minor}"])
    if not rates:
        return []
    cmds = [["qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb"]]
    for rate, minor in rates.items():
        cmds.append(["class", "add", "dev", "eth0", "parent", "1:", "classid", f"1:{minor}", "htb",
                     "rate", f"{rate:g}mbit", "ceil", f"{rate:g}mbit", "quantum", "65536"])
    return cmds + filters


def shape_worker(spec: ClusterSpec, worker) -> None:
    for args in shaping_commands(spec, worker):
        _tc(worker.netns, *args)


def unshape_worker(worker) -> None:
    """Remove the shaping (the namespace's default queueing again); no-op if unshaped."""
    _tc(worker.netns, "qdisc", "del", "dev", "eth0", "root", check=False)


def _tc(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["tc", "-n", ns, *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ClusterError(f"'tc -n {ns} {' '.join(args)}' failed: {proc.stderr.strip() or proc.returncode}")
    return proc


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
