"""Bring the cluster up, tear it down, and report on it.

`up` renders the configs, builds the network, starts every daemon at once (JVM start-up
dominates on 2 cores, and DataNodes/NodeManagers retry until the master answers), then polls
the NameNode's JMX and the RM's REST API until every worker registered and HDFS left safe
mode. Any failure tears down what was started and names the daemon and its log.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import requests
from tqdm import tqdm

from dsbra.cluster import daemons as dmn
from dsbra.cluster import netns
from dsbra.cluster import processes as procs
from dsbra.cluster import security as sec
from dsbra.cluster import spark
from dsbra.cluster import state as st
from dsbra.cluster.confdir import DEFAULT_CAPACITY_QUEUES, DEFAULT_QUEUES, write_configs
from dsbra.cluster.install import HadoopInstall, ensure_hadoop, ensure_placement, find_java
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import HA_NAMENODES, HA_NAMESERVICE, HA_RMS, SHARED_CACHE_ROOT, ClusterSpec
from dsbra.errors import ClusterError, HadoopError, InputError
from dsbra.hadoop import shapes
from dsbra.hadoop.hdfs import make_client
from dsbra.hadoop.rest import ResourceManager
from dsbra.observe.delay_threshold import settings_from_conf

HTTP_TIMEOUT = 2.0


@dataclass
class Status:
    state: str  # 'down', 'up', 'stale' (state left but daemons dead), 'partial'
    alive: dict[str, bool]
    data: dict | None


def status(layout: StateLayout) -> Status:
    data = st.load(layout.state_file)
    if data is None:
        return Status("down", {}, None)
    if data.get("docker"):  # a container's client state: compose runs the daemons, not us
        return Status("up" if data.get("phase") == "up" else "down", {}, data)
    alive = {name: procs.is_ours(d["pid"], name, layout.root) for name, d in data["daemons"].items()}
    if data.get("phase") == "up" and alive and all(alive.values()):
        return Status("up", alive, data)
    if any(alive.values()):
        return Status("partial", alive, data)
    return Status("stale", alive, data)


@contextlib.contextmanager
def _exclusive(layout: StateLayout):
    """One `up`/`down` at a time per state dir; a second one waits, then sees the result."""
    layout.root.mkdir(parents=True, exist_ok=True)
    with open(layout.root / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def up(spec: ClusterSpec, layout: StateLayout, timeout: float = 240.0, log=print) -> tuple[dict, bool]:
    """Start the cluster; returns (state, started). Already up: (state, False)."""
    java_home = find_java()
    netns.check_tools(spec)
    sec.check_tools(spec)
    with _exclusive(layout):
        return _up(spec, layout, timeout, log, java_home)


def _up(spec: ClusterSpec, layout: StateLayout, timeout: float, log, java_home: Path) -> tuple[dict, bool]:
    current = status(layout)
    if current.state == "up":
        return current.data, False
    if current.state in ("stale", "partial"):
        log(f"cleaning up a previous run that did not finish ({current.state}; state in {layout.root})")
        _down(layout)
    install = ensure_hadoop(spec.hadoop_version)
    if spec.block_placement == "heat":
        ensure_placement(spec.hadoop_version)
    spark_install = spark.ensure_spark() if spec.spark else None
    check_ports(spec)

    for sub in ("data", "logs", "conf", "security"):
        shutil.rmtree(layout.root / sub, ignore_errors=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    data = st.new(spec.to_dict(), java_home=str(java_home), hadoop_home=str(install.home), phase="starting",
                  started_at=time.time())
    st.save(layout.state_file, data)
    try:
        _build_network(spec, layout, data)
        if spec.kerberos or spec.tls:  # the KDC listens on the master's address: after the network
            sec.prepare(spec, layout, data, lambda: st.save(layout.state_file, data))
        write_configs(spec, layout, install.lib, str(java_home))
        if spark_install is not None:
            spark.write_conf(spec, layout, spark_install, str(java_home))
        _start_daemons(spec, layout, install, java_home, data)
        # within the one --timeout: the rest first, then what needs HDFS out of safe mode
        late = {"sharedcachemanager"} if spec.shared_cache else set()
        late |= {spark.HISTORY_DAEMON} if spec.spark else set()
        if late:
            deadline = time.monotonic() + timeout
            wait_ready(spec, layout, data, timeout, without=late)
            if spec.shared_cache:
                _start_shared_cache(spec, layout, install, java_home, data)
            if spark_install is not None:
                _start_spark(spec, layout, spark_install, install, java_home, data)
            timeout = max(deadline - time.monotonic(), LATE_START_S)
        wait_ready(spec, layout, data, timeout)
    except BaseException:
        _down(layout)
        raise
    data["phase"] = "up"
    data["ready_at"] = time.time()
    st.save(layout.state_file, data)
    return data, True


def check_ports(spec: ClusterSpec) -> None:
    for name in spec.master_ports:
        port = spec.port(name)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("0.0.0.0", port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise ClusterError(
                        f"port {port} ({name}) is already in use; stop what uses it or pick --port-offset"
                    ) from None
                raise ClusterError(f"cannot bind port {port} ({name}): {exc.strerror}") from None


def _build_network(spec: ClusterSpec, layout: StateLayout, data: dict) -> None:
    # refuse names that exist already *before* recording anything: `down` must never remove a
    # device or namespace another cluster owns
    netns.check_free(spec)
    net = data["network"]
    net["netns"].append(spec.switch_netns)
    net["bridge"] = spec.bridge
    st.save(layout.state_file, data)
    netns.create_switch(spec)
    netns.create_bridge(spec)
    for w in spec.worker_list:
        net["netns"].append(w.netns)
        net["veths"].append(w.veth)
        st.save(layout.state_file, data)
        netns.create_worker(spec, w)
        netns.shape_worker(spec, w)


def _spawn(spec, layout, install: HadoopInstall, java_home: Path, data: dict, d: dmn.Daemon) -> None:
    """Start ``d`` and record it in the state file."""
    cmd = dmn.java_command(spec, layout, install, java_home, d)
    proc = dmn.spawn(cmd, layout.out(d.name), dmn.daemon_env(java_home), layout.root)
    data["daemons"][d.name] = {
        "pid": proc.pid, "kind": d.kind, "host": d.host, "netns": d.netns,
        "log": str(layout.log(d.name)), "out": str(layout.out(d.name)),
    }
    st.save(layout.state_file, data)


def _start_daemons(spec, layout, install: HadoopInstall, java_home: Path, data: dict) -> None:
    """Every daemon but the SharedCacheManager (:func:`_start_shared_cache`)."""
    all_daemons = dmn.cluster_daemons(spec)
    by_name = {d.name: d for d in all_daemons}

    def start(d: dmn.Daemon) -> None:
        _spawn(spec, layout, install, java_home, data, d)

    # workers, JournalNodes, the RMs and ZooKeeper first: they retry until the NameNode/RM (or
    # ZooKeeper) answer, so their JVM start-up overlaps the NameNode's format (which, with
    # --ha, needs the JournalNodes)
    for d in all_daemons:
        if d.kind in ("journalnode", "datanode", "nodemanager", "resourcemanager", "zookeeper"):
            start(d)
    _run_tool(spec, layout, install, java_home, by_name["namenode"],
              ["-format", "-force", "-nonInteractive"], "namenode-format", "formatting the NameNode")
    start(by_name["namenode"])
    if spec.automatic_failover:
        # a ZKFC refuses to start without its parent znode; nn1's ZKFC, started before nn2
        # exists, wins the election and makes nn1 active as soon as it answers
        _wait_for(lambda: _listening(spec.master, spec.port("zookeeper")), 120.0, "zookeeper", layout, data)
        _run_tool(spec, layout, install, java_home, by_name["zkfc"], ["-formatZK", "-force", "-nonInteractive"],
                  "zkfc-format", "formatting ZooKeeper for the failover controllers")
        start(by_name["zkfc"])
    if spec.ha:
        _start_standbys(spec, layout, install, java_home, data, by_name)
    start(by_name["historyserver"])


def _start_standbys(spec, layout, install: HadoopInstall, java_home: Path, data: dict,
                    by_name: dict[str, dmn.Daemon]) -> None:
    """--ha: the second NameNode, which copies the first one's namespace and runs as a
    standby; then who is active: ZooKeeper's election, or (manual failover) haadmin. The
    probes run in the client's Kerberos environment (web_session), the daemons outside it."""
    def wait_answering(name: str, state_of, url: str) -> None:
        with web_session(spec, layout) as session:  # the JMX and REST APIs need SPNEGO on --kerberos
            _wait_for(lambda: state_of(url, session) is not None, 120.0, name, layout, data)

    wait_answering("namenode", _namenode_state, spec.namenode_urls["nn1"])
    _run_tool(spec, layout, install, java_home, by_name["namenode2"],
              ["-bootstrapStandby", "-force", "-nonInteractive"], "namenode2-bootstrap",
              "bootstrapping the standby NameNode")
    _spawn(spec, layout, install, java_home, data, by_name["namenode2"])
    if spec.automatic_failover:
        _spawn(spec, layout, install, java_home, data, by_name["zkfc2"])  # the RMs elect their own
        return
    # manual failover: both run as standbys until the first is made active;
    # -transitionToActive first asks the other one it is not active, and fails on no answer
    wait_answering("namenode2", _namenode_state, spec.namenode_urls["nn2"])
    wait_answering("resourcemanager", _rm_state, spec.rm_urls["rm1"])
    wait_answering("resourcemanager2", _rm_state, spec.rm_urls["rm2"])
    ha_admin(spec, layout, "hdfs", ["-transitionToActive", HA_NAMENODES[0]])
    ha_admin(spec, layout, "yarn", ["-transitionToActive", HA_RMS[0]])


