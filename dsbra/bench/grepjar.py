"""The map-only grep job (java/GrepScan.java) and the submitter of a whole schedule of them from
one JVM (java/GrepSubmitter.java), compiled once against the cluster's Hadoop jars; and Spark's
grep as a Scala application (spark/Grep.scala), compiled once with the Scala compiler Spark ships.

The MapReduce examples' grep runs a second (sort) job per query and counts matches through a
reducer; the Hive benchmark's query is a scan that keeps matching lines, so the benchmark runs
this map-only job instead. Each jar is cached by a hash of its sources and the jars it was
compiled against.
"""

from __future__ import annotations

import os
from pathlib import Path

from dsbra.cluster.install import HadoopInstall
from dsbra.cluster.jarbuild import cached_jar
from dsbra.cluster.paths import project_root
from dsbra.cluster.spark import SparkInstall
from dsbra.errors import ClusterError

SOURCES = sorted(Path(__file__).with_name("java").glob("*.java"))
MAIN_CLASS = "dsbra.GrepScan"
SUBMITTER_CLASS = "dsbra.GrepSubmitter"
SPARK_SOURCES = [Path(__file__).parent / "spark" / "Grep.scala"]
SPARK_MAIN_CLASS = "dsbra.bench.Grep"


def bench_dir() -> Path:
    return Path(os.environ.get("DSBRA_BENCH_DIR", project_root() / ".dsbra" / "bench"))


def cluster_grep_jar(state: dict) -> Path:
    """The jar for a bundled cluster, from its state file's data (`dsbra.cluster.state.load`):
    its Hadoop install and JDK."""
    return grep_jar(HadoopInstall(Path(state["hadoop_home"])), Path(state["java_home"]))


def grep_jar(install: HadoopInstall, java_home: Path) -> Path:
    """The MapReduce jar's path, built with the JDK's javac if not cached yet."""
    javac = java_home / "bin" / "javac"
    if not javac.exists():
        raise ClusterError(f"building the grep job needs a JDK (javac in {java_home / 'bin'})")
    return cached_jar("grep-scan", SOURCES, bench_dir(), install.home, java_home, lambda classes: [
        str(javac), "-nowarn", "-cp", str(install.lib / "*"), "-d", str(classes), *map(str, SOURCES)])


def spark_grep_jar(install: SparkInstall, java_home: Path) -> Path:
    """The Scala grep's jar (main class :data:`SPARK_MAIN_CLASS`), compiled with the
    scala-compiler jar among Spark's own, against Spark's jars, if not cached yet."""
    compiler = [next(install.jars.glob(f"{name}-2.*.jar"), None)
                for name in ("scala-compiler", "scala-library", "scala-reflect")]
    if None in compiler:
        raise ClusterError(f"building the Scala grep needs the Scala compiler among Spark's jars ({install.jars})")
    return cached_jar("spark-grep", SPARK_SOURCES, bench_dir(), install.home, java_home, lambda classes: [
        str(java_home / "bin" / "java"), "-Xss4m", "-cp", os.pathsep.join(map(str, compiler)),
        "scala.tools.nsc.Main", "-nowarn", "-classpath", str(install.jars / "*"), "-d", str(classes),
        *map(str, SPARK_SOURCES)])
