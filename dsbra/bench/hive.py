"""Hive as the second engine of `dsbra bench replay`: a real HiveServer2 against the bundled cluster.

The Hive jars come from Maven Central through hive/pom.xml (``ensure_hive``, `dsbra bench hive
install`) into .dsbra/hive/<version>/lib. ``start_server`` runs HiveServer2 from the root
namespace (like a job client) with, on its classpath, its hive-site.xml (rendered from
conf-templates/hive-site.xml.j2) and the cluster's own client conf dir, so every query is a
MapReduce job on the cluster's YARN reading HDFS; its metastore is an embedded Derby database
under the cluster's state dir (<state>/hive/).

Each schedule job reads only its own files: a per-job external table whose location holds one
symlink file listing the job's inputs (SymlinkTextInputFormat), so the job's query is literally
``SELECT * FROM <job table> WHERE field LIKE '%XYZ%'`` over exactly those one-block files, one map
each with the file's real block locations. The MapReduce job Hive launches carries the schedule
job's name (``mapreduce.job.name``), by which the RM listing maps it back.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dsbra.cluster import state as st
from dsbra.cluster.confdir import ADD_OPENS, template_environment
from dsbra.cluster.install import DEPENDENCY_PLUGIN, maven_fetch
from dsbra.cluster.jobs import start_at
from dsbra.cluster.paths import StateLayout, project_root
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ClusterError, DsbraError, HadoopError, InputError
from dsbra.observe.hadoop_conf import read_site

HIVE_VERSION = "4.0.1"
MARKER = ".complete"
MAIN_CLASS = "org.apache.hive.service.server.HiveServer2"
#: the HiveServer2 Thrift port before the cluster's --port-offset (bound to the master's address)
BASE_PORT = 10000
HEAP = "1g"
SYMLINK_INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat"
TEXT_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
#: the grep data's columns (dsbra.cluster.jobs.grep_lines, dsbra.bench.data): a 10-character key,
#: a tab, then the 90-character field (10-digit row id and 80 characters), as in the benchmark
TABLE_COLUMNS = "key STRING, field STRING"
PATTERN = "XYZ"
TABLE_DIR = "/bench/hive"


# ---------------------------------------------------------------------------------------- install
@dataclass(frozen=True)
class HiveInstall:
    home: Path

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    @property
    def complete(self) -> bool:
        return (self.home / MARKER).exists()


def hive_home(version: str = HIVE_VERSION) -> Path:
    return Path(os.environ.get("DSBRA_HIVE_DIR", project_root() / ".dsbra" / "hive")) / version


def installed(version: str = HIVE_VERSION) -> HiveInstall:
    """The install, or a one-line InputError saying how to make it."""
    install = HiveInstall(hive_home(version))
    if not install.complete:
        raise InputError(f"Hive {version} is not installed in {install.home}; run: dsbra bench hive install")
    return install


def ensure_hive(version: str = HIVE_VERSION, quiet: bool = False) -> HiveInstall:
    """Idempotent: fetch the jars of hive/pom.xml once, then reuse them."""
    install = HiveInstall(hive_home(version))
    if install.complete:
        return install
    maven_fetch(f"Hive {version}", project_root() / "hive" / "pom.xml", install.home, install.lib,
                {"hive.version": version, "dsbra.lib.dir": str(install.lib)},
                [f"{DEPENDENCY_PLUGIN}:copy-dependencies"], quiet=quiet)
    if not any(install.lib.glob("hive-service-*.jar")):
        raise ClusterError(f"hive-service jar missing in {install.lib} after mvn; see {install.home / 'mvn.log'}")
    (install.home / MARKER).write_text(version + "\n")
    return install


# ------------------------------------------------------------------------------- server layout
@dataclass(frozen=True)
class ServerPaths:
    """Where one cluster's HiveServer2 keeps its state: <cluster state dir>/hive/."""

    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "conf"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def log(self) -> Path:
        return self.logs / "hiveserver2.log"

    @property
    def out(self) -> Path:
        return self.logs / "hiveserver2.out"

    @property
    def pid_file(self) -> Path:
        return self.root / "hiveserver2.pid"

    @property
    def metastore_db(self) -> Path:
        return self.root / "metastore_db"

    @property
    def local_scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def operation_logs(self) -> Path:
        return self.root / "operation_logs"


def server_paths(layout: StateLayout) -> ServerPaths:
    return ServerPaths(layout.root / "hive")