#: seconds the SharedCacheManager gets to answer even when the rest took nearly all of --timeout
#: what a daemon started once HDFS is ready (the SharedCacheManager, the Spark History Server)
#: gets at least, whatever is left of --timeout
LATE_START_S = 60.0


def _start_shared_cache(spec, layout, install: HadoopInstall, java_home: Path, data: dict) -> None:
    """The SharedCacheManager, once HDFS is ready: it lists its root directory at start and
    refuses to start without it, and the directory can be made only out of safe mode."""
    with web_session(spec, layout) as session:
        hdfs_client(spec.namenode_urls.values(), session).makedirs(SHARED_CACHE_ROOT)
    scm = next(d for d in dmn.cluster_daemons(spec) if d.kind == "sharedcachemanager")
    _spawn(spec, layout, install, java_home, data, scm)


def _start_spark(spec, layout, spark_install: spark.SparkInstall, install: HadoopInstall,
                 java_home: Path, data: dict) -> None:
    """Spark's jars into HDFS (once per start: HDFS is formatted at each) and its event log
    directory, which the History Server lists at start, then the History Server."""
    with web_session(spec, layout) as session:
        client = hdfs_client(spec.namenode_urls.values(), session)
        client.makedirs(spark.EVENT_LOG_DIR, permission="1777")
        with open(spark_install.archive, "rb") as archive:
            client.write(spark.archive_path(spark_install.version), data=archive, overwrite=True)
    history = next(d for d in dmn.cluster_daemons(spec) if d.kind == spark.HISTORY_KIND)
    _spawn(spec, layout, install, java_home, data, history)


