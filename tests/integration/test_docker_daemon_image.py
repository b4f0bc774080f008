"""The daemon-only image (hadoop-docker/Dockerfile.daemon, issue 23): built without a registry
the way the cluster's image is, it holds the default install and nothing of the extras, its
every daemon command answers --help, and it runs one daemon round against the bundled (netns)
cluster from the host's network.

The first build took 4 min on 2 cores under another session's load (apt's Python, the
wheels), a rebuild of unchanged inputs 4 s; the three tests then 20 s.
"""

from __future__ import annotations

import subprocess

import pytest

from harness import need_docker
from repo_scripts import load_script

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]


def _builder():
    return load_script("hadoop-docker/build_daemon_image.py")


@pytest.fixture(scope="module")
def image() -> str:
    need_docker()
    tag, _, _, _ = _builder().build(log=lambda *_: None)
    return tag


def docker_run(image: str, *args: str, docker_args=(), timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "run", "--rm", *docker_args, image, *args], capture_output=True,
                          text=True, timeout=timeout)


def test_help_of_every_daemon_command(image):
    for argv in ([], ["run"], ["observe"], ["plan"], ["status"], ["pause"], ["resume"], ["conf"],
                 ["conf", "render"], ["impact"], ["report"]):
        done = docker_run(image, *argv, "--help")
        assert done.returncode == 0 and "Usage: dsbra" in done.stdout, (argv, done.stderr)


def test_only_the_default_install(image):
    probe = ("import importlib.util as u, dsbra; print(dsbra.__file__); "
             "print([m for m in ('matplotlib', 'docker', 'pyhive', 'thrift', 'gssapi') if u.find_spec(m)])")
    done = docker_run(image, "-c", probe, docker_args=["--entrypoint", "python"])
    assert done.returncode == 0, done.stderr
    where, extras = done.stdout.splitlines()
    assert where.startswith("/opt/dsbra/venv/lib/") and extras == "[]", done.stdout
    who = docker_run(image, "-un", docker_args=["--entrypoint", "id"])
    assert who.stdout.strip() == "dsbra"  # not root
    refused = docker_run(image, "docker", "build")
    assert refused.returncode == 1
    assert refused.stderr == "dsbra docker: needs the docker extra: pip install 'dsbra[docker]'\n"


@pytest.mark.cluster
def test_one_round_against_the_bundled_cluster(image, cluster):
    """`dsbra run --once` in the image, on the host's network (the netns cluster's addresses
    answer there), its URLs from the environment as the Dockerfile says."""
    env = {"DSBRA_CLUSTER__RM": cluster["rm"], "DSBRA_CLUSTER__WEBHDFS": cluster["namenode"],
           "DSBRA_CLUSTER__JHS": cluster["jhs"], "DSBRA_CLUSTER__USER": "root",
           "DSBRA_CLUSTER__LOCK_PATH": "null", "DSBRA_INTERVAL_S": "10", "DSBRA_POLL_S": "2",
           "DSBRA_HTTP__ENABLED": "false"}
    flags = ["--network", "host"] + [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    done = docker_run(image, "run", "--config", "/etc/dsbra/dsbra.yaml", "--once", docker_args=flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "round=1 blocks=" in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
