"""Apache Spark on the bundled cluster (`dsbra cluster up --spark`).

Spark comes from PyPI: the ``pyspark`` package carries spark-submit, spark-yarn and the Hadoop
client jars. It goes into a virtual environment of its own under .dsbra/spark/<version>, never
into dsbra's (the daemon needs none of its 440 MB). Its jars are zipped once into
``spark-libs.zip`` and uploaded to HDFS at cluster start, so an application references them
(``spark.yarn.archive``) and YARN localizes them once per node instead of each application
shipping them. Event logs go to HDFS; a Spark History Server on the master serves finished
applications' REST API. ``spark-defaults.conf`` is rendered from conf-templates/ with the
locality waits as values; :func:`submit_script` is an executable that submits to this cluster
with no further setting (`dsbra cluster env --json`'s ``spark_submit``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dsbra.cluster.confdir import jvm_opts, jvm_security_opts, template_environment
from dsbra.cluster.jarbuild import cached_jar
from dsbra.cluster.paths import StateLayout, project_root
from dsbra.cluster.security import REALM, SecurityPaths, client_principal, security_paths
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ClusterError

SPARK_VERSION = "4.0.1"
MARKER = ".complete"
#: where the jars' archive and the event logs live in HDFS
ARCHIVE_DIR = "/apps/spark"
EVENT_LOG_DIR = "/spark-history"
HISTORY_MAIN_CLASS = "org.apache.spark.deploy.history.HistoryServer"
#: the History Server's daemon name (`dsbra cluster logs spark-history`) and kind
HISTORY_DAEMON = "spark-history"
HISTORY_KIND = "sparkhistory"
#: --kerberos: the History Server's own principal (it reads every application's event log) and
#: the SPNEGO filter on its web UI and REST API
HISTORY_SERVICE = "spark"
SPNEGO_FILTER = "dsbra.spark.SpnegoFilter"
SPNEGO_SOURCES = [Path(__file__).parent / "java" / "SpnegoFilter.java"]


@dataclass(frozen=True)
class SparkInstall:
    root: Path  # .dsbra/spark/<version>

    @property
    def version(self) -> str:
        return self.root.name

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        """The interpreter PySpark's driver and executors run (the workers share this disk)."""
        return self.venv / "bin" / "python"

    @property
    def home(self) -> Path:
        """SPARK_HOME: the pyspark package (bin/, jars/)."""
        found = sorted(self.venv.glob("lib/python*/site-packages/pyspark"))
        if not found:
            raise ClusterError(f"pyspark missing in {self.venv}; run: dsbra cluster install --spark")
        return found[0]

    @property
    def jars(self) -> Path:
        return self.home / "jars"

    @property
    def archive(self) -> Path:
        """Every jar of jars/, stored uncompressed: what ``spark.yarn.archive`` names in HDFS."""
        return self.root / "spark-libs.zip"


def spark_dir(version: str = SPARK_VERSION) -> Path:
    return Path(os.environ.get("DSBRA_SPARK_DIR", project_root() / ".dsbra" / "spark")) / version


def installed(version: str = SPARK_VERSION) -> SparkInstall | None:
    install = SparkInstall(spark_dir(version))
    return install if (install.root / MARKER).exists() else None


