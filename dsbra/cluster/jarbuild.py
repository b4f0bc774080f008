"""Jars dsbra compiles from its own sources at set-up (the benchmark's grep jobs, the Spark
History Server's SPNEGO filter), each cached by a hash of its sources and what it was compiled
against, so a changed source or a new install builds a new jar and nothing stale is reused."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from dsbra.errors import ClusterError


def cached_jar(name: str, sources: list[Path], folder: Path, against: Path, java_home: Path, compile_into) -> Path:
    """``compile_into(classes_dir)``'s command run and its classes put in a jar, cached under
    ``folder`` by a hash of the sources and of ``against`` (the install compiled against)."""
    source = b"".join(path.name.encode() + b"\0" + path.read_bytes() for path in sources)
    digest = hashlib.sha256(source + str(against).encode()).hexdigest()[:12]
    out = folder / f"{name}-{digest}.jar"
    if out.exists():
        return out
    jar = java_home / "bin" / "jar"
    if not jar.exists():
        raise ClusterError(f"building {name}.jar needs a JDK (jar in {java_home / 'bin'})")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        for cmd in (compile_into(classes), [str(jar), "cf", str(Path(tmp) / f"{name}.jar"), "-C", str(classes), "."]):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise ClusterError(f"building {name}.jar failed: {(proc.stderr or proc.stdout).strip()[:300]}")
        shutil.move(str(Path(tmp) / f"{name}.jar"), out)
    return out