def server_address(spec: ClusterSpec) -> tuple[str, int]:
    """HiveServer2's Thrift address: the master's, at 10000 + the cluster's port offset."""
    return spec.master, BASE_PORT + spec.port_offset


#: jars the map tasks need beyond the cluster's Hadoop and the job jar (hive-exec, which does not
#: shade them): shipped with every job (Hive's aux jars become the job's -libjars)
TASK_JARS = ("commons-collections-3*.jar",)


def task_jars(install: HiveInstall) -> list[Path]:
    found = [sorted(install.lib.glob(pattern)) for pattern in TASK_JARS]
    missing = [p for p, f in zip(TASK_JARS, found) if not f]
    if missing:
        raise ClusterError(f"{missing[0]} missing in {install.lib}; reinstall: rm -r {install.home} && "
                           f"dsbra bench hive install")
    return [f[-1] for f in found]


def render_hive_site(host: str, port: int, paths: ServerPaths, aux_jars: list[Path] = (),
                     shared_cache: bool = False) -> str:
    """hive-site.xml from conf-templates/hive-site.xml.j2; ``shared_cache``: the cluster runs
    YARN's shared cache (ClusterSpec.shared_cache), so the queries' jobs use it. Pure."""
    context = {"host": host, "port": port, "aux_jars": ",".join(f"file://{p}" for p in aux_jars),
               "shared_cache": shared_cache,
               "paths": {name: str(getattr(paths, name))
                         for name in ("metastore_db", "local_scratch", "operation_logs", "logs")}}
    return template_environment().get_template("hive-site.xml.j2").render(context).strip() + "\n"


def server_command(java_home: Path, install: HiveInstall, paths: ServerPaths, client_conf: Path) -> list[str]:
    """The HiveServer2 JVM: its conf, then the cluster's client conf (HDFS, YARN, MapReduce),
    then the Hive jars. Java 17 needs the JDK internals opened (Kryo serialises query plans).
    It carries the cluster's state marker, so `dsbra cluster down` stops it with the cluster."""
    return [
        str(java_home / "bin" / "java"), f"-Xmx{HEAP}", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
        f"-Ddsbra.state={paths.root.parent}",
        *ADD_OPENS,
        f"-Dhive.log.dir={paths.logs}", "-Dhive.log.file=hiveserver2.log", "-Dhive.log.level=INFO",
        f"-Dderby.stream.error.file={paths.logs / 'derby.log'}",
        f"-Djava.io.tmpdir={paths.local_scratch}",
        "-cp", os.pathsep.join([str(paths.conf), str(client_conf), str(install.lib / "*")]),
        MAIN_CLASS,
    ]


# ------------------------------------------------------------------------------- server control
@dataclass
class Server:
    host: str
    port: int
    pid: int
    paths: ServerPaths


def _cluster(layout: StateLayout) -> tuple[dict, ClusterSpec]:
    data = st.load(layout.state_file)
    if data is None or data.get("phase") != "up":
        raise ClusterError(f"the cluster of {layout.root} is not up; start it with: dsbra cluster up")
    return data, ClusterSpec.from_dict(data["spec"])


def _alive(pid: int, paths: ServerPaths) -> bool:
    """Whether ``pid`` is this cluster's HiveServer2 (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return MAIN_CLASS in cmdline and str(paths.conf) in cmdline


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def _live_pid(paths: ServerPaths) -> int | None:
    """The pid in the pid file if that process is this cluster's HiveServer2."""
    try:
        pid = int(paths.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid, paths) else None


def running(layout: StateLayout) -> Server | None:
    """This cluster's HiveServer2 if its process runs (ready or not)."""
    paths = server_paths(layout)
    pid = _live_pid(paths)
    if pid is None:
        return None
    data = st.load(layout.state_file) or {}
    if "spec" not in data:
        return None
    host, port = server_address(ClusterSpec.from_dict(data["spec"]))
    return Server(host, port, pid, paths)