def _run_tool(spec, layout, install: HadoopInstall, java_home: Path, daemon: dmn.Daemon, args: list[str],
              log_name: str, what: str) -> None:
    """Run a one-off command of ``daemon``'s class (a format, say); ClusterError naming its log."""
    cmd = dmn.java_command(spec, layout, install, java_home, daemon, args, log_name=log_name)
    proc = dmn.spawn(cmd, layout.out(log_name), dmn.daemon_env(java_home), layout.root)
    if proc.wait() != 0:
        log_path, out_path = layout.log(log_name), layout.out(log_name)
        raise ClusterError(f"{what} failed; see {_log_to_read(log_path, out_path)}"
                           f"{_last_error(log_path, out_path)}")


def _wait_for(ready, timeout: float, name: str, layout: StateLayout, data: dict) -> None:
    """Wait until ready() for the daemon ``name``; ClusterError with its log when it exits or
    is not ready in time."""
    deadline = time.monotonic() + timeout
    missing_once = False
    while not ready():
        d = data["daemons"][name]
        if procs.is_ours(d["pid"], name, layout.root):
            missing_once = False
        elif missing_once:  # missing twice in a row (see _wait_ready)
            raise ClusterError(_exited(name, d))
        else:
            missing_once = True
        if time.monotonic() > deadline:
            raise ClusterError(f"{name} not up after {timeout:.0f} s; check {layout.log(name)}")
        time.sleep(0.5)


def _exited(name: str, daemon: dict) -> str:
    log_path, out_path = Path(daemon["log"]), Path(daemon["out"])
    return (f"{name} exited during start-up; see its log "
            f"{_log_to_read(log_path, out_path)}{_last_error(log_path, out_path)}")


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=HTTP_TIMEOUT):
            return True
    except OSError:
        return False


HA_TOOLS = {"hdfs": "haadmin", "yarn": "rmadmin"}
#: what automatic failover leaves to ZooKeeper's election (Hadoop refuses them too, in a paragraph)
MANUAL_TRANSITIONS = ("-transitionToActive", "-transitionToStandby")


