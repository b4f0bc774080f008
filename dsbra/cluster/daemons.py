"""The Hadoop daemons as plain `java -cp` processes: command lines and start (which of the
machine's processes are ours, and stopping them: :mod:`dsbra.cluster.processes`).

Each daemon runs in its own session (process group), writes its log4j log to logs/<name>.log
and its stdout/stderr to logs/<name>.out, and carries -Ddsbra.daemon=<name> and
-Ddsbra.state=<dir> on its command line so a recycled pid is never mistaken for it.
"""

from __future__ import annotations

import getpass
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dsbra.cluster import spark
from dsbra.cluster.confdir import ZOOKEEPER_FILE, jvm_opts, jvm_security_opts
from dsbra.cluster.install import HadoopInstall
from dsbra.cluster.paths import StateLayout, placement_jar
from dsbra.cluster.security import security_paths
from dsbra.cluster.spec import ClusterSpec

MAIN_CLASSES = {
    "namenode": "org.apache.hadoop.hdfs.server.namenode.NameNode",
    "datanode": "org.apache.hadoop.hdfs.server.datanode.DataNode",
    "resourcemanager": "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
    "nodemanager": "org.apache.hadoop.yarn.server.nodemanager.NodeManager",
    "historyserver": "org.apache.hadoop.mapreduce.v2.hs.JobHistoryServer",
    "journalnode": "org.apache.hadoop.hdfs.qjournal.server.JournalNode",
    # the admin tools of --ha (`hdfs haadmin`, `yarn rmadmin`), run as short-lived commands
    "haadmin": "org.apache.hadoop.hdfs.tools.DFSHAAdmin",
    "rmadmin": "org.apache.hadoop.yarn.client.cli.RMAdminCLI",
    # --ha with automatic failover: ZooKeeper (its jars come with Hadoop's) and the ZKFC
    "zookeeper": "org.apache.zookeeper.server.ZooKeeperServerMain",
    "zkfc": "org.apache.hadoop.hdfs.tools.DFSZKFailoverController",
    # --shared-cache
    "sharedcachemanager": "org.apache.hadoop.yarn.server.sharedcachemanager.SharedCacheManager",
}
TOOL_HEAP = "256m"
HDFS_UI = {"namenode", "datanode", "journalnode"}  # these need webapps/ on the classpath


@dataclass(frozen=True)
class Daemon:
    name: str  # namenode, resourcemanager, historyserver, datanode-w1, nodemanager-w1, ...
    kind: str  # key of MAIN_CLASSES
    host: str  # 'master' or a worker name ('w1')
    netns: str | None  # None: the root namespace (master)


def cluster_daemons(spec: ClusterSpec) -> list[Daemon]:
    daemons = [
        Daemon("namenode", "namenode", "master", None),
        Daemon("resourcemanager", "resourcemanager", "master", None),
        Daemon("historyserver", "historyserver", "master", None),
    ]
    if spec.ha:  # the second pair: the master's address, the conf dir of host master2
        daemons.append(Daemon("namenode2", "namenode", "master2", None))
        daemons.append(Daemon("resourcemanager2", "resourcemanager", "master2", None))
        daemons += [Daemon(f"journalnode-{w.name}", "journalnode", w.name, w.netns) for w in spec.journal_nodes]
    if spec.automatic_failover:
        # ZooKeeper on the master, not on a worker: Hadoop keeps it on the master hosts, away
        # from the containers' CPU and disk, whose stalls would expire its sessions and depose
        # a healthy active NameNode or RM; and the master's address is where its clients (the
        # ZKFCs beside the NameNodes, the RMs) already run. Each ZKFC watches the NameNode of
        # its host's conf dir (dfs.ha.namenode.id)
        daemons.append(Daemon("zookeeper", "zookeeper", "master", None))
        daemons.append(Daemon("zkfc", "zkfc", "master", None))
        daemons.append(Daemon("zkfc2", "zkfc", "master2", None))
    if spec.shared_cache:
        daemons.append(Daemon("sharedcachemanager", "sharedcachemanager", "master", None))
    if spec.spark:
        daemons.append(Daemon(spark.HISTORY_DAEMON, spark.HISTORY_KIND, "master", None))
    for w in spec.worker_list:
        daemons.append(Daemon(f"datanode-{w.name}", "datanode", w.name, w.netns))
        daemons.append(Daemon(f"nodemanager-{w.name}", "nodemanager", w.name, w.netns))
    return daemons


def java_command(
    spec: ClusterSpec,
    layout: StateLayout,
    install: HadoopInstall,
    java_home: Path,
    daemon: Daemon,
    args: list[str] = (),
    log_name: str | None = None,
) -> list[str]:
    log_name = log_name or daemon.name
    if daemon.kind == spark.HISTORY_KIND:
        return spark.history_command(spec, layout, spark.ensure_spark(quiet=True), java_home,
                                     spec.heaps.get(daemon.kind, TOOL_HEAP))
    if daemon.kind == "zookeeper":  # standalone, from the zoo.cfg rendered beside the master's configs
        args = [str(layout.conf(daemon.host) / ZOOKEEPER_FILE), *args]
    classpath = [str(layout.conf(daemon.host))]
    if daemon.kind in HDFS_UI:
        classpath.append(str(install.webapps_root))
    classpath.append(str(install.lib / "*"))
    if daemon.kind == "namenode" and spec.block_placement == "heat":
        classpath.append(str(placement_jar(spec.hadoop_version)))
    cmd = [
        str(java_home / "bin" / "java"),
        f"-Xmx{spec.heaps.get(daemon.kind, TOOL_HEAP)}",
        *jvm_opts(),
        *jvm_security_opts(spec, str(security_paths(layout).root)),
        f"-Ddsbra.daemon={log_name}",
        f"-Ddsbra.state={layout.root}",
        f"-Dhadoop.log.dir={layout.logs}",
        f"-Dhadoop.log.file={log_name}.log",
        f"-Dyarn.log.dir={layout.logs}",
        f"-Dyarn.log.file={log_name}.log",
        f"-Dhadoop.home.dir={install.home}",
        f"-Dhadoop.id.str={getpass.getuser()}",
        "-cp", os.pathsep.join(classpath),
        MAIN_CLASSES[daemon.kind],
        *args,
    ]
    if daemon.netns:
        cmd = ["ip", "netns", "exec", daemon.netns, *cmd]
    return cmd


def daemon_env(java_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["JAVA_HOME"] = str(java_home)
    env.pop("CLASSPATH", None)
    env.pop("HADOOP_CONF_DIR", None)
    return env


def spawn(cmd: list[str], out: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "ab") as handle:
        return subprocess.Popen(
            cmd, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, cwd=cwd, start_new_session=True,
        )
