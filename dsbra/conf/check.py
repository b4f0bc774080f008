"""`dsbra conf check`: what a live cluster runs against what rendered files (or values) say.

The ResourceManager's /conf gives its effective yarn-site, /ws/v1/cluster/scheduler its queues,
/ws/v1/cluster/nodes the rack of each node; the NameNode's /conf its hdfs-site and core-site.
The REST API does not show a queue's weight, so weights are checked through what they decide:
each queue's steady fair share of memory, recomputed from the file's weights and min/max
resources as the Fair Scheduler does (ComputeFairShares), must match the live one.
On the Capacity Scheduler the scheduler reply shows each queue's capacities, state and user and
AM limits, which are compared as they are; neither it nor /conf (yarn-site.xml, not
capacity-scheduler.xml) shows the locality delays or the per-heartbeat assignment settings,
so `notes` says they were not checked.
`compare` and `notes` are pure: captured or live replies in, differences (or notes) out.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from dsbra.conf.render import RENDERED
from dsbra.errors import InputError
from dsbra.hadoop import locality, shapes
from dsbra.hadoop.rest import Endpoint, ResourceManager, parse_conf
from dsbra.observe.delay_threshold import settings_from_conf

#: the RM settings that decide scheduling, and Hadoop's default when a file leaves one out
YARN_KEYS = {
    "yarn.resourcemanager.scheduler.class": None,
    "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": "1000",
    "yarn.scheduler.fair.locality.threshold.node": str(locality.THRESHOLD_OFF),
    "yarn.scheduler.fair.locality.threshold.rack": str(locality.THRESHOLD_OFF),
    "yarn.scheduler.fair.continuous-scheduling-enabled": "false",
    "yarn.scheduler.fair.locality-delay-node-ms": "-1",
    "yarn.scheduler.fair.locality-delay-rack-ms": "-1",
    "yarn.scheduler.fair.preemption": "false",
    "yarn.scheduler.fair.assignmultiple": "false",
    "yarn.scheduler.fair.user-as-default-queue": "true",
    "yarn.scheduler.fair.allow-undeclared-pools": "true",
    "yarn.scheduler.minimum-allocation-mb": "1024",
}
#: the NameNode settings dsbra depends on (paths such as the topology table's are host-specific)
HDFS_KEYS = {
    "dfs.replication": "3",
    "dfs.blocksize": "134217728",
    "net.topology.node.switch.mapping.impl": "org.apache.hadoop.net.ScriptBasedMapping",
}
#: share tolerance: the Fair Scheduler floors shares to whole MB after a 25-step search
SHARE_SLACK = 0.01
#: the scheduler reply's type for each scheduler class whose queues are compared
SCHEDULER_TYPES = {"org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler": "fairScheduler",
                   "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler":
                       "capacityScheduler"}
CAPACITY_PREFIX = "yarn.scheduler.capacity."
#: capacity-scheduler.xml's per-queue keys, the live queue's field for each, and Hadoop's default
#: (leaf keys: when the file sets neither the queue's key nor the global yarn.scheduler.capacity.<key>)
CAPACITY_QUEUE_KEYS = {"capacity": ("capacity", "0"), "maximum-capacity": ("maxCapacity", "100")}
CAPACITY_LEAF_KEYS = {"user-limit-factor": ("userLimitFactor", "1"),
                      "minimum-user-limit-percent": ("userLimit", "100"),
                      "maximum-am-resource-percent": ("configuredMaxAMResourceLimit", "0.1")}
#: capacity-scheduler.xml settings the RM shows nowhere (checked on the bundled cluster, 3.4.2)
CAPACITY_UNSEEN = ["node-locality-delay", "rack-locality-additional-delay",
                   "per-node-heartbeat.multiple-assignments-enabled",
                   "per-node-heartbeat.maximum-container-assignments",
                   "per-node-heartbeat.maximum-offswitch-assignments", "schedule-asynchronously.enable",
                   "multi-node-placement-enabled", "resource-calculator"]
#: the Capacity Scheduler keeps capacities as Java floats (a file's 30 comes back as 30.000002)
FLOAT_SLACK = 1e-5


@dataclass(frozen=True)
class Live:
    rm_conf: dict[str, str]
    scheduler: dict  #: /ws/v1/cluster/scheduler
    nodes: list[dict]  #: /ws/v1/cluster/nodes
    nn_conf: dict[str, str] | None  #: NameNode /conf, None when not asked


def read_rendered(directory: Path) -> dict[str, str]:
    """RENDERED, and capacity-scheduler.xml when `conf render` wrote one."""
    files = {}
    for name in RENDERED + [n for n in ["capacity-scheduler.xml"] if (directory / n).exists()]:
        try:
            files[name] = (directory / name).read_text()
        except OSError as exc:
            raise InputError(f"cannot read {directory / name}: {exc.strerror}") from None
    return files


def read_live(rm_url: str, nn_url: str | None, session=None) -> Live:
    """``session``: set up for a TLS and/or Kerberized cluster (default: a plain one)."""
    rm = ResourceManager(rm_url, session=session)
    nodes = shapes.items(rm.get_json("/ws/v1/cluster/nodes", kind="rm.nodes"), "nodes", "node")
    nn_conf = (parse_conf(Endpoint(nn_url, session=session).get_bytes("/conf", kind="nn.conf"))
               if nn_url else None)
    return Live(rm_conf=rm.conf(), scheduler=rm.get_json("/ws/v1/cluster/scheduler", kind="rm.scheduler"),
                nodes=nodes, nn_conf=nn_conf)


def readiness(live: Live) -> list[tuple[bool, str]]:
    """Whether dsbra can act on this cluster, before any values file: one line each, in the
    order to read them, each with whether it is a problem. A problem: a scheduler without delay
    scheduling (no map waits for locality, nothing for dsbra to do) or WebHDFS off on the
    NameNode (dsbra acts through it)."""
    running = sum(1 for n in live.nodes if n.get("state") == "RUNNING")
    s = settings_from_conf(live.rm_conf, running)
    if s.no_signal():
        lines = [(True, s.no_signal())]
    elif not s.delay_scheduling:
        lines = [(True, f"scheduler {s.short_name}: delay scheduling is off, so no map waits for "
                        "a local container and dsbra has nothing to act on (docs/conf.md sizes D)")]
    else:
        how = {"rm-conf": "", "hadoop-default": ", Hadoop's default: the RM's /conf does not show "
               "capacity-scheduler.xml"}.get(s.delay_source, f", {s.delay_source}")
        lines = [(False, f"scheduler {s.short_name}: delay scheduling on, a map waits up to "
                         f"D = {s.delay_threshold_s:g} s for a node-local container{how}")]
    lines.append((False, f"{running} running node(s)"))
    if live.nn_conf is not None:
        replication = live.nn_conf.get("dfs.replication", "3")
        if live.nn_conf.get("dfs.webhdfs.enabled", "true").strip().lower() == "true":
            lines.append((False, f"NameNode: WebHDFS on, default replication {replication}"))
        else:
            lines.append((True, "NameNode: dfs.webhdfs.enabled is false; dsbra reads and sets "
                                "replication through WebHDFS"))
    return lines


def compare(files: dict[str, str], live: Live) -> list[str]:
    """Every difference between the rendered files and the live cluster, one line each."""
    _, wanted, info = _schedulers(files, live)
    keys = {k: v for k, v in YARN_KEYS.items()
            if wanted == "fairScheduler" or not k.startswith("yarn.scheduler.fair.")}
    diffs = _props("yarn-site.xml", _xml_props(files, "yarn-site.xml"), live.rm_conf, keys)
    if live.nn_conf is not None:
        wanted_hdfs = {**_xml_props(files, "core-site.xml"), **_xml_props(files, "hdfs-site.xml")}
        diffs += _props("hdfs-site.xml/core-site.xml", wanted_hdfs, live.nn_conf, HDFS_KEYS)
    diffs += _topology(files["topology.table"], live.nodes)
    if wanted is None or info.get("type") != wanted:  # another scheduler (its class differs, above)
        return diffs
    if wanted == "capacityScheduler":
        diffs += _capacity_siblings(_capacity_file(files), _capacity_children(info, "root"), [])
    else:
        diffs += _queues(_file_queues(files), shapes.single(info, "rootQueue", what="/ws/v1/cluster/scheduler"))
    return diffs


def notes(files: dict[str, str], live: Live) -> list[str]:
    """What `compare` could not check, one line each (not differences)."""
    cls, wanted, info = _schedulers(files, live)
    if wanted is None or info.get("type") != wanted:
        return [f"queues not compared: the rendered files name the {cls.rsplit('.', 1)[-1] or '(no scheduler)'}, "
                f"the ResourceManager's scheduler reply is of type {info.get('type')}"]
    if wanted != "capacityScheduler":
        return []
    props = _xml_props(files, "capacity-scheduler.xml")
    unseen = ", ".join(f"{key} {props.get(CAPACITY_PREFIX + key, '(unset)')}" for key in CAPACITY_UNSEEN)
    return [f"capacity-scheduler.xml not compared, the ResourceManager shows it nowhere (its /conf holds "
            f"yarn-site.xml, /ws/v1/cluster/scheduler has no such fields): {unseen}"]


def _schedulers(files: dict[str, str], live: Live) -> tuple[str, str | None, dict]:
    """The scheduler class the rendered yarn-site.xml names, the scheduler reply's type for it
    (None: one whose queues dsbra does not compare), and the live reply."""
    cls = _xml_props(files, "yarn-site.xml").get("yarn.resourcemanager.scheduler.class") or ""
    info = shapes.single(shapes.single(live.scheduler, "scheduler", what="/ws/v1/cluster/scheduler"),
                         "schedulerInfo", what="/ws/v1/cluster/scheduler")
    return cls, SCHEDULER_TYPES.get(cls), info


def _xml_props(files: dict[str, str], name: str) -> dict[str, str]:
    try:
        root = ET.fromstring(files[name])
    except ET.ParseError as exc:
        raise InputError(f"{name} is not well-formed XML: {exc}") from None
    return {p.findtext("name"): (p.findtext("value") or "").strip() for p in root.iter("property")}


def _same(a: str | None, b: str | None, rel: float = 0.0) -> bool:
    if a is None or b is None:
        return a == b
    a, b = a.strip(), b.strip()
    try:
        return math.isclose(float(a), float(b), rel_tol=rel)
    except ValueError:
        return a.lower() == b.lower()


def _props(where: str, wanted: dict[str, str], live: dict[str, str], keys: dict) -> list[str]:
    diffs = []
    for key, default in keys.items():
        want, got = wanted.get(key, default), live.get(key, default)
        if want is not None and not _same(want, got):
            diffs.append(f"{where} {key}: rendered {want}, live {got if got is not None else '(unset)'}")
    return diffs


def _topology(table: str, nodes: list[dict]) -> list[str]:
    racks = dict(line.split()[:2] for line in table.splitlines() if len(line.split()) >= 2)
    diffs = []
    live = {}
    for node in nodes:
        host = str(node.get("nodeHostName") or "")
        live[host] = node.get("rack")
        if host not in racks:
            diffs.append(f"topology.table: live node {host} (rack {node.get('rack')}) is not in the table")
        elif racks[host] != node.get("rack"):
            diffs.append(f"topology.table {host}: rendered rack {racks[host]}, live {node.get('rack')}")
    diffs += [f"topology.table {host}: no NodeManager of that name is registered with the RM"
              for host in racks if host not in live]
    return diffs


# ---- queues ------------------------------------------------------------------------------


def _resources(text: str | None) -> tuple[int, int] | None:
    """'1024 mb,1 vcores' -> (1024, 1)."""
    if text is None:
        return None
    mb = vcores = 0
    for part in text.split(","):
        words = part.split()
        if len(words) == 2 and words[1].lower() == "mb":
            mb = int(float(words[0]))
        elif len(words) == 2 and words[1].lower() == "vcores":
            vcores = int(float(words[0]))
    return mb, vcores


def _file_queues(files: dict[str, str]) -> dict:
    """fair-scheduler.xml -> {"root": {"children": {...}}} with weight, policy, min/max, maxApps."""
    try:
        root = ET.fromstring(files["fair-scheduler.xml"])
    except ET.ParseError as exc:
        raise InputError(f"fair-scheduler.xml is not well-formed XML: {exc}") from None

    def walk(element, path):
        out = {}
        for q in element.findall("queue"):
            name = f"{path}.{q.get('name')}"
            out[name] = {"weight": float(q.findtext("weight") or 1.0),
                         "policy": (q.findtext("schedulingPolicy") or "fair").strip(),
                         "min": _resources(q.findtext("minResources")),
                         "max": _resources(q.findtext("maxResources")),
                         "max_apps": q.findtext("maxRunningApps"),
                         "children": walk(q, name)}
        return out

    queues = walk(root, "root")
    # the Fair Scheduler always has root.default, weight 1, even when the file leaves it out
    queues.setdefault("root.default", {"weight": 1.0, "policy": "fair", "min": None, "max": None,
                                       "max_apps": None, "children": {}, "implicit": True})
    return queues


def _children(queue: dict) -> dict[str, dict]:
    return {str(c.get("queueName")): c for c in shapes.items(queue, "childQueues", "queue")}


def _mem(resources) -> int:
    return int(shapes.as_float((resources or {}).get("memory"), 0) or 0)


def _queues(wanted: dict, live_root: dict) -> list[str]:
    diffs: list[str] = []
    total = _mem(live_root.get("steadyFairResources")) or _mem(live_root.get("clusterResources"))
    _siblings(wanted, _children(live_root), total, "root", diffs)
    return diffs


def _siblings(wanted: dict, live: dict, total: int, parent: str, diffs: list[str]) -> None:
    for name in sorted(set(live) - set(wanted)):
        diffs.append(f"fair-scheduler.xml: live queue {name} is not in the file")
    for name in sorted(set(wanted) - set(live)):
        if not wanted[name].get("implicit"):
            diffs.append(f"fair-scheduler.xml {name}: the RM has no such queue")
    common = sorted(set(wanted) & set(live))
    for name in common:
        want, got = wanted[name], live[name]
        if want["policy"].lower() != str(got.get("schedulingPolicy", "")).lower():
            diffs.append(f"fair-scheduler.xml {name} schedulingPolicy: rendered {want['policy']}, "
                         f"live {got.get('schedulingPolicy')}")
        for key, tag in (("min", "minResources"), ("max", "maxResources")):
            live_res = got.get(tag) or {}
            pair = (_mem(live_res), int(shapes.as_float(live_res.get("vCores"), 0) or 0))
            if want[key] is not None and pair != want[key]:
                diffs.append(f"fair-scheduler.xml {name} {tag}: rendered {want[key][0]} mb,{want[key][1]} vcores, "
                             f"live {pair[0]} mb,{pair[1]} vcores")
        if want["max_apps"] is not None and int(want["max_apps"]) != shapes.as_int(got.get("maxApps")):
            diffs.append(f"fair-scheduler.xml {name} maxRunningApps: rendered {want['max_apps']}, "
                         f"live {got.get('maxApps')}")
    if total > 0 and common and set(common) == set(wanted) == set(live):
        expected = steady_shares({n: wanted[n] for n in common}, total)
        for name in common:
            got = _mem(live[name].get("steadyFairResources"))
            if abs(got - expected[name]) > max(SHARE_SLACK * total, 2):
                diffs.append(f"fair-scheduler.xml {name} weight {wanted[name]['weight']:g}: its steady fair "
                             f"share would be {expected[name]:.0f} MB of {total} MB, the RM gives it {got} MB "
                             "(the live weights differ)")
    for name in common:
        if wanted[name]["children"] or _children(live[name]):
            _siblings(wanted[name]["children"], _children(live[name]),
                      _mem(live[name].get("steadyFairResources")), name, diffs)


def steady_shares(queues: dict[str, dict], total: float) -> dict[str, float]:
    """Memory each sibling gets from weights within min/max: the r with
    sum(clamp(w*r, min, max)) = total, as FairScheduler's ComputeFairShares finds it."""
    def share(q, r):
        low = (q["min"] or (0, 0))[0]
        high = q["max"][0] if q["max"] else float("inf")
        return min(max(q["weight"] * r, low), high)

    lo, hi = 0.0, 1.0
    while sum(share(q, hi) for q in queues.values()) < total and hi < 1e12:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(share(q, mid) for q in queues.values()) < total else (lo, mid)
    return {name: share(q, hi) for name, q in queues.items()}