def ha_admin(spec: ClusterSpec, layout: StateLayout, service: str, args: list[str]) -> str:
    """Run `hdfs haadmin` (service 'hdfs') or `yarn rmadmin` ('yarn') against an --ha cluster,
    as the master's configuration sees it; returns its output, ClusterError when it fails."""
    if not spec.ha:
        raise ClusterError("the cluster runs without --ha: there is no standby to fail over to")
    kind = HA_TOOLS[service]
    manual = next((arg for arg in args if arg in MANUAL_TRANSITIONS), None)
    if spec.automatic_failover and manual:
        how = ("use -failover (the ZKFCs hand over)" if service == "hdfs"
               else "the standby takes over when the active one stops")
        raise ClusterError(f"automatic failover is on, ZooKeeper elects the active one: {service} {kind} "
                           f"{manual} is refused; {how}, or run the cluster with --ha-failover manual")
    data = st.load(layout.state_file) or {}
    java_home = Path(data.get("java_home") or find_java())
    install = HadoopInstall(Path(data["hadoop_home"])) if data.get("hadoop_home") \
        else ensure_hadoop(spec.hadoop_version)
    tool = dmn.Daemon(kind, kind, "master", None)
    cmd = dmn.java_command(spec, layout, install, java_home, tool, args, log_name=kind)
    env = dmn.daemon_env(java_home)
    if spec.kerberos:  # as the cluster's client, from its ticket cache
        env |= sec.client_login_env(sec.security_paths(layout))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=layout.root, timeout=180)
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        # the last line that is not a stack frame: Java's exception and its message
        said = [line for line in output.splitlines()
                if line.strip() and not line.lstrip().startswith(("at ", "... "))]
        last = said[-1] if said else f"exit status {proc.returncode}"
        raise ClusterError(f"{service} {kind} {' '.join(args)} failed: {last[:300]}")
    return output


def _namenode_state(nn_url: str, session: requests.Session | None = None) -> str | None:
    """'active', 'standby' (or another HA state) of the NameNode at nn_url; None: not
    answering. ``session``: :func:`web_session`'s, for a --kerberos/--tls cluster."""
    status = _jmx(nn_url, "NameNodeStatus", session)
    return status.get("State") if status else None


def _rm_state(rm_url: str, session: requests.Session | None = None) -> str | None:
    """'ACTIVE', 'STANDBY'... of the ResourceManager at rm_url; None: not answering."""
    info = _get_json(f"{rm_url}/ws/v1/cluster/info", session)
    return ((info or {}).get("clusterInfo") or {}).get("haState")


def active_namenode(spec: ClusterSpec, session: requests.Session | None = None) -> str | None:
    """HA id (nn1, nn2) of the active NameNode, None when none is."""
    return next((nn for nn, url in spec.namenode_urls.items()
                 if _namenode_state(url, session) == "active"), None)


def active_rm(spec: ClusterSpec, session: requests.Session | None = None) -> str | None:
    """HA id (rm1, rm2) of the active ResourceManager, None when none is."""
    return next((rm for rm, url in spec.rm_urls.items() if _rm_state(url, session) == "ACTIVE"), None)


def _get_json(url: str, session: requests.Session | None = None) -> dict | None:
    try:
        resp = (session or requests).get(url, timeout=HTTP_TIMEOUT, headers={"Accept": "application/json"})
        if resp.status_code != 200:
            return None
        return resp.json()
    except (requests.RequestException, ValueError):
        return None


def _jmx(nn_url: str, bean: str, session: requests.Session | None = None) -> dict | None:
    doc = _get_json(f"{nn_url}/jmx?qry=Hadoop:service=NameNode,name={bean}", session)
    beans = (doc or {}).get("beans") or []
    return beans[0] if beans else None


@contextlib.contextmanager
def web_session(spec: ClusterSpec, layout: StateLayout):
    """A session for the cluster's web endpoints: plain, or (--kerberos/--tls) with the
    cluster's CA and SPNEGO as its client, in the client's Kerberos environment."""
    if not (spec.kerberos or spec.tls):
        yield requests.Session()
        return
    paths = sec.security_paths(layout)
    with sec.client_environment(paths) if spec.kerberos else contextlib.nullcontext():
        yield sec.client_session(spec, layout)


