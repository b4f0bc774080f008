"""A values file -> a validated ClusterSpec (the Fair Scheduler's queues and placement, or the
Capacity Scheduler's queues, included) for the shared templates.

Every error names the key it is about ("queues[1].weight: must be > 0, got 0"), so a user can
fix the file from one line. Pure except `load_values`, which reads the YAML.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from dsbra.cluster.confdir import CAPACITY_LEAF_DEFAULTS, DEFAULT_QUEUES, HostPaths
from dsbra.cluster.spec import ClusterSpec, parse_size
from dsbra.errors import ConfigError, InputError
from dsbra.hadoop import locality
from dsbra.validate import one_of

SECTIONS = {"cluster", "hdfs", "yarn", "queues", "placement", "capacity_queues", "spark", "render"}
CLUSTER_KEYS = {"workers": int, "racks": int, "subnet": str, "prefix": str, "port_offset": int,
                "hadoop_version": str, "nm_memory_mb": int, "nm_vcores": int, "map_memory_mb": int,
                "am_memory_mb": int, "memory_increment_mb": int}
HDFS_KEYS = {"replication", "block_size"}
YARN_KEYS = {"heartbeat", "locality_threshold_node", "locality_threshold_rack", "continuous_scheduling",
             "locality_delay_node", "locality_delay_rack", "preemption", "scheduler",
             "node_locality_delay", "rack_locality_additional_delay", "multiple_assignments",
             "max_container_assignments", "max_offswitch_assignments", "schedule_asynchronously",
             "multi_node_placement"}
QUEUE_KEYS = {"name", "weight", "policy", "max_am_share", "min_resources", "max_resources",
              "max_running_apps", "fair_share_preemption_timeout", "min_share_preemption_timeout",
              "fair_share_preemption_threshold", "queues"}
POLICIES = {"fair", "fifo", "drf"}
CAPACITY_QUEUE_KEYS = {"name", "capacity", "maximum_capacity", "state", "queues", *CAPACITY_LEAF_DEFAULTS}
#: ParentQueue's tolerance on its children's capacity sum (PRECISION 0.0005 of 1, Hadoop 3.4.2)
CAPACITY_SUM_SLACK = 0.05
#: placement rules of the Fair Scheduler's queuePlacementPolicy and the attributes each takes
RULES = {"specified": {"create"}, "user": {"create"}, "primaryGroup": {"create"},
         "secondaryGroupExistingQueue": {"create"}, "default": {"queue", "create"}, "reject": set()}
#: Spark on YARN: spark-defaults.conf with these locality waits (ClusterSpec.spark_locality_wait_*_s)
SPARK_KEYS = {"enabled", "locality_wait_process", "locality_wait_node", "locality_wait_rack"}
RENDER_KEYS = {"conf_dir", "data_dir", "lib_dir", "java_home", "spark_python", "spark_archive"}
DEFAULT_JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
#: the interpreter PySpark's executors run when spark-defaults.conf names none of the bundled
#: cluster's (Spark's own default)
DEFAULT_SPARK_PYTHON = "python3"
DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)\s*$")
DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Values:
    spec: ClusterSpec
    paths: HostPaths  #: where the rendered files say conf, data and jars live (conf render only)
    java_home: str
    spec_fields: dict  #: the ClusterSpec fields the file sets, for `dsbra cluster up --values`
    spark_python: str  #: spark.pyspark.python (conf render only)
    spark_archive: str | None  #: spark.yarn.archive; None: where `dsbra cluster up --spark` puts it


def load_values(path: Path) -> Values:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"cannot read values file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"values file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    return parse_values(doc if doc is not None else {})


def parse_values(doc) -> Values:
    """Validate a values document and build the spec it describes."""
    _mapping(doc, "values", SECTIONS)
    fields: dict = {}
    cluster = _mapping(doc.get("cluster", {}), "cluster", set(CLUSTER_KEYS))
    for key, kind in CLUSTER_KEYS.items():
        if key in cluster:
            fields[key] = _typed(cluster[key], f"cluster.{key}", kind)
    hdfs = _mapping(doc.get("hdfs", {}), "hdfs", HDFS_KEYS)
    if "replication" in hdfs:
        fields["replication"] = _typed(hdfs["replication"], "hdfs.replication", int)
    if "block_size" in hdfs:
        fields["block_size"] = _size(hdfs["block_size"], "hdfs.block_size")
    fields.update(_yarn(_mapping(doc.get("yarn", {}), "yarn", YARN_KEYS)))
    scheduler = fields.get("scheduler", ClusterSpec.scheduler)
    if "capacity_queues" in doc:
        if scheduler != "capacity":
            raise ConfigError(f"capacity_queues: the Capacity Scheduler's queues, but yarn.scheduler is {scheduler} "
                              "(set yarn.scheduler: capacity)")
        fields["capacity_queues"] = _capacity_queues(doc["capacity_queues"], "capacity_queues", "RUNNING")
    for key in ("queues", "placement"):
        if key in doc and scheduler == "capacity":
            raise ConfigError(f"{key}: the Fair Scheduler's, but yarn.scheduler is capacity "
                              "(declare capacity_queues instead)")
    if "queues" in doc:
        fields["queues"] = _queues(doc["queues"], "queues", set())
    if "placement" in doc:
        fields["placement"] = _placement(doc["placement"], fields.get("queues") or DEFAULT_QUEUES)
    fields.update(_spark(_mapping(doc.get("spark", {}), "spark", SPARK_KEYS)))
    render = _mapping(doc.get("render", {}), "render", RENDER_KEYS)
    for key in RENDER_KEYS:
        if key in render:
            _typed(render[key], f"render.{key}", str)
    data = render.get("data_dir", "/var/lib/hadoop")
    paths = HostPaths(conf=render.get("conf_dir", "/etc/hadoop/conf"), data=data, tmp=data + "/tmp",
                      lib=render.get("lib_dir", "/opt/hadoop/lib"))
    workers = fields.get("workers", ClusterSpec.workers)
    # replication as `dsbra cluster up` picks it: 3, at most the workers
    try:
        spec = ClusterSpec(**{"replication": min(3, max(workers, 1)), **fields})
    except InputError as exc:  # the spec names the CLI flag; say it comes from the values file
        raise ConfigError(f"values: {exc}") from None
    return Values(spec=spec, paths=paths, java_home=render.get("java_home", DEFAULT_JAVA_HOME),
                  spec_fields=fields, spark_python=render.get("spark_python", DEFAULT_SPARK_PYTHON),
                  spark_archive=render.get("spark_archive"))


def _spark(spark: dict) -> dict:
    """Waits kept to whole milliseconds: spark-defaults.conf writes them so."""
    out: dict = {}
    if "enabled" in spark:
        out["spark"] = _typed(spark["enabled"], "spark.enabled", bool)
    waits = sorted(k for k in spark if k.startswith("locality_wait_"))
    if waits and not out.get("spark"):
        raise ConfigError(f"spark.{waits[0]}: Spark's, but spark.enabled is not true (set it)")
    for key in waits:
        out[f"spark_{key}_s"] = round(_duration(spark[key], f"spark.{key}") * 1000) / 1000
    return out


def _yarn(yarn: dict) -> dict:
    out: dict = {}
    if "heartbeat" in yarn:
        out["heartbeat_ms"] = round(_duration(yarn["heartbeat"], "yarn.heartbeat") * 1000)
    for side in ("node", "rack"):
        key = f"locality_threshold_{side}"
        if key in yarn:
            value = _typed(yarn[key], f"yarn.{key}", float)
            if problem := locality.threshold_problem(value):
                raise ConfigError(f"yarn.{key}: {problem}")
            out[f"locality_delay_{side}"] = value
    timed = [k for k in ("locality_delay_node", "locality_delay_rack") if k in yarn]
    if timed and len(timed) == 1:
        raise ConfigError(f"yarn.{timed[0]}: locality_delay_node and locality_delay_rack go together")
    for key in timed:
        value = yarn[key]
        out[f"{key}_ms"] = -1 if value in (-1, "off") else round(_duration(value, f"yarn.{key}") * 1000)
    if "continuous_scheduling" in yarn:
        out["continuous_scheduling"] = _typed(yarn["continuous_scheduling"], "yarn.continuous_scheduling", bool)
    elif timed:  # the Fair Scheduler reads the time-based delays only with continuous scheduling
        out["continuous_scheduling"] = True
    if "preemption" in yarn:
        out["preemption"] = _typed(yarn["preemption"], "yarn.preemption", bool)
    if "scheduler" in yarn:
        out["scheduler"] = _typed(yarn["scheduler"], "yarn.scheduler", str)
    for key in ("node_locality_delay", "rack_locality_additional_delay"):  # the Capacity Scheduler's
        if key in yarn:
            value = yarn[key]
            if problem := locality.opportunities_problem(value):
                raise ConfigError(f"yarn.{key}: {problem}")
            out[key] = value
    for key in ("multiple_assignments", "schedule_asynchronously", "multi_node_placement"):
        if key in yarn:
            out[key] = _typed(yarn[key], f"yarn.{key}", bool)
    if "max_container_assignments" in yarn:
        value = _typed(yarn["max_container_assignments"], "yarn.max_container_assignments", int)
        if value != -1 and value < 1:
            raise ConfigError(f"yarn.max_container_assignments: must be >= 1, or -1 (no limit), got {value}")
        out["max_container_assignments"] = value
    if "max_offswitch_assignments" in yarn:  # Hadoop would warn and use 1
        value = _typed(yarn["max_offswitch_assignments"], "yarn.max_offswitch_assignments", int)
        if value < 1:
            raise ConfigError(f"yarn.max_offswitch_assignments: must be >= 1, got {value}")
        out["max_offswitch_assignments"] = value
    return out


def _queue_name(item: dict, at: str, seen: set) -> str:
    name = item.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ConfigError(f"{at}.name: a queue needs a name of letters, digits, '_' or '-', got {name!r}")
    if name in seen:
        raise ConfigError(f"{at}.name: queue {name!r} is named twice")
    seen.add(name)
    return name


def _queues(items, where: str, seen: set) -> list[dict]:
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{where}: must be a non-empty list of queues")
    out = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        _mapping(item, at, QUEUE_KEYS)
        name = _queue_name(item, at, seen)
        weight = _typed(item.get("weight", 1.0), f"{at}.weight", float)
        if not weight > 0:
            raise ConfigError(f"{at}.weight: must be > 0, got {weight}")
        policy = item.get("policy", "fair")
        one_of(f"{at}.policy:", policy, sorted(POLICIES), error=ConfigError)  # the file's "key: rule"
        share = _typed(item.get("max_am_share", 0.5), f"{at}.max_am_share", float)
        if share != -1.0 and not 0.0 <= share <= 1.0:
            raise ConfigError(f"{at}.max_am_share: must be -1 (no limit) or within 0..1, got {share}")
        queue = {"name": name, "weight": weight, "policy": policy, "max_am_share": share}
        for key in ("min_resources", "max_resources"):
            if key in item:
                queue[key] = _resources(item[key], f"{at}.{key}")
        if "max_running_apps" in item:
            apps = _typed(item["max_running_apps"], f"{at}.max_running_apps", int)
            if apps < 0:
                raise ConfigError(f"{at}.max_running_apps: must be >= 0, got {apps}")
            queue["max_running_apps"] = apps
        for key in ("fair_share_preemption_timeout", "min_share_preemption_timeout"):
            if key in item:  # the allocation file takes whole seconds
                queue[key] = math.ceil(_duration(item[key], f"{at}.{key}"))
        if "fair_share_preemption_threshold" in item:
            threshold = _typed(item["fair_share_preemption_threshold"], f"{at}.fair_share_preemption_threshold", float)
            if not 0.0 <= threshold <= 1.0:
                raise ConfigError(f"{at}.fair_share_preemption_threshold: must be within 0..1, got {threshold}")
            queue["fair_share_preemption_threshold"] = threshold
        if "queues" in item:
            if policy == "fifo":
                raise ConfigError(f"{at}.policy: fifo is for leaf queues only; {name!r} has child queues")
            queue["queues"] = _queues(item["queues"], f"{at}.queues", seen)
        out.append(queue)
    return out


def _capacity_queues(items, where: str, parent_state: str) -> list[dict]:
    """Siblings under one parent, checked as the Capacity Scheduler (3.4.2) checks them when it
    loads the file: names unique among siblings, 0 <= capacity <= maximum_capacity <= 100,
    capacities summing to 100, no RUNNING queue under a STOPPED one (QueueStateHelper)."""
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{where}: must be a non-empty list of queues")
    out: list[dict] = []
    seen: set = set()
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        _mapping(item, at, CAPACITY_QUEUE_KEYS)
        name = _queue_name(item, at, seen)
        if "capacity" not in item:
            raise ConfigError(f"{at}.capacity: a queue needs a capacity (percent of its parent's)")
        capacity = _typed(item["capacity"], f"{at}.capacity", float)
        if not 0.0 <= capacity <= 100.0:
            raise ConfigError(f"{at}.capacity: must be within 0..100 (percent), got {capacity}")
        maximum = _typed(item.get("maximum_capacity", 100.0), f"{at}.maximum_capacity", float)
        if not capacity <= maximum <= 100.0:
            raise ConfigError(f"{at}.maximum_capacity: must be within the queue's capacity ({capacity:g}) "
                              f"and 100, got {maximum}")
        state = item.get("state", parent_state)  # Hadoop: a queue that names none takes its parent's
        if state not in ("RUNNING", "STOPPED"):
            raise ConfigError(f"{at}.state: must be RUNNING or STOPPED, got {state!r}")
        if state == "RUNNING" and parent_state == "STOPPED":
            raise ConfigError(f"{at}.state: RUNNING under a STOPPED parent (Hadoop refuses it)")
        queue = {"name": name, "capacity": capacity, "maximum_capacity": maximum, "state": state}
        if "queues" in item:
            leaf_keys = sorted(set(item) & set(CAPACITY_LEAF_DEFAULTS))
            if leaf_keys:
                raise ConfigError(f"{at}.{leaf_keys[0]}: a leaf queue's setting; {name!r} has child queues")
            queue["queues"] = _capacity_queues(item["queues"], f"{at}.queues", state)
        else:
            queue.update({key: _typed(item.get(key, default), f"{at}.{key}", float)
                          for key, default in CAPACITY_LEAF_DEFAULTS.items()})
            if not (queue["user_limit_factor"] > 0 or queue["user_limit_factor"] == -1.0):
                raise ConfigError(f"{at}.user_limit_factor: must be > 0, or -1 (no user limit), "
                                  f"got {queue['user_limit_factor']}")
            if not 1.0 <= queue["minimum_user_limit_percent"] <= 100.0:
                raise ConfigError(f"{at}.minimum_user_limit_percent: must be within 1..100 (percent), "
                                  f"got {queue['minimum_user_limit_percent']}")
            if not 0.0 <= queue["maximum_am_resource_percent"] <= 1.0:
                raise ConfigError(f"{at}.maximum_am_resource_percent: must be a fraction within 0..1 "
                                  f"(despite Hadoop's name), got {queue['maximum_am_resource_percent']}")
        out.append(queue)
    total = sum(q["capacity"] for q in out)
    if abs(total - 100.0) > CAPACITY_SUM_SLACK:
        raise ConfigError(f"{where}: the capacities of sibling queues must sum to 100 (percent of their "
                          f"parent's), got {total:g}")
    return out


def queue_paths(queues: list[dict], parent: str = "root") -> dict[str, dict]:
    """Full queue name ("root.a.b") -> queue, over every nesting level."""
    out = {}
    for queue in queues:
        path = f"{parent}.{queue['name']}"
        out[path] = queue
        out.update(queue_paths(queue.get("queues", []), path))
    return out


def _placement(items, queues: list[dict]) -> list[dict]:
    if not isinstance(items, list) or not items:
        raise ConfigError("placement: must be a non-empty list of rules")
    known = queue_paths(queues)
    leaves = {p for p, q in known.items() if not q.get("queues")}
    names = {p.split(".", 1)[1] for p in leaves} | leaves
    out = []
    for i, item in enumerate(items):
        at = f"placement[{i}]"
        rule = {"rule": item} if isinstance(item, str) else item
        if not isinstance(rule, dict) or rule.get("rule") not in RULES:
            raise ConfigError(f"{at}: a rule is one of {', '.join(RULES)} (or a mapping with 'rule:'), got {item!r}")
        attrs = RULES[rule["rule"]]
        _mapping(rule, at, attrs | {"rule"})
        out_rule = {"name": rule["rule"]}
        if "create" in rule:
            out_rule["create"] = str(_typed(rule["create"], f"{at}.create", bool)).lower()
        if "queue" in rule:
            queue = _typed(rule["queue"], f"{at}.queue", str)
            if queue not in names:
                raise ConfigError(f"{at}.queue: {queue!r} names no leaf queue declared in queues")
            out_rule["queue"] = queue
        out.append(out_rule)
    return out


def _resources(value, where: str) -> str:
    """{memory: 1g, vcores: 2} -> the allocation file's "1024 mb,2 vcores"."""
    _mapping(value, where, {"memory", "vcores"})
    if set(value) != {"memory", "vcores"}:
        raise ConfigError(f"{where}: give both memory (k/m/g) and vcores")
    mb = _size(value["memory"], f"{where}.memory") // (1024 * 1024)
    vcores = _typed(value["vcores"], f"{where}.vcores", int)
    if vcores < 0:
        raise ConfigError(f"{where}.vcores: must be >= 0, got {vcores}")
    return f"{mb} mb,{vcores} vcores"


def _size(value, where: str) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: not a size: {value!r} (use bytes or a k/m/g suffix)")
    try:
        size = parse_size(value)
    except InputError:
        raise ConfigError(f"{where}: not a size: {value!r} (use bytes or a k/m/g suffix)") from None
    if size < 0:
        raise ConfigError(f"{where}: must be >= 0, got {value!r}")
    return size


def _duration(value, where: str) -> float:
    """'500ms', '3s', '2m', '1h' -> seconds; a bare number has no unit and is refused."""
    match = DURATION.match(value) if isinstance(value, str) else None
    if not match:
        raise ConfigError(f"{where}: not a duration: {value!r} (a number with ms, s, m or h, e.g. 3s)")
    return float(match.group(1)) * DURATION_UNITS[match.group(2)]


def _typed(value, where: str, kind: type):
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"{where}: must be {kind.__name__}, got {value!r}")
    if kind is float and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, got {value!r}")
    return value


def _mapping(value, where: str, allowed: set) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a mapping, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(sorted(allowed))})")
    return value