def ensure_spark(version: str = SPARK_VERSION, quiet: bool = False) -> SparkInstall:
    """Idempotent: a venv with ``pyspark==version`` (pip caches the download) and the jars' archive."""
    install = SparkInstall(spark_dir(version))
    if (install.root / MARKER).exists():
        return install
    shutil.rmtree(install.root, ignore_errors=True)
    install.root.mkdir(parents=True)
    say = (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr))
    say(f"fetching Spark {version} from PyPI (pyspark) into {install.venv}")
    _run([sys.executable, "-m", "venv", str(install.venv)], "creating Spark's virtual environment")
    _run([str(install.python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
          f"pyspark=={version}"], f"installing pyspark=={version} from PyPI")
    with zipfile.ZipFile(install.archive.with_suffix(".tmp"), "w", zipfile.ZIP_STORED) as archive:
        for jar in sorted(install.jars.glob("*.jar")):
            archive.write(jar, jar.name)
    install.archive.with_suffix(".tmp").rename(install.archive)
    (install.root / MARKER).write_text(f"pyspark {version}\n")
    return install


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ClusterError(f"{what} failed: {last[0]}")


def archive_path(version: str = SPARK_VERSION) -> str:
    """The archive's HDFS path (HDFS is formatted at each start, so it is uploaded per start)."""
    return f"{ARCHIVE_DIR}/{version}/spark-libs.zip"


def conf_dir(layout: StateLayout) -> Path:
    return layout.conf("spark")


def history_url(spec: ClusterSpec) -> str:
    return f"http://{spec.master}:{spec.port('spark_history')}"


def submit_script(layout: StateLayout) -> Path:
    return layout.root / "bin" / "spark-submit"


def spnego_filter_jar(install: SparkInstall, java_home: Path) -> Path:
    """The History Server's SPNEGO filter (java/SpnegoFilter.java), compiled against the Jakarta
    Servlet API among Spark's jars if not cached yet."""
    servlet = next(install.jars.glob("jakarta.servlet-api-*.jar"), None)
    if servlet is None:
        raise ClusterError(f"the Jakarta Servlet API is missing among Spark's jars ({install.jars})")
    return cached_jar("spnego-filter", SPNEGO_SOURCES, install.root, install.home, java_home, lambda classes: [
        str(java_home / "bin" / "javac"), "-nowarn", "-cp", str(servlet), "-d", str(classes),
        *map(str, SPNEGO_SOURCES)])


def history_properties(layout: StateLayout) -> Path:
    """The History Server's properties: spark-defaults.conf's and, with --kerberos, its login
    and SPNEGO filter (which no application's driver UI must load)."""
    return conf_dir(layout) / "spark-history.conf"


def render_conf(spec: ClusterSpec, layout: StateLayout, install: SparkInstall, java_home: str) -> dict[str, str]:
    """spark-defaults.conf, the History Server's properties and log4j2.properties of this
    cluster's Spark clients and History Server."""
    log4j2 = template_environment().get_template("log4j2.properties.j2").render(logs=str(layout.logs))
    kw = {"archive": spec.urls["fs"] + archive_path(install.version), "python": str(install.python),
          "java_home": java_home, "security_dir": str(security_paths(layout).root)}
    return {"spark-defaults.conf": render_defaults(spec, **kw),
            history_properties(layout).name: render_defaults(spec, history_server=True, **kw),
            "log4j2.properties": log4j2.strip() + "\n"}


def render_defaults(spec: ClusterSpec, *, archive: str, python: str, java_home: str, security_dir: str = "",
                    history_server: bool = False) -> str:
    """spark-defaults.conf alone, which needs neither Spark nor a state directory: what `dsbra
    conf render` writes too. ``archive``: spark.yarn.archive, the jars' archive as Spark reads it;
    ``security_dir``: a --kerberos cluster's (krb5.conf, keytabs); ``history_server``: the
    History Server's properties instead."""
    security = SecurityPaths(Path(security_dir))
    context = {
        "history_server": history_server,
        "realm": REALM,
        "krb5_conf": security.krb5_conf,
        "master_keytab": security.keytab("master"),
        "history_service": HISTORY_SERVICE,
        "spnego_filter": SPNEGO_FILTER,
        "spec": spec,
        "master": spec.master,
        "archive": archive,
        "event_log_dir": spec.urls["fs"] + EVENT_LOG_DIR,
        "history_port": spec.port("spark_history"),
        "history_url": history_url(spec),
        "python": python,
        "java_home": java_home,
    }
    return template_environment().get_template("spark-defaults.conf.j2").render(context).strip() + "\n"


def write_conf(spec: ClusterSpec, layout: StateLayout, install: SparkInstall, java_home: str) -> None:
    """The Spark conf dir and the spark-submit wrapper that points at it."""
    folder = conf_dir(layout)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in render_conf(spec, layout, install, java_home).items():
        (folder / name).write_text(text)
    script = submit_script(layout)
    script.parent.mkdir(parents=True, exist_ok=True)
    security = security_paths(layout)
    kerberos = (
        "# --kerberos: as the cluster's client, with a fresh ticket from its keytab; spark-submit\n"
        "# takes the delegation tokens the application runs on\n"
        f"export KRB5_CONFIG='{security.krb5_conf}' KRB5CCNAME='{security.client_ccache}'\n"
        f"export SPARK_SUBMIT_OPTS='-Djava.security.krb5.conf={security.krb5_conf}'\n"
        f"kinit -kt '{security.keytab('client')}' '{client_principal()}' || exit 1\n"
    ) if spec.kerberos else ""
    script.write_text(
        "#!/bin/sh\n"
        "# written by `dsbra cluster up --spark`: spark-submit against this cluster\n"
        f"{kerberos}"
        f"export JAVA_HOME='{java_home}'\n"
        f"export SPARK_HOME='{install.home}'\n"
        f"export SPARK_CONF_DIR='{folder}'\n"
        f"export HADOOP_CONF_DIR='{layout.conf('client')}'\n"
        f"export PYSPARK_PYTHON='{install.python}'\n"
        "unset CLASSPATH\n"
        f"exec '{install.home}/bin/spark-submit' \"$@\"\n"
    )
    script.chmod(0o755)


def history_command(spec: ClusterSpec, layout: StateLayout, install: SparkInstall, java_home: Path,
                    heap: str) -> list[str]:
    """The History Server as a plain JVM, tagged like every cluster daemon (dsbra.cluster.daemons)."""
    classpath = [str(conf_dir(layout)), str(layout.conf("client")), str(install.jars / "*")]
    if spec.kerberos:
        classpath.append(str(spnego_filter_jar(install, java_home)))
    return [
        str(java_home / "bin" / "java"), f"-Xmx{heap}", *jvm_opts(),
        *jvm_security_opts(spec, str(security_paths(layout).root)),
        f"-Ddsbra.daemon={HISTORY_DAEMON}", f"-Ddsbra.state={layout.root}",
        f"-Dlog4j2.configurationFile={conf_dir(layout) / 'log4j2.properties'}",
        "-Ddsbra.log.appender=file", f"-Ddsbra.log.file={layout.log(HISTORY_DAEMON)}",
        "-cp", os.pathsep.join(classpath), HISTORY_MAIN_CLASS,
        "--properties-file", str(history_properties(layout)),
    ]