def start_server(layout: StateLayout, *, timeout_s: float = 300.0, log=lambda msg: None,
                 shared_cache: bool | None = None) -> tuple[Server, bool]:
    """Start the cluster's HiveServer2 and wait until it opens sessions; (server, started).
    Already running and ready: returned as it is (started False). ``shared_cache``: whether
    its queries' jobs use YARN's shared cache (None: if the cluster runs one); a running
    server started otherwise is an error, not silently kept."""
    data, spec = _cluster(layout)
    if shared_cache and not spec.shared_cache:
        raise InputError("--shared-cache: the cluster runs no SharedCacheManager; bring it up with "
                         "dsbra cluster up --shared-cache")
    use_cache = spec.shared_cache if shared_cache is None else shared_cache
    install = installed()
    paths = server_paths(layout)
    host, port = server_address(spec)
    current = running(layout)
    if current is not None:
        if shared_cache is not None and uses_shared_cache(paths) != use_cache:
            raise InputError(f"HiveServer2 already runs with the shared cache {'off' if use_cache else 'on'};"
                             f" stop it first: dsbra bench hive stop")
        _wait_ready(current, timeout_s)
        return current, False
    if _listening(host, port):
        raise ClusterError(f"{host}:{port} is taken by another process; HiveServer2 cannot bind it")
    for d in (paths.conf, paths.logs, paths.local_scratch, paths.operation_logs):
        d.mkdir(parents=True, exist_ok=True)
    (paths.conf / "hive-site.xml").write_text(render_hive_site(host, port, paths, task_jars(install),
                                                                     shared_cache=use_cache))
    cmd = server_command(Path(data["java_home"]), install, paths, layout.conf("client"))
    env = {k: v for k, v in os.environ.items() if k not in ("CLASSPATH", "HADOOP_CONF_DIR", "HIVE_CONF_DIR")}
    log(f"starting HiveServer2 on {host}:{port} (log: {paths.log})")
    if paths.out.exists():  # this start's errors only in .out (the previous run's kept in .out.1)
        paths.out.replace(paths.out.with_name(paths.out.name + ".1"))
    with open(paths.out, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=paths.root, env=env, start_new_session=True)
    paths.pid_file.write_text(f"{proc.pid}\n")
    server = Server(host, port, proc.pid, paths)
    try:
        _wait_ready(server, timeout_s, proc)
    except BaseException:
        if proc.poll() is None:  # our own child: stopped by its handle, whatever its /proc says
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        paths.pid_file.unlink(missing_ok=True)
        raise
    return server, True


def uses_shared_cache(paths: ServerPaths) -> bool:
    """Whether the hive-site.xml HiveServer2 was started with has its jobs use the shared cache."""
    mode = read_site(paths.conf / "hive-site.xml").get("mapreduce.job.sharedcache.mode", "disabled")
    return mode not in ("", "disabled")


