"""Build dsbra-daemon:<version>, the daemon-only image of hadoop-docker/Dockerfile.daemon (issue 23).

The way `dsbra docker build` makes the cluster's image, and with its code: the base image
dsbra-base:bookworm (debootstrap + docker import, once; root), a context staged under
.dsbra/docker/daemon-context, the image labelled with a hash of that context and rebuilt only
when it changed. The context: the Dockerfile, deploy/dsbra.yaml, and wheels/ = dsbra's wheel
(`python -m build --wheel`, or pip's PEP 517 build where `build` is not installed) and the
wheels of its base dependencies (`pip wheel` on the host: the image installs them with
--no-index; no https from inside the build).

    sudo .venv/bin/python hadoop-docker/build_daemon_image.py [--mirror URL] [--force]

prints `dsbra-daemon:<version> <image id> (built|cached, N s)`. Needs the docker extra (the
project's .venv has it) and Python 3.11, the image's.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
import tomllib
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsbra.cluster.docker import (DEFAULT_MIRROR, IMAGE_PYTHON, INPUTS_LABEL,  # noqa: E402
                                  _docker_build, _image, _remove_untagged, docker_client,
                                  ensure_base_image, inputs_key, work_dir)
from dsbra.cluster.paths import stage_sources, staged_build_env  # noqa: E402
from dsbra.errors import ClusterError  # noqa: E402

IMAGE_REPO = "dsbra-daemon"
# fixed zip timestamps: the same source makes the same wheel, so the context hash stays put
SOURCE_DATE_EPOCH = "315532800"


def image_tag() -> str:
    """``dsbra-daemon:<dsbra's version>``; a docker tag has no '+', a local version's separator
    (``0.2.dev3+g1a2b3c4``, a checkout past its tag)."""
    return f"{IMAGE_REPO}:{version('dsbra').replace('+', '-')}"


def context_dir() -> Path:
    return work_dir() / "daemon-context"


def build_wheel(out: Path) -> Path:
    """dsbra's wheel from a copy of the checkout (nothing written into it)."""
    src = out / "src"
    stage_sources(src)
    dist = out / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)]
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)]
    env = {**staged_build_env(), "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise ClusterError(f"building dsbra's wheel failed: {done.stderr.strip()[-500:]}")
    (wheel,) = dist.glob("dsbra-*.whl")
    return wheel


def stage_context(log=print) -> Path:
    """Dockerfile, dsbra.yaml, wheels/ (dsbra's wheel and its base dependencies' wheels)."""
    if sys.version_info[:2] != IMAGE_PYTHON:
        raise ClusterError(f"the image runs Python {'.'.join(map(str, IMAGE_PYTHON))}; build it with that "
                           f"Python (this is {sys.version.split()[0]})")
    context = context_dir()
    context.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "hadoop-docker" / "Dockerfile.daemon", context / "Dockerfile")
    shutil.copyfile(ROOT / "deploy" / "dsbra.yaml", context / "dsbra.yaml")
    wheels = context / "wheels"
    wheels.mkdir(exist_ok=True)
    for old in wheels.glob("dsbra-*.whl"):
        old.unlink()
    wheel = build_wheel(work_dir() / "daemon-build")
    shutil.copyfile(wheel, wheels / wheel.name)
    deps = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    key = hashlib.sha256(repr((deps, sys.version_info[:2])).encode()).hexdigest()
    marker = context / ".deps-inputs"
    if not (marker.exists() and marker.read_text() == key):
        log("making the dependency wheels (pip wheel) ...")
        for old in wheels.glob("*.whl"):
            if not old.name.startswith("dsbra-"):
                old.unlink()
        rc = subprocess.call([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
                              "-w", str(wheels), *deps])
        if rc != 0:
            raise ClusterError(f"pip wheel {' '.join(deps)} failed (exit {rc})")
        marker.write_text(key)
    return context


def build(mirror: str | None = None, force: bool = False, log=print) -> tuple[str, str, bool, float]:
    """Idempotent: (tag, image id, built, seconds)."""
    started = time.monotonic()
    client = docker_client()
    work_dir().mkdir(parents=True, exist_ok=True)
    with open(work_dir() / ".daemon-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base_id = ensure_base_image(client, mirror or os.environ.get("DSBRA_DEBIAN_MIRROR", DEFAULT_MIRROR), log)
        context = stage_context(log)
        key = inputs_key(context, base_id)
        tag = image_tag()
        existing = _image(client, tag)
        if existing is not None and not force and existing.labels.get(INPUTS_LABEL) == key:
            log(f"{tag} is up to date (inputs {key[:12]})")
            return tag, existing.id, False, time.monotonic() - started
        log(f"building {tag} (inputs {key[:12]}; log: {work_dir() / 'daemon-build.log'}) ...")
        image_id = _docker_build(client, context, tag, {INPUTS_LABEL: key}, work_dir() / "daemon-build.log", log)
        if existing is not None and existing.id != image_id:
            _remove_untagged(client, existing.id)
        return tag, image_id, True, time.monotonic() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=None, help="Plain-http Debian mirror [default: $DSBRA_DEBIAN_MIRROR "
                                                   f"or {DEFAULT_MIRROR}].")
    ap.add_argument("--force", action="store_true", help="Build even if an image of the same inputs exists.")
    args = ap.parse_args()
    try:
        tag, image_id, built, seconds = build(args.mirror, args.force,
                                              log=lambda msg: print(msg, file=sys.stderr))
    except ClusterError as exc:
        raise SystemExit(f"build_daemon_image: error: {exc}") from None
    print(f"{tag} {image_id[:19]} ({'built' if built else 'cached'}, {seconds:.0f} s)")


if __name__ == "__main__":
    main()
