"""Render every Hadoop config file from conf-templates/ with jinja2.

`render_host` is pure (spec + paths in, {file name: text} out) so unit tests can check the
rendered XML; `write_configs` puts one conf dir per host (master, client, each worker) on disk.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from pathlib import Path

import jinja2

from dsbra.cluster.paths import StateLayout, templates_dir
from dsbra.cluster.spec import HA_NAMESERVICE, SHARED_CACHE_ROOT, ClusterSpec, Worker

CONFIG_FILES = [
    "core-site.xml",
    "hdfs-site.xml",
    "yarn-site.xml",
    "mapred-site.xml",
    "fair-scheduler.xml",
    "capacity-scheduler.xml",
    "topology.table",
    "log4j.properties",
]
#: Hadoop's https key and trust stores, with --tls
TLS_FILES = ["ssl-server.xml", "ssl-client.xml"]
#: the ZooKeeper server's config, on the master with --ha's automatic failover
ZOOKEEPER_FILE = "zoo.cfg"

# Java 17 hides JDK internals Hadoop 3.4 reflects into; the launcher scripts add these, and we
# launch with plain `java -cp`, so we pass them to daemons, job clients and containers alike.
ADD_OPENS = [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in (
        "java.lang",
        "java.lang.reflect",
        "java.io",
        "java.net",
        "java.nio",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "java.util.zip",
        "java.math",
        "java.text",
        "sun.nio.ch",
        "sun.security.util",
        "sun.security.x509",
    )
]
# short-lived JVMs on 2 cores: C1 only and the serial GC start faster and use less memory
FAST_JVM = ["-XX:+IgnoreUnrecognizedVMOptions", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.net.preferIPv4Stack=true"]

DEFAULT_QUEUES = [
    {"name": "default", "weight": 1.0, "policy": "fair", "max_am_share": 0.5},
    {"name": "benchmark", "weight": 1.0, "policy": "fair", "max_am_share": 0.5},
]
#: a Capacity Scheduler leaf queue's settings where a values file leaves them out (why these:
#: conf-templates/capacity-scheduler.xml.j2)
CAPACITY_LEAF_DEFAULTS = {"user_limit_factor": 2.0, "minimum_user_limit_percent": 100.0,
                          "maximum_am_resource_percent": 0.5}
#: the Capacity Scheduler's queues under root, the Fair Scheduler's two as capacities (percent)
DEFAULT_CAPACITY_QUEUES = [
    {"name": name, "capacity": 50, "maximum_capacity": 100, "state": "RUNNING", **CAPACITY_LEAF_DEFAULTS}
    for name in ("default", "benchmark")
]
DEFAULT_PLACEMENT = [{"name": "specified", "create": "false"}, {"name": "default", "queue": "default"}]


@dataclass(frozen=True)
class HostPaths:
    conf: str
    data: str
    tmp: str
    lib: str
    #: the heat document the placement plugin reads (a file: URI), used with --placement heat
    heat_uri: str = ""
    #: the ResourceManagers' shared state store (a directory on the master), used with --ha
    rm_store: str = ""
    #: --kerberos/--tls material (dsbra.cluster.security): its directory and this host's keytab
    security: str = ""
    keytab: str = ""


#: `--ha`: which NameNode and ResourceManager each master host runs (the second pair runs on
#: the master's address too, from the conf dir of the host named master2)
HA_HOST_IDS = {"master": ("nn1", "rm1"), "master2": ("nn2", "rm2")}


def jvm_security_opts(spec: ClusterSpec, security_dir: str) -> list[str]:
    """What every JVM of a --kerberos cluster needs: the cluster realm's krb5.conf."""
    return [f"-Djava.security.krb5.conf={security_dir}/krb5.conf"] if spec.kerberos else []


def jvm_opts() -> list[str]:
    return FAST_JVM + ADD_OPENS


