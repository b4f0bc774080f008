"""The map-only grep job (java/GrepScan.java) and the submitter of a whole schedule of them from
one JVM (java/GrepSubmitter.java), compiled once against the cluster's Hadoop jars.

The MapReduce examples' grep runs a second (sort) job per query and counts matches through a
reducer; the Hive benchmark's query is a scan that keeps matching lines, so the benchmark runs
this map-only job instead. The jar is cached by a hash of the sources and the Hadoop version.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from dsbra.cluster.install import HadoopInstall
from dsbra.cluster.paths import project_root
from dsbra.errors import ClusterError

SOURCES = sorted(Path(__file__).with_name("java").glob("*.java"))
MAIN_CLASS = "dsbra.GrepScan"
SUBMITTER_CLASS = "dsbra.GrepSubmitter"


def cluster_grep_jar(state: dict) -> Path:
    """The jar for a bundled cluster, from its state file's data (`dsbra.cluster.state.load`):
    its Hadoop install and JDK."""
    return grep_jar(HadoopInstall(Path(state["hadoop_home"])), Path(state["java_home"]))


def grep_jar(install: HadoopInstall, java_home: Path) -> Path:
    """The jar's path, built with the JDK's javac if not cached yet."""
    source = b"".join(path.name.encode() + b"\0" + path.read_bytes() for path in SOURCES)
    digest = hashlib.sha256(source + str(install.home).encode()).hexdigest()[:12]
    out = Path(os.environ.get("DSBRA_BENCH_DIR", project_root() / ".dsbra" / "bench")) / f"grep-scan-{digest}.jar"
    if out.exists():
        return out
    javac, jar = java_home / "bin" / "javac", java_home / "bin" / "jar"
    if not javac.exists() or not jar.exists():
        raise ClusterError(f"building the grep job needs a JDK (javac and jar in {java_home / 'bin'})")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        for cmd in ([str(javac), "-nowarn", "-cp", str(install.lib / "*"), "-d", str(classes),
                     *map(str, SOURCES)],
                    [str(jar), "cf", str(Path(tmp) / "grep-scan.jar"), "-C", str(classes), "."]):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise ClusterError(f"building the grep job failed: {(proc.stderr or proc.stdout).strip()[:300]}")
        shutil.move(str(Path(tmp) / "grep-scan.jar"), out)
    return out