def hdfs_client(namenodes: str | Iterable[str], session: requests.Session | None = None,
                timeout: float | None = None):
    """An HdfsCLI client as root to every NameNode: ``namenodes`` is :func:`env`'s
    ``namenode`` (comma-separated) or a list of URLs; ``session``: :func:`web_session`'s for a
    --kerberos/--tls cluster. On an --ha cluster it passes a standby or an unreachable
    NameNode and stays on the one that answered (:func:`dsbra.hadoop.hdfs.make_client`)."""
    return make_client(namenodes, user="root", session=session, timeout_s=timeout)


def readiness(spec: ClusterSpec, session: requests.Session | None = None) -> dict[str, str]:
    """What is still missing, by component; empty when the cluster is ready. ``session``:
    :func:`web_session`'s, for a --kerberos/--tls cluster."""
    urls = dict(spec.urls)
    missing: dict[str, str] = {}
    if spec.ha:  # the active NameNode and RM hold the state that counts
        urls["namenode"] = spec.namenode_urls.get(active_namenode(spec, session) or "", "")
        urls["rm"] = spec.rm_urls.get(active_rm(spec, session) or "", "")
    info = _jmx(urls["namenode"], "NameNodeInfo", session) if urls["namenode"] else None
    if info is None:
        missing["namenode"] = "no active NameNode" if spec.ha else "NameNode web server not answering"
    else:
        # a DataNode counts once it registered *and* reported its storage: before that the
        # NameNode places no replicas on it, and a fresh write would get fewer replicas
        try:
            nodes = json.loads(info.get("LiveNodes") or "{}")
        except ValueError:
            nodes = {}
        storing = sum(1 for node in nodes.values() if int(node.get("capacity", 0)) > 0)
        if storing < spec.workers:
            missing["datanodes"] = f"{storing}/{spec.workers} DataNodes registered with storage"
        if info.get("Safemode"):
            missing["safemode"] = "HDFS in safe mode"
    metrics = _get_json(f"{urls['rm']}/ws/v1/cluster/metrics", session) if urls["rm"] else None
    if metrics is None:
        missing["resourcemanager"] = ("no active ResourceManager" if spec.ha
                                      else "ResourceManager REST API not answering")
    else:
        active = int(metrics.get("clusterMetrics", {}).get("activeNodes", 0))
        if active < spec.workers:
            missing["nodemanagers"] = f"{active}/{spec.workers} NodeManagers registered"
    if _get_json(f"{urls['jhs']}/ws/v1/history/info", session) is None:
        missing["historyserver"] = "JobHistoryServer REST API not answering"
    if spec.shared_cache and _get_json(f"{urls['sharedcache']}/jmx?qry=java.lang:type=Runtime") is None:
        missing["sharedcachemanager"] = "SharedCacheManager web server not answering"
    if spec.spark and _get_json(f"{spark.history_url(spec)}/api/v1/version", session) is None:
        missing[spark.HISTORY_DAEMON] = "Spark History Server REST API not answering"
    silent = _silent_ha_daemons(spec, session)
    if silent:  # --ha: the standbys too, or there is nothing to fail over to
        missing["standby"] = f"{', '.join(silent)} not answering"
    return missing


#: `--ha`: the daemon of each NameNode and ResourceManager HA id
HA_DAEMONS = {"nn1": "namenode", "nn2": "namenode2", "rm1": "resourcemanager", "rm2": "resourcemanager2"}


def _silent_ha_daemons(spec: ClusterSpec, session: requests.Session | None = None) -> list[str]:
    """The --ha NameNodes and ResourceManagers whose web server does not answer."""
    if not spec.ha:
        return []
    return ([HA_DAEMONS[nn] for nn, url in spec.namenode_urls.items()
             if _namenode_state(url, session) is None]
            + [HA_DAEMONS[rm] for rm, url in spec.rm_urls.items() if _rm_state(url, session) is None])


