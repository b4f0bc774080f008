"""`dsbra conf check --spark-app`: what in a Spark application's settings and executors wastes
node locality.

The application's ``/environment`` gives the Spark properties its driver runs with
(spark-defaults.conf, --conf and SparkConf merged) and its Hadoop client's, ``/allexecutors``
its executors and their hosts; the ResourceManager's nodes, when known, the cluster's size and
racks. The waits are read as Spark reads them (JavaUtils.timeStringAs, TaskSetManager.
getLocalityWait, Spark 4.0.1). `check_app` is pure: replies in, lines out.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsbra.conf.delay import SHORT_HOLD, replica_reach, size_spark_delay
from dsbra.errors import HadoopError, InputError
from dsbra.hadoop import shapes
from dsbra.hadoop.rest import ResourceManager, SparkApi
from dsbra.hadoop.spark_conf import WAIT_KEY, pairs, spark_time_ms, waits

LEGACY_KEY = "spark.locality.wait.legacyResetOnTaskLaunch"
DYNAMIC_KEY = "spark.dynamicAllocation.enabled"


@dataclass(frozen=True)
class SparkApp:
    app_id: str
    properties: dict[str, str]  #: sparkProperties
    hadoop: dict[str, str]  #: hadoopProperties: the driver's Hadoop client configuration
    executors: list[dict]  #: the live executors of /allexecutors, the driver left out
    nodes: list[dict] | None  #: the ResourceManager's RUNNING nodes; None when not asked


def read_app(app_id: str, history_url: str | None, rm_url: str | None, session=None) -> SparkApp:
    """From the History Server when ``history_url`` is given, else through the RM's proxy; the
    RM's nodes whenever ``rm_url`` is given."""
    api = (SparkApi.history(history_url, session=session) if history_url
           else SparkApi.proxy(rm_url, session=session))
    try:
        env, executors = api.environment(app_id), api.executors(app_id)
    except HadoopError as exc:
        if exc.status == 404:
            raise HadoopError(f"no Spark application {app_id} at the {api.service} {api.base_url} "
                              "(HTTP 404)", status=404) from None
        if api.through_proxy and exc.status is not None:  # the proxy answered, not the driver
            raise HadoopError(f"{exc} (a finished application is the History Server's: give "
                              "--spark-history URL)", status=exc.status) from None
        raise
    nodes = ResourceManager(rm_url, session=session).nodes() if rm_url else None
    return app_from_replies(app_id, env, executors, nodes)


def app_from_replies(app_id: str, env: dict, executors: list[dict], nodes: list[dict] | None) -> SparkApp:
    """A reply without the shape Spark gives is a one-line HadoopError, not a traceback."""
    props = pairs(env.get("sparkProperties"))
    if props is None:
        raise HadoopError(f"Spark REST API /environment of {app_id}: malformed reply (no "
                          "sparkProperties list of [key, value] pairs)")
    live = [e for e in executors if isinstance(e, dict) and e.get("id") != "driver" and e.get("isActive")]
    running = None if nodes is None else [n for n in nodes if n.get("state") == "RUNNING"]
    return SparkApp(app_id=app_id, properties=props, hadoop=pairs(env.get("hadoopProperties")) or {},
                    executors=live, nodes=running)
