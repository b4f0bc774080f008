"""The default install on a NameNode host: the project's wheel, built with the standard build
tool, in a fresh virtualenv with nothing else (its base dependencies come from the package
index), runs `dsbra run --once` against the bundled cluster.

About 26 s on 2 cores with pip's cache warm (the wheel, the venv and its install, one daemon
round of a 10 s window), plus the session's cluster (conftest.py) if it is not up yet.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from dsbra.cluster.paths import stage_sources, staged_build_env

pytestmark = pytest.mark.cluster

OPTIONAL = ("matplotlib", "docker", "pyhive", "thrift", "gssapi")


def build_wheel(out: Path) -> Path:
    """dsbra's wheel from a copy of the checkout (nothing written into it), of this dsbra's
    version: `python -m build` (sdist, then the wheel from the sdist), or pip's PEP 517 build
    where `build` is not installed (the same setuptools backend)."""
    src = out / "src"
    stage_sources(src)
    dist = out / "dist"
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--outdir", str(dist), str(src)]
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=staged_build_env())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = dist.glob("dsbra-*.whl")
    return wheel


def clean_env() -> dict:
    """No DSBRA_* variable of this session, no path into the checkout."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("DSBRA_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def test_wheel_in_a_fresh_venv_runs_a_daemon_round(cluster, tmp_path):
    wheel = build_wheel(tmp_path / "build")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py, dsbra = venv / "bin" / "python", venv / "bin" / "dsbra"
    env = clean_env()
    done = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]

    # the default install: none of the extras' packages, dsbra from the venv, not the checkout
    probe = ("import importlib.util, dsbra; print(dsbra.__file__); "
             f"print([m for m in {OPTIONAL!r} if importlib.util.find_spec(m)])")
    out = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True,
                         env=env, cwd=tmp_path).stdout.splitlines()
    assert out[0].startswith(str(venv)), out
    assert out[1] == "[]", out
    shown = subprocess.run([str(dsbra), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert shown.stdout == f"dsbra, version {version('dsbra')}\n", shown.stdout + shown.stderr

    # the templates reach the wheel: dsbra conf render from it
    values = tmp_path / "values.yaml"
    values.write_text("cluster: {workers: 2, racks: 1}\nyarn: {locality_delay_node: 3s, locality_delay_rack: 1s}\n")
    render = subprocess.run([str(dsbra), "conf", "render", "--values", str(values), "--out",
                             str(tmp_path / "rendered")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert render.returncode == 0, render.stderr
    assert "yarn.scheduler.fair.locality-delay-node-ms" in (tmp_path / "rendered" / "yarn-site.xml").read_text()

    config = tmp_path / "dsbra.yaml"
    config.write_text(yaml.safe_dump({
        "mode": "dry-run", "interval_s": 10, "poll_s": 2, "state_dir": str(tmp_path / "state"),
        "cluster": {"rm": cluster["rm"], "webhdfs": cluster["namenode"], "jhs": cluster["jhs"],
                    "user": "root", "lock_path": None},
        "http": {"enabled": False}}))
    run = subprocess.run([str(dsbra), "run", "--config", str(config), "--once"], capture_output=True,
                         text=True, timeout=180, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert "round=1 blocks=" in run.stderr, run.stderr[-3000:]
    status = subprocess.run([str(dsbra), "status", "--config", str(config)], capture_output=True,
                            text=True, env=env, cwd=tmp_path)
    assert status.returncode == 0 and "rounds 1" in status.stdout, status.stdout + status.stderr