def containers(spec: ClusterSpec, session: requests.Session | None = None) -> dict | None:
    """How many containers the running cluster holds at once, from the ResourceManager's own
    view: each running NodeManager's memory over the container size the scheduler grants for
    the configured map (and reduce) and AM asks. None when the RM does not answer."""
    # --ha: the active one
    rm = ResourceManager(list(spec.rm_urls.values()), timeout_s=HTTP_TIMEOUT, session=session)
    try:
        running = [n for n in rm.nodes() if n.get("state") == "RUNNING"]
        settings = settings_from_conf(rm.conf(), len(running))
    except HadoopError:
        return None
    map_mb = settings.container_mb(spec.map_memory_mb)
    am_mb = settings.container_mb(spec.am_memory_mb)
    memory = [shapes.as_int((n.get("totalResource") or {}).get("memory"), 0) or 0 for n in running]
    return {"nodemanagers": len(running), "node_memory_mb": memory, "map_container_mb": map_mb,
            "am_container_mb": am_mb, "map_slots": sum(m // map_mb for m in memory),
            "unused_mb_per_node": [m % map_mb for m in memory]}


def wait_ready(spec: ClusterSpec, layout: StateLayout, data: dict, timeout: float,
               without: Collection[str] = frozenset()) -> None:
    """Wait until :func:`readiness` misses nothing but the parts named in ``without``."""
    with web_session(spec, layout) as session:
        _wait_ready(spec, layout, data, timeout, session, without)


def _wait_ready(spec: ClusterSpec, layout: StateLayout, data: dict, timeout: float,
                session: requests.Session, without: Collection[str]) -> None:
    deadline = time.monotonic() + timeout
    # namenode, datanodes, safemode, resourcemanager, nodemanagers, historyserver (--ha: standby,
    # --shared-cache: sharedcachemanager)
    checks = (6 + spec.ha + (spec.shared_cache and "sharedcachemanager" not in without)
              + (spec.spark and spark.HISTORY_DAEMON not in without))
    with tqdm(total=checks, desc="cluster up", unit="check", file=sys.stderr, leave=False,
              disable=not sys.stderr.isatty()) as bar:
        gone: set[str] = set()  # daemons not found at the previous check
        while True:
            for name, d in data["daemons"].items():
                if procs.is_ours(d["pid"], name, layout.root):
                    gone.discard(name)
                elif name not in gone:
                    # a JVM a few milliseconds old can read as another process in /proc (seen
                    # once in CI): it counts as exited only if still missing half a second later
                    gone.add(name)
                else:
                    raise ClusterError(_exited(name, d))
            missing = {k: v for k, v in readiness(spec, session).items() if k not in without}
            bar.n = checks - min(checks, _count_missing(missing))
            bar.set_postfix_str("; ".join(missing.values())[:80])
            bar.refresh()
            if not missing:
                return
            if time.monotonic() > deadline:
                culprit, log_path = _culprit(missing, spec, layout, data, session)
                raise ClusterError(
                    f"cluster not ready after {timeout:.0f} s: {'; '.join(missing.values())}; "
                    f"check {culprit}: {log_path}"
                )
            time.sleep(0.5)


def _count_missing(missing: dict) -> int:
    count = len(missing)
    if "namenode" in missing:
        count += 2  # datanodes and safemode are unknown too
    if "resourcemanager" in missing:
        count += 1
    return count


def _culprit(missing: dict, spec: ClusterSpec, layout: StateLayout, data: dict,
             session: requests.Session) -> tuple[str, str]:
    """The daemon to blame for the first missing piece, and its log."""
    for key in ("namenode", "resourcemanager", "historyserver", "sharedcachemanager", spark.HISTORY_DAEMON):
        if key in missing:
            return key, str(layout.log(key))
    if "datanodes" in missing or "nodemanagers" in missing:
        kind = "datanode" if "datanodes" in missing else "nodemanager"
        registered = _registered_hosts(spec, kind, session)
        for w in spec.worker_list:
            if w.host not in registered:
                name = f"{kind}-{w.name}"
                return name, str(layout.log(name))
    for name in _silent_ha_daemons(spec, session):
        return name, str(layout.log(name))
    return "namenode", str(layout.log("namenode"))


def _registered_hosts(spec: ClusterSpec, kind: str, session: requests.Session) -> set[str]:
    urls = dict(spec.urls)
    if spec.ha:  # what the active NameNode and RM know
        urls["namenode"] = spec.namenode_urls.get(active_namenode(spec, session) or "", urls["namenode"])
        urls["rm"] = spec.rm_urls.get(active_rm(spec, session) or "", urls["rm"])
    if kind == "datanode":
        info = _jmx(urls["namenode"], "NameNodeInfo", session) or {}
        try:
            live = json.loads(info.get("LiveNodes") or "{}")
        except ValueError:
            return set()
        return {key.split(":")[0] for key in live}
    nodes = _get_json(f"{urls['rm']}/ws/v1/cluster/nodes", session) or {}
    return {n.get("nodeHostName") for n in ((nodes.get("nodes") or {}).get("node") or [])}


def _log_to_read(log: Path, out: Path) -> Path:
    """The log4j log, unless the JVM died before logging anything (then its stdout/stderr)."""
    try:
        if log.stat().st_size > 0:
            return log
    except OSError:
        pass
    return out


def _last_error(log: Path, out: Path) -> str:
    """The line most likely to say why: the last ERROR of the log4j log, else (the JVM died
    before logging) the first lines of its stdout/stderr."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for line in reversed(lines):
        if " ERROR " in line or " FATAL " in line:
            return f" (last error: {line.strip()[:200]})"
    try:
        head = [line.strip() for line in out.read_text(errors="replace").splitlines() if line.strip()][:2]
    except OSError:
        head = []
    return f" ({': '.join(head)[:200]})" if head else ""


def down(layout: StateLayout, purge: bool = False) -> bool:
    """Stop every process and remove the network this cluster created. False if nothing was up."""
    if not layout.root.exists():
        return False
    with _exclusive(layout):
        return _down(layout, purge)


def _down(layout: StateLayout, purge: bool = False) -> bool:
    data = st.load(layout.state_file)
    if data is None:
        if purge:
            shutil.rmtree(layout.root, ignore_errors=True)
        return False
    live = {name: d for name, d in data["daemons"].items() if procs.is_ours(d["pid"], name, layout.root)}
    # workers before the master: a NodeManager stopping after the RM retries to unregister for a
    # long time. Containers go first (nothing in them is worth a graceful stop).
    daemon_pids = {d["pid"] for d in live.values()}
    containers = [pid for pid in procs.state_processes(layout.root) if pid not in daemon_pids]
    procs.terminate(containers, timeout=2.0)
    procs.terminate([d["pid"] for d in live.values() if d["netns"]], timeout=10.0)
    masters = [d for d in live.values() if not d["netns"]]
    procs.terminate([d["pid"] for d in masters if d["kind"] != "zookeeper"], timeout=10.0)
    # ZooKeeper last: its clients (the RMs' elector and state store, the ZKFCs) stop without
    # waiting for it to come back
    procs.terminate([d["pid"] for d in masters if d["kind"] == "zookeeper"], timeout=10.0)
    # anything else still running in the worker namespaces or under data/
    leftovers = set(procs.state_processes(layout.root))
    for ns in data["network"]["netns"]:
        leftovers.update(netns.netns_pids(ns))
    if leftovers:
        procs.terminate(sorted(leftovers), timeout=2.0)
    for ns in data["network"]["netns"]:
        netns.delete_netns(ns)
    for veth in data["network"]["veths"]:
        netns.delete_link(veth)
    sec.stop_kdc(layout, data)
    if data["network"]["bridge"]:
        netns.delete_link(data["network"]["bridge"])
    layout.state_file.unlink(missing_ok=True)
    if purge:
        shutil.rmtree(layout.root, ignore_errors=True)
    return True


def stop_daemon(layout: StateLayout, name: str, *, kill: bool = False) -> None:
    """Stop one daemon of a running cluster (SIGTERM, or SIGKILL with ``kill``): a fault to
    inject. The cluster reads as 'partial' until :func:`start_daemon` brings it back."""
    with _exclusive(layout):
        data = st.load(layout.state_file)
        name = resolve_daemon(layout, name)
        if data is None or name not in data["daemons"]:
            raise ClusterError(f"the cluster in {layout.root} is not up; start it with: dsbra cluster up")
        pid = data["daemons"][name]["pid"]
        if procs.is_ours(pid, name, layout.root):
            if kill:
                procs.kill([pid])
            else:
                procs.terminate([pid])


def start_daemon(layout: StateLayout, *names: str, timeout: float = 120.0) -> None:
    """Start again the daemons :func:`stop_daemon` stopped (those still running are left
    alone), then wait until the cluster is ready: all at once, since readiness needs every one."""
    with _exclusive(layout):
        data = st.load(layout.state_file)
        names = tuple(resolve_daemon(layout, name) for name in names)
        if data is None or any(name not in data["daemons"] for name in names):
            raise ClusterError(f"the cluster in {layout.root} is not up; start it with: dsbra cluster up")
        spec = ClusterSpec.from_dict(data["spec"])
        java_home = Path(data["java_home"])
        for name in names:
            d = data["daemons"][name]
            if not procs.is_ours(d["pid"], name, layout.root):
                daemon = next(x for x in dmn.cluster_daemons(spec) if x.name == name)
                cmd = dmn.java_command(spec, layout, HadoopInstall(Path(data["hadoop_home"])),
                                       java_home, daemon)
                d["pid"] = dmn.spawn(cmd, layout.out(name), dmn.daemon_env(java_home), layout.root).pid
        st.save(layout.state_file, data)
        wait_ready(spec, layout, data, timeout)


def env(layout: StateLayout) -> dict:
    """Where the running cluster answers; raises if it is not up."""
    current = status(layout)
    if current.state != "up":
        raise ClusterError(f"the cluster is not up ({current.state}); start it with: dsbra cluster up")
    spec = ClusterSpec.from_dict(current.data["spec"])
    urls = spec.urls
    paths = sec.security_paths(layout)
    queues = ((spec.capacity_queues or DEFAULT_CAPACITY_QUEUES) if spec.scheduler == "capacity"
              else (spec.queues or DEFAULT_QUEUES))
    return {
        # with --ha, every NameNode's and ResourceManager's URL, comma-separated: a dsbra
        # daemon given them follows the active one
        "webhdfs": ",".join(f"{u}/webhdfs/v1" for u in spec.namenode_urls.values()),
        "namenode": ",".join(spec.namenode_urls.values()),
        "rm": ",".join(spec.rm_urls.values()),
        "jhs": urls["jhs"],
        "fs": urls["fs"],
        "master": spec.master,
        "workers": [
            {"name": w.name, "host": w.host, "rack": w.rack, "netns": w.netns,
             "datanode": f"{spec.web_scheme}://{w.host}:{spec.port('datanode_http')}",
             "nodemanager": f"{spec.web_scheme}://{w.host}:{spec.port('nodemanager_http')}"}
            for w in spec.worker_list
        ],
        "queues": [f"root.{q['name']}" for q in queues],
        "locality_delay": {"node": spec.locality_delay_node, "rack": spec.locality_delay_rack,
                           "continuous_scheduling": spec.continuous_scheduling,
                           "node_ms": spec.locality_delay_node_ms, "rack_ms": spec.locality_delay_rack_ms},
        "replication": spec.replication,
        "block_size": spec.block_size,
        "network": {"net_mbit": spec.net_mbit, "net_rack_mbit": spec.net_rack_mbit or spec.net_mbit},
        "hadoop_version": spec.hadoop_version,
        "block_placement": spec.block_placement,
        "ha": ({"nameservice": HA_NAMESERVICE, "namenodes": spec.namenode_urls, "rms": spec.rm_urls,
                "journalnodes": [w.host for w in spec.journal_nodes], "failover": spec.ha_failover,
                "zookeeper": spec.zookeeper if spec.automatic_failover else None} if spec.ha else None),
        "heat_file": str(layout.heat_file),
        # --shared-cache: the SharedCacheManager's web UI (None without it)
        "sharedcache": urls.get("sharedcache"),
        # --tls: the CA that signed every web endpoint's certificate (a client's ca_bundle)
        "ca_bundle": str(paths.ca_pem) if spec.tls else None,
        # --kerberos: the realm's krb5.conf (KRB5_CONFIG), and dsbra's principal and keytab
        "kerberos": {"realm": sec.REALM, "krb5_conf": str(paths.krb5_conf),
                     "principal": sec.DSBRA_PRINCIPAL, "keytab": str(paths.keytab("dsbra")),
                     "client_principal": sec.client_principal(),
                     "client_env": sec.client_env(paths)} if spec.kerberos else None,
        "conf_dir": str(layout.conf("client")),
        # --spark: an executable that submits to this cluster as it is (spark-submit with its
        # SPARK_CONF_DIR and HADOOP_CONF_DIR set), and the Spark History Server's URL
        "spark_submit": str(spark.submit_script(layout)) if spec.spark else None,
        "spark_history": spark.history_url(spec) if spec.spark else None,
        "spark_conf_dir": str(spark.conf_dir(layout)) if spec.spark else None,
        # each NameNode's audit log (with the clients' caller context): a local file on the
        # NameNode host, where the sidecar reads which Spark task opened which file
        "audit_logs": {name: str(layout.logs / f"{name}-audit.log")
                       for name, d in current.data["daemons"].items() if d["kind"] == "namenode"},
        "state_dir": str(layout.root),
        "logs": {name: d["log"] for name, d in current.data["daemons"].items()},
    }


def daemon_names(layout: StateLayout) -> list[str]:
    data = st.load(layout.state_file)
    if data is not None:
        return sorted(data["daemons"])
    return sorted(p.stem for p in layout.logs.glob("*.log")) if layout.logs.exists() else []


def resolve_daemon(layout: StateLayout, name: str) -> str:
    names = daemon_names(layout)
    if name in names:
        return name
    matches = [n for n in names if n.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    if not names:
        raise InputError(f"no cluster logs in {layout.root}; has the cluster ever run?")
    raise InputError(f"unknown daemon {name!r}; one of: {', '.join(names)}")