def check_app(app: SparkApp, *, locality: float | None = None, tasks: int | None = None,
              task_seconds: float | None = None) -> tuple[list[str], list[str]]:
    """(what wastes locality, notes): one line each. ``locality`` and ``tasks`` (and
    ``task_seconds``, else the executors' mean task time) compare the waits with what `dsbra
    conf delay --engine spark` sizes; executors whose nodes put ``locality`` out of reach are
    on too few nodes."""
    problems: list[str] = []
    notes: list[str] = []
    nodes = app.nodes
    one_rack = nodes is not None and len({n.get("rack") for n in nodes}) == 1
    levels = waits(app.properties)
    live_ms: dict[str, int] = {}
    for level, (key, text) in levels.items():
        name = key if key == f"{WAIT_KEY}.{level}" else f"{WAIT_KEY}.{level} (from {key})"
        ms = spark_time_ms(text)
        if ms is None:
            problems.append(f"{name} = {text}: not a time Spark reads (an integer with us, ms, s, m, "
                            "min, h or d)")
        elif ms > 0:
            live_ms[level] = ms
        elif level == "node":
            problems.append(f"{name} = {text}: delay scheduling off: a task runs on the first free "
                            "executor, wherever its data is; dsbra sees no wait for locality, and a "
                            "replica it adds cannot help a task that does not wait")
        elif level == "rack" and not one_rack:
            problems.append(f"{name} = {text}: once the node wait is over a task leaves its data's "
                            "racks at once (harmless on a one-rack cluster only)")
        else:
            notes.append(f"{name} = {text}: " + ("one rack: every executor is rack-local, no loss"
                                                 if level == "rack" else
                                                 "only cached partitions lose their executor; an HDFS "
                                                 "read has no process level"))
    if app.properties.get(LEGACY_KEY, "false").strip().lower() == "true":
        problems.append(f"{LEGACY_KEY} = true: the rule before Spark 3.1 (SPARK-18886): every launch "
                        "resets the wait, so while some tasks keep launching node-local the others "
                        "never fall back and free executors idle; remove it")
    notes.append(_dynamic_allocation(app.properties))
    hosts = sorted({str(e.get("hostPort", "")).rpartition(":")[0] for e in app.executors})
    if not app.executors:
        notes.append("no executors yet (the driver only): their nodes and the waits' sizing need "
                     "them; check again once the application runs tasks")
        return problems, notes
    task_cpus = max(shapes.as_int(app.properties.get("spark.task.cpus"), 1) or 1, 1)
    slots = sum(_count(e, "totalCores") // task_cpus for e in app.executors)
    m = None if nodes is None else max(len(nodes), len(hosts))
    replication = shapes.as_int(app.hadoop.get("dfs.replication"), 3) or 3
    where = f"{len(app.executors)} executors ({slots} task slots) on {len(hosts)}"
    if m is None:
        notes.append(f"{where} nodes ({', '.join(hosts)}); the cluster's size is unknown (give --rm)")
    else:
        r = min(replication, m)
        reach = replica_reach(m, len(hosts), r)
        line = (f"{where} of the {m} NodeManagers' nodes ({', '.join(hosts)}): {reach:.0%} of the "
                f"blocks ({r} replicas) have a replica on one of them, node locality's ceiling")
        if len(hosts) < min(len(app.executors), m) or (locality is not None and reach < locality):
            problems.append(f"executors on too few nodes: {line}; ask for executors of fewer cores "
                            "(more of them), or dynamic allocation's locality hints")
        else:
            notes.append(line)
    short, note = _sized(app, live_ms, locality, tasks, task_seconds, m, replication, slots, len(hosts))
    return problems + short, notes + [note]


def _dynamic_allocation(props: dict[str, str]) -> str:
    if props.get(DYNAMIC_KEY, "false").strip().lower() == "true":
        return (f"{DYNAMIC_KEY} = true: the driver asks YARN for new executors on the nodes of its "
                "pending tasks' data (locality hints); the executors below are this moment's")
    count = props.get("spark.executor.instances", "(unset: 2)")
    return (f"{DYNAMIC_KEY} = false: spark.executor.instances = {count} executors for the "
            "application's life, placed by YARN where it had room, with no locality hints: "
            "their nodes decide which tasks can run node-local")


def _sized(app: SparkApp, live_ms: dict[str, int], locality, tasks, task_seconds, m, replication,
           slots: int, hosts: int) -> tuple[list[str], str]:
    """The waits against what `conf delay --engine spark` sizes: (a problem for each under half
    of it, a note saying both or why they were not compared)."""
    unsized = "waits not compared with `dsbra conf delay --engine spark`: "
    if locality is None or tasks is None:
        return [], unsized + "give --locality and --tasks"
    if m is None:
        return [], unsized + "the cluster's size is unknown (give --rm)"
    if task_seconds is None:
        ended = sum(_count(e, "completedTasks") + _count(e, "failedTasks") for e in app.executors)
        if not ended:
            return [], unsized + "no task has ended to time (give --task-seconds)"
        task_seconds = sum(_count(e, "totalDuration") for e in app.executors) / ended / 1000
        timed = f"T={task_seconds:.2f} s, the executors' mean task"
    else:
        timed = f"T={task_seconds:g} s"
    executors, r = len(app.executors), min(replication, m)
    racks = min(len({n.get("rack") for n in app.nodes or []}) or 1, m)
    try:
        sizing = size_spark_delay(locality, tasks, m, r, executors=executors,
                                  executor_cores=max(1, round(slots / executors)),
                                  task_seconds=task_seconds, executor_nodes=hosts, racks=racks)
    except InputError as exc:
        return [], unsized + str(exc)
    inputs = f"locality {locality:g}, N={tasks}, M={m}, R={r}, S={sizing.slots}, {racks} rack(s), {timed}"
    short = [f"{WAIT_KEY}.{level} is {live_ms[level]:g}ms, under half the {sized}ms `dsbra conf delay "
             f"--engine spark` sizes ({inputs}): tasks give up on their data too soon"
             for level, sized in (("node", sizing.node_ms), ("rack", sizing.rack_ms))
             if level in live_ms and live_ms[level] < SHORT_HOLD * sized]
    live = ", ".join(f"{level} {live_ms[level]:g}ms" for level in ("node", "rack") if level in live_ms)
    return short, (f"the waits are {live or '(none above 0)'}; `dsbra conf delay --engine spark` "
                   f"sizes node {sizing.node_ms}ms, rack {sizing.rack_ms}ms ({inputs})")


def _count(executor: dict, key: str) -> int:
    return shapes.as_int(executor.get(key), 0) or 0