# ---- Capacity Scheduler queues ---------------------------------------------------------------


def _capacity_file(files: dict[str, str]) -> dict:
    """capacity-scheduler.xml -> {"root.a": {"settings": {key: value}, "children": {...}}}, each
    setting as the file gives it or as Hadoop defaults it (a state: the parent's)."""
    if "capacity-scheduler.xml" not in files:
        raise InputError("the rendered yarn-site.xml names the CapacityScheduler, but there is no "
                         "capacity-scheduler.xml")
    props = _xml_props(files, "capacity-scheduler.xml")

    def get(path: str, key: str) -> str | None:
        return props.get(f"{CAPACITY_PREFIX}{path}.{key}")

    def walk(path: str, state: str) -> dict:
        out = {}
        for name in filter(None, (n.strip() for n in (get(path, "queues") or "").split(","))):
            queue = f"{path}.{name}"
            settings = {"state": get(queue, "state") or state}
            settings.update({k: get(queue, k) or default for k, (_, default) in CAPACITY_QUEUE_KEYS.items()})
            children = walk(queue, settings["state"])
            if not children:
                settings.update({k: get(queue, k) or props.get(CAPACITY_PREFIX + k) or default
                                 for k, (_, default) in CAPACITY_LEAF_KEYS.items()})
            out[queue] = {"settings": settings, "children": children}
        return out

    return walk("root", get("root", "state") or "RUNNING")


def _capacity_children(queue: dict, path: str) -> dict[str, dict]:
    return {f"{path}.{q.get('queueName')}": q for q in shapes.items(queue, "queues", "queue")}


def _capacity_siblings(wanted: dict, live: dict, diffs: list[str]) -> list[str]:
    for name in sorted(set(live) - set(wanted)):
        diffs.append(f"capacity-scheduler.xml: live queue {name} is not in the file")
    for name in sorted(set(wanted) - set(live)):
        diffs.append(f"capacity-scheduler.xml {name}: the RM has no such queue")
    for name in sorted(set(wanted) & set(live)):
        want, got = wanted[name], live[name]
        children = _capacity_children(got, name)
        keys = {"state": ("state", None), **CAPACITY_QUEUE_KEYS,
                **(CAPACITY_LEAF_KEYS if not (want["children"] or children) else {})}
        for key, (field, _) in keys.items():
            value = got.get(field)
            if not _same(want["settings"][key], None if value is None else str(value), FLOAT_SLACK):
                diffs.append(f"capacity-scheduler.xml {name} {key}: rendered {want['settings'][key]}, "
                             f"live {value if value is not None else '(unset)'}")
        _capacity_siblings(want["children"], children, diffs)
    return diffs