def _wait_ready(server: Server, timeout_s: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        # a process we started: its exit status (right after the fork its command line is not
        # java's yet); one found running: its /proc entry
        if (proc.poll() is not None) if proc is not None else not _alive(server.pid, server.paths):
            raise ClusterError(f"HiveServer2 exited during start-up: {last_error(server.paths)}; "
                               f"see {server.paths.logs}")
        if _listening(server.host, server.port):
            try:
                connect(server).close()
                return
            except DsbraError:
                pass  # the port opens a moment before sessions do
        if time.monotonic() >= deadline:
            raise ClusterError(f"HiveServer2 did not accept sessions on {server.host}:{server.port} within "
                               f"{timeout_s:.0f} s: {last_error(server.paths)}; see {server.paths.logs}")
        time.sleep(2)


def last_error(paths: ServerPaths) -> str:
    """The last ERROR or exception line of the server's log and output (one line)."""
    for path in (paths.out, paths.log):
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            if " ERROR " in line or "Exception" in line or "Error:" in line:
                return line.strip()[:300]
    return "no error line in its log"


def stop_server(layout: StateLayout, timeout_s: float = 60.0) -> bool:
    """Stop this cluster's HiveServer2 (SIGTERM, then SIGKILL); False if none ran."""
    paths = server_paths(layout)
    pid = _live_pid(paths)
    if pid is None:
        paths.pid_file.unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _alive(pid, paths) and time.monotonic() < deadline:
        time.sleep(0.5)
    if _alive(pid, paths):
        os.kill(pid, signal.SIGKILL)
        while _alive(pid, paths):
            time.sleep(0.2)
    paths.pid_file.unlink(missing_ok=True)
    return True


def connect(server: Server, configuration: dict[str, str] | None = None):
    """A HiveServer2 session (PyHive, NOSASL)."""
    from pyhive import hive
    from thrift.Thrift import TException

    try:
        return hive.connect(host=server.host, port=server.port, username="root", auth="NOSASL",
                            configuration=configuration)
    except (TException, OSError, EOFError) as exc:
        raise HadoopError(f"HiveServer2 {server.host}:{server.port}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if hasattr(exc, "status") and getattr(exc.status, "errorMessage", None):  # PyHive OperationalError
        text = exc.status.errorMessage
    elif exc.args and hasattr(exc.args[0], "status"):
        text = getattr(exc.args[0].status, "errorMessage", None) or text
    return " ".join(str(text).split())[:300]


# ----------------------------------------------------------------------------- per-job tables
def job_name(job_id: str) -> str:
    """The MapReduce job name of a schedule job, either engine (`bench-<job id>`)."""
    return f"bench-{job_id}"


def table_name(label: str, job_id: str) -> str:
    """A schedule job's table: `bench_<label>_<job id>`, lower case, [a-z0-9_] only."""
    return re.sub(r"[^a-z0-9_]", "_", f"bench_{label}_{job_id}".lower())


def table_location(label: str, job_id: str) -> str:
    return f"{TABLE_DIR}/{label}/{job_id}"


def symlink_text(inputs: list[str]) -> str:
    """The symlink file of a job's table: one input path per line."""
    bad = [p for p in inputs if not p.startswith("/") or "\n" in p]
    if bad:
        raise InputError(f"input paths must be absolute HDFS paths, got {bad[0]!r}")
    return "".join(p + "\n" for p in inputs)


def create_table_sql(table: str, location: str) -> str:
    return (f"CREATE EXTERNAL TABLE IF NOT EXISTS {table} ({TABLE_COLUMNS}) "
            f"ROW FORMAT DELIMITED FIELDS TERMINATED BY '\\t' "
            f"STORED AS INPUTFORMAT '{SYMLINK_INPUT_FORMAT}' OUTPUTFORMAT '{TEXT_OUTPUT_FORMAT}' "
            f"LOCATION '{location}'")


def query_sql(table: str) -> str:
    """The Hive grep benchmark's query over one job's table."""
    return f"SELECT * FROM {table} WHERE field LIKE '%{PATTERN}%'"


def session_conf(job_id: str, queue: str | None = None) -> dict[str, str]:
    conf = {"mapreduce.job.name": job_name(job_id)}
    if queue:
        conf["mapreduce.job.queuename"] = queue
    return conf


def create_tables(server: Server, hdfs_client, jobs: list[dict], label: str) -> list[str]:
    """Write each job's symlink file and create its table; returns the table names."""
    tables = []
    conn = connect(server)
    try:
        cursor = conn.cursor()
        for job in jobs:
            location = table_location(label, job["job_id"])
            hdfs_client.write(f"{location}/symlink.txt", symlink_text(job["inputs"]), overwrite=True,
                              encoding="utf-8")
            table = table_name(label, job["job_id"])
            _execute(cursor, f"DROP TABLE IF EXISTS {table}")
            _execute(cursor, create_table_sql(table, location))
            tables.append(table)
    finally:
        conn.close()
    return tables


def drop_tables(server: Server, hdfs_client, tables: list[str], label: str) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        for table in tables:
            _execute(cursor, f"DROP TABLE IF EXISTS {table}")
    finally:
        conn.close()
    hdfs_client.delete(f"{TABLE_DIR}/{label}", recursive=True)


def _execute(cursor, sql: str) -> None:
    try:
        cursor.execute(sql)
    except Exception as exc:  # PyHive raises OperationalError/Thrift errors; all one line here
        raise HadoopError(f"Hive: {sql[:80]}: {_one_line(exc)}") from None


# ------------------------------------------------------------------------------ running queries
@dataclass
class QueryResult:
    returncode: int
    rows: int | None
    error: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass
class QueryRun:
    """One schedule job's query, running in its own thread and HiveServer2 session."""

    job_id: str
    sql: str
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    rows: int | None = None
    error: str | None = None
    thread: threading.Thread | None = None

    def poll(self) -> int | None:
        if self.thread is not None and self.thread.is_alive():
            return None
        return 0 if self.error is None else 1

    def wait(self, timeout: float | None = None, check: bool = True) -> QueryResult:
        if self.thread is not None:
            self.thread.join(timeout)
            if self.thread.is_alive():
                raise HadoopError(f"Hive query of {self.job_id} did not finish in {timeout} s")
        rc = 0 if self.error is None else 1
        if check and rc:
            raise HadoopError(f"Hive query of {self.job_id} failed: {self.error}")
        return QueryResult(rc, self.rows, self.error, (self.finished or time.monotonic()) - self.started)


def _run_query(server: Server, run: QueryRun, conf: dict[str, str], timeout_s: float) -> None:
    from pyhive import hive
    from TCLIService.ttypes import TOperationState

    conn = None
    try:
        conn = connect(server, conf)
        cursor = conn.cursor()
        cursor.execute(run.sql, async_=True)
        deadline = run.started + timeout_s
        while True:
            state = cursor.poll().operationState
            if state not in (TOperationState.INITIALIZED_STATE, TOperationState.PENDING_STATE,
                             TOperationState.RUNNING_STATE):
                break
            if time.monotonic() >= deadline:
                cursor.cancel()
                raise HadoopError(f"did not finish in {timeout_s:.0f} s (cancelled)")
            time.sleep(1.0)
        if state != TOperationState.FINISHED_STATE:
            status = cursor.poll()
            raise HadoopError(" ".join((status.errorMessage or f"state {state}").split())[:300])
        run.rows = len(cursor.fetchall())
    except (DsbraError, hive.OperationalError, hive.DatabaseError) as exc:
        run.error = str(exc) if isinstance(exc, DsbraError) else _one_line(exc)
    except Exception as exc:  # a Thrift transport error: the job failed, the replay goes on
        run.error = f"{type(exc).__name__}: {_one_line(exc)}"
    finally:
        run.finished = time.monotonic()
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass


def submit_queries_at(server: Server, jobs: list[dict], tables: list[str], offsets_s: list[float], tick, *,
                      t0: float, queue: str | None = None, timeout_s: float = 1800.0,
                      interval_s: float = 2.0) -> list[QueryRun]:
    """Start each job's query ``offsets_s[i]`` after ``t0`` (a late one at once), each in its own
    thread and session, and call ``tick(runs)`` every ``interval_s`` until all have ended."""
    def start(i: int) -> QueryRun:
        job = jobs[i]
        run = QueryRun(job["job_id"], query_sql(tables[i]))
        run.thread = threading.Thread(target=_run_query, name=f"hive-{job['job_id']}", daemon=True,
                                      args=(server, run, session_conf(job["job_id"], queue), timeout_s))
        run.thread.start()
        return run

    return start_at(start, offsets_s, tick, t0=t0, interval_s=interval_s)


def match_jobs(apps: list[dict], names: list[str], since_ms: int) -> list[str | None]:
    """The Hadoop job id of each name: the MapReduce application of that name started at or after
    ``since_ms`` (the first one if several). Pure."""
    by_name: dict[str, tuple[int, str]] = {}
    for app in apps:
        name, app_id, started = app.get("name"), str(app.get("id") or ""), int(app.get("startedTime") or 0)
        if name in names and app_id.startswith("application_") and started >= since_ms:
            if name not in by_name or started < by_name[name][0]:
                by_name[name] = (started, "job_" + app_id[len("application_"):])
    return [by_name[n][1] if n in by_name else None for n in names]


# ------------------------------------------------------------------------------ expected rows
def count_matches(block: bytes, line_bytes: int = 102, pattern: bytes = PATTERN.encode()) -> int:
    """Lines of a grep-table block whose field (after the key and tab) holds ``pattern``. Pure."""
    lines = np.frombuffer(block, dtype=np.uint8).reshape(-1, line_bytes)[:, 11:-1]  # the field
    hit = np.ones((lines.shape[0], lines.shape[1] - len(pattern) + 1), dtype=bool)
    for k, ch in enumerate(pattern):
        hit &= lines[:, k:lines.shape[1] - len(pattern) + 1 + k] == ch
    return int(hit.any(axis=1).sum())


def expected_rows(dataset: dict, inputs: list[str], cache: dict[str, int] | None = None) -> int:
    """The rows the query must return over ``inputs``, from the data generator itself."""
    from dsbra.bench.data import grep_block

    total = 0
    for path in inputs:
        if cache is not None and path in cache:
            total += cache[path]
            continue
        index = int(path.rsplit("part-", 1)[1])
        n = dataset["lines_per_file"]
        count = count_matches(grep_block(n, dataset["seed"], index, first_row=index * n),
                              dataset.get("line_bytes", 102))
        if cache is not None:
            cache[path] = count
        total += count
    return total