def template_environment() -> jinja2.Environment:
    """The jinja2 environment over conf-templates/: an undefined variable is an error."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_host(
    spec: ClusterSpec,
    role: str,
    paths: HostPaths,
    java_home: str,
    worker: Worker | None = None,
    host: str | None = None,
    store_password: str = "",
) -> dict[str, str]:
    """All config files of one host. role: 'master', 'client' or 'worker'; host: 'master2'
    for the second NameNode and RM of --ha (default: the role's). Also what `dsbra conf
    render` writes (role 'master'). ``store_password``: of the --tls key stores."""
    from dsbra.cluster.security import REALM

    env = template_environment()
    namenode_id, rm_id = HA_HOST_IDS.get(host or role, (None, None))
    context = {
        "spec": spec,
        "role": role if worker is None else f"worker {worker.name} ({worker.host})",
        "worker": worker,
        "workers": spec.worker_list,
        "master": spec.master,
        "urls": spec.urls,
        "paths": paths,
        "user": getpass.getuser(),
        "java_home": java_home,
        "container_jvm_opts": " ".join(jvm_opts() + jvm_security_opts(spec, paths.security)),
        "host": worker.host if worker else spec.master,
        "realm": REALM,
        "store_password": store_password,
        **_fair_queues(spec),
        "capacity_queues": spec.capacity_queues or DEFAULT_CAPACITY_QUEUES,
        "ha": {
            "nameservice": HA_NAMESERVICE,
            "journal_nodes": [f"{w.host}:{spec.port('journalnode_rpc')}" for w in spec.journal_nodes],
            "namenode_id": namenode_id,
            "rm_id": rm_id,
            "rm_store": paths.rm_store,
        },
        "shared_cache_root": SHARED_CACHE_ROOT,
    }
    if role == "client":
        context["role"] = "client"
    names = CONFIG_FILES + (TLS_FILES if spec.tls else [])
    if spec.automatic_failover and (host or role) == "master":
        names.append(ZOOKEEPER_FILE)
    return {name: env.get_template(name + ".j2").render(context).strip() + "\n" for name in names}


def _fair_queues(spec: ClusterSpec) -> dict:
    """What fair-scheduler.xml.j2 renders: the spec's queues and placement, else the defaults."""
    return {"queues": spec.queues or DEFAULT_QUEUES, "placement": spec.placement or DEFAULT_PLACEMENT}


def allocation_file(spec: ClusterSpec) -> str:
    """fair-scheduler.xml alone, as render_host writes it: the one file the Fair Scheduler
    reloads while it runs, so an operator (or a benchmark) can change queues without a restart."""
    return template_environment().get_template("fair-scheduler.xml.j2").render(**_fair_queues(spec)).strip() + "\n"


def host_paths(layout: StateLayout, host: str, lib: Path) -> HostPaths:
    from dsbra.cluster.security import security_paths

    data = layout.data(host)
    security = security_paths(layout)
    # the client needs no keytab of its own: it logs in from the ticket cache; --ha's second
    # NameNode and RM (master2) run on the master's address, as the master's principals
    keytab = security.keytab("master" if host in ("client", "master2") else host)
    return HostPaths(conf=str(layout.conf(host)), data=str(data), tmp=str(data / "tmp"), lib=str(lib),
                     heat_uri=layout.heat_file.as_uri(), rm_store=str(layout.rm_store),
                     security=str(security.root), keytab=str(keytab))


def write_configs(spec: ClusterSpec, layout: StateLayout, lib: Path, java_home: str) -> None:
    hosts: list[tuple[str, str, Worker | None]] = [("master", "master", None), ("client", "client", None)]
    if spec.ha:
        hosts.append(("master2", "master", None))
    hosts += [(w.name, "worker", w) for w in spec.worker_list]
    store_password = ""
    if spec.tls:
        from dsbra.cluster.security import store_password as read_store_password

        store_password = read_store_password(layout)
    for host, role, worker in hosts:
        files = render_host(spec, role, host_paths(layout, host, lib), java_home, worker, host,
                            store_password=store_password)
        conf = layout.conf(host)
        conf.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (conf / name).write_text(text)
