"""Fetch the Hadoop jars from Maven Central (through hadoop/pom.xml) and find Java.

The jars land in .dsbra/hadoop/<version>/lib; a marker file makes the step idempotent (it names
the version and the pom's digest, so jars a changed pom adds are fetched into an older install).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dsbra.cluster.paths import hadoop_home, placement_jar, project_root
from dsbra.cluster.spec import NO_SHARED_CACHE
from dsbra.errors import ClusterError

MARKER = ".complete"
#: Maven Central has no hadoop-mapreduce-examples for these; the grep job of the nearest release
#: (plain MapReduce API) runs on them unchanged
EXAMPLES_VERSION = {"3.5.0": "3.4.2"}
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


@dataclass(frozen=True)
class HadoopInstall:
    home: Path

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    @property
    def webapps_root(self) -> Path:
        """A classpath directory holding webapps/hdfs and webapps/datanode (NameNode/DataNode UIs)."""
        return self.home / "webapps-root"

    @property
    def examples_jar(self) -> Path:
        jars = sorted(self.lib.glob("hadoop-mapreduce-examples-*.jar"))
        if not jars:
            raise ClusterError(f"hadoop-mapreduce-examples jar missing in {self.lib}; run: dsbra cluster install")
        return jars[0]


def find_java() -> Path:
    """JAVA_HOME of the JDK to run Hadoop with ($JAVA_HOME, else `java` on PATH)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return Path(home)
    java = shutil.which("java")
    if java is None:
        raise ClusterError(
            "Java not found: install a JDK 17 (apt-get install -y openjdk-17-jdk-headless) or set JAVA_HOME"
        )
    return Path(java).resolve().parents[1]


def ensure_hadoop(version: str, quiet: bool = False) -> HadoopInstall:
    """Idempotent: download the jars once per version, then reuse them."""
    install = HadoopInstall(hadoop_home(version))
    pom = project_root() / "hadoop" / "pom.xml"
    marker = f"{version} {hashlib.sha256(pom.read_bytes()).hexdigest()}\n"
    done = install.home / MARKER
    if done.exists() and done.read_text() == marker:
        return install
    maven_fetch(f"Hadoop {version}", pom, install.home, install.lib,
                {"hadoop.version": version, "examples.version": EXAMPLES_VERSION.get(version, version),
                 "dsbra.lib.dir": str(install.lib), "dsbra.extra.dir": str(install.home / "extra"),
                 **({"dsbra.no.sharedcache": "true"} if version in NO_SHARED_CACHE else {})},
                [f"{DEPENDENCY_PLUGIN}:copy-dependencies", f"{DEPENDENCY_PLUGIN}:copy"], quiet=quiet)
    _extract_webapps(install)
    done.write_text(marker)
    return install


def ensure_placement(version: str, quiet: bool = False) -> Path:
    """Idempotent: dsbra's NameNode placement plugin built for Hadoop ``version`` (`make setup`
    builds it with its JUnit tests; this builds it without them if it is missing)."""
    jar = placement_jar(version)
    if jar.exists():
        return jar
    maven_fetch(f"the placement plugin for Hadoop {version} (and its build's)",
                project_root() / "placement" / "pom.xml", jar.parent, jar.parent,
                {"hadoop.version": version, "dsbra.placement.dir": str(jar.parent),
                 "skipTests": "true"}, ["package"], quiet=quiet)
    if not jar.exists():
        raise ClusterError(f"the placement plugin build left no {jar}; see {jar.parent / 'mvn.log'}")
    return jar


def maven_fetch(what: str, pom: Path, home: Path, lib: Path, properties: dict[str, str], goals: list[str],
                quiet: bool = False) -> None:
    """Run Maven on ``pom`` with ``properties`` and ``goals`` (the jars of ``what`` into ``lib``),
    its output in ``home``/mvn.log; a one-line ClusterError if it fails. $DSBRA_MAVEN_REPO is a
    mirror of Maven Central, $DSBRA_MAVEN_LOCAL_REPO a local repository other than ~/.m2."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError("Maven (mvn) not found: install it (apt-get install -y maven)")
    home.mkdir(parents=True, exist_ok=True)
    log = home / "mvn.log"
    if not quiet:
        print(f"fetching {what} jars from Maven Central into {lib} (log: {log}) ...", flush=True)
    flags = dict(properties)
    if os.environ.get("DSBRA_MAVEN_REPO"):
        flags["dsbra.maven.repo"] = os.environ["DSBRA_MAVEN_REPO"]
    if os.environ.get("DSBRA_MAVEN_LOCAL_REPO"):
        flags["maven.repo.local"] = os.environ["DSBRA_MAVEN_LOCAL_REPO"]
    cmd = [mvn, "-B", "-q", "-f", str(pom), *(f"-D{k}={v}" for k, v in flags.items()), *goals]
    with open(log, "w") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    if rc != 0:
        source = os.environ.get("DSBRA_MAVEN_REPO") or "Maven Central"
        raise ClusterError(f"could not fetch {what} jars from {source} ({_mvn_reason(log)}); see {log}")


def _mvn_reason(log: Path) -> str:
    text = log.read_text(errors="replace")
    for needle, reason in (
        ("UnknownHost", "Maven Central unreachable: unknown host"),
        ("Connection refused", "Maven Central unreachable: connection refused"),
        ("Connect to", "Maven Central unreachable"),
        ("Could not transfer", "Maven Central unreachable"),
        ("Could not resolve", "Maven Central unreachable or an artifact missing"),
        ("was not found", "an artifact is not on Maven Central"),
    ):
        if needle in text:
            return reason
    return "mvn failed"


def _extract_webapps(install: HadoopInstall) -> None:
    """The NameNode/DataNode web UIs ship only in the hadoop-hdfs tests jar; take webapps/ from it."""
    tests_jars = sorted((install.home / "extra").glob("hadoop-hdfs-*-tests.jar"))
    if not tests_jars:
        raise ClusterError(f"hadoop-hdfs tests jar missing in {install.home / 'extra'}")
    target = install.webapps_root
    shutil.rmtree(target, ignore_errors=True)
    with zipfile.ZipFile(tests_jars[0]) as jar:
        for name in jar.namelist():
            if name.startswith("webapps/"):
                jar.extract(name, target)
