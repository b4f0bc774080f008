"""`dsbra cluster` as a user runs it: idempotence, status/env/logs, and bad input and faults.

Fault tests that need a cluster of their own use a second, 1-worker cluster with its own state
dir, name prefix, subnet and ports, so the session's cluster keeps running.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsbra.cluster import netns
from harness import run_dsbra
from netslots import SECOND as SECOND_NET, THIRD, cli_args

pytestmark = pytest.mark.cluster

# the second cluster: distinct names, addresses and ports from the session's cluster
SECOND = ["--workers", "1", *cli_args(SECOND_NET)]


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("dsbra: error: "), proc.stderr
    return lines[0]


def _leftovers(prefix: str) -> list[str]:
    found = [ns for ns in netns.list_netns() if ns.startswith(f"{prefix}-")]
    return found + ([f"{prefix}0"] if netns.link_exists(f"{prefix}0") else [])


def test_up_twice_says_already_up(cluster):
    proc = run_dsbra("cluster", "up")
    assert proc.returncode == 0, proc.stderr
    assert "already up" in proc.stdout


def test_status_env_and_logs(cluster):
    proc = run_dsbra("cluster", "status")
    assert proc.returncode == 0, proc.stdout
    assert "cluster: up" in proc.stdout
    for w in cluster["workers"]:
        assert f"datanode-{w['name']}" in proc.stdout and f"nodemanager-{w['name']}" in proc.stdout

    env = json.loads(run_dsbra("cluster", "env", "--json", check=True).stdout)
    assert env["webhdfs"].endswith("/webhdfs/v1") and env["rm"].startswith("http://")
    assert env["jhs"].startswith("http://")
    assert [set(w) >= {"host", "rack"} for w in env["workers"]] == [True] * len(cluster["workers"])

    logs = run_dsbra("cluster", "logs", "namenode", "-n", "20", check=True)
    assert len(logs.stdout.splitlines()) == 20
    assert "NameNode" in run_dsbra("cluster", "logs", "namenode", "-n", "100000").stdout
    bad = _one_line_error(run_dsbra("cluster", "logs", "no-such-daemon"))
    assert "unknown daemon" in bad and "datanode-w1" in bad


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers must be in [1, 32]"),
    (["--workers", "2", "--replication", "5"], "--replication must be between 1"),
    (["--subnet", "127.0.0.0/24"], "loopback"),
    (["--locality-delay-node", "2"], "--locality-delay-node"),
    (["--block-size", "lots"], "not a size"),
])
def test_up_rejects_bad_arguments(tmp_path, args, message):
    error = _one_line_error(run_dsbra("cluster", "up", "--state-dir", str(tmp_path), *args))
    assert message in error
    assert not (tmp_path / "state.json").exists()


def _occupy_namenode_port() -> tuple[socket.socket, int]:
    """Listen on the NameNode RPC port of some free --port-offset; returns (socket, offset)."""
    for offset in random.sample(range(20000, 40000), 200):
        sock = socket.socket()
        try:
            sock.bind(("0.0.0.0", 8020 + offset))
        except OSError:
            sock.close()
            continue
        sock.listen()
        return sock, offset
    pytest.fail("no free port to occupy")


def test_up_with_a_port_in_use_fails_cleanly(tmp_path):
    blocker, offset = _occupy_namenode_port()
    try:
        args = ["--workers", "1", "--prefix", THIRD["prefix"], "--subnet", THIRD["subnet"], "--port-offset", str(offset)]
        error = _one_line_error(run_dsbra("cluster", "up", "--state-dir", str(tmp_path), *args))
    finally:
        blocker.close()
    assert f"port {8020 + offset} (namenode_rpc) is already in use" in error
    assert _leftovers(THIRD["prefix"]) == []
    assert not (tmp_path / "state.json").exists()


def test_down_twice(tmp_path):
    for _ in range(2):
        proc = run_dsbra("cluster", "down", "--state-dir", str(tmp_path))
        assert proc.returncode == 0 and "already down" in proc.stdout


def test_no_java_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = "/nonexistent"
    proc = subprocess.run([sys.executable, "-m", "dsbra", "cluster", "up", "--state-dir", str(tmp_path)],
                          capture_output=True, text=True, env=env)
    assert "Java not found" in _one_line_error(proc)


def test_maven_central_unreachable_is_a_clear_error(tmp_path):
    env = dict(os.environ, DSBRA_HADOOP_DIR=str(tmp_path / "hadoop"), DSBRA_MAVEN_LOCAL_REPO=str(tmp_path / "m2"),
               DSBRA_MAVEN_REPO="http://127.0.0.1:9/maven2")
    proc = subprocess.run([sys.executable, "-m", "dsbra", "cluster", "install"], capture_output=True, text=True,
                          env=env)
    assert "unreachable" in _one_line_error(proc)


def test_unreadable_state_is_a_clear_error(tmp_path):
    (tmp_path / "state.json").write_text("{not json")
    assert "cannot read cluster state" in _one_line_error(run_dsbra("cluster", "status", "--state-dir", str(tmp_path)))


def test_crashed_cluster_is_detected_cleaned_and_restarted(cluster, second_cluster_slot):
    """A second real cluster: kill -9 a daemon (a crash), then status, up and down recover."""
    tmp_path = second_cluster_slot
    state = ["--state-dir", str(tmp_path)]
    try:
        proc = run_dsbra("cluster", "up", *state, *SECOND)
        assert proc.returncode == 0, proc.stderr
        assert sorted(netns.list_netns()).count(f"{SECOND_NET['prefix']}-w1") == 1
        daemons = json.loads((tmp_path / "state.json").read_text())["daemons"]
        os.kill(daemons["namenode"]["pid"], signal.SIGKILL)
        time.sleep(0.5)

        proc = run_dsbra("cluster", "status", *state)
        assert proc.returncode == 1 and "partial" in proc.stdout and "DEAD" in proc.stdout

        # cleans the crashed run and starts anew, this time with time-based delay scheduling
        timed = ["--continuous-scheduling", "--locality-delay-node-ms", "3000",
                 "--locality-delay-rack-ms", "1000"]
        proc = run_dsbra("cluster", "up", *state, *SECOND, *timed)
        assert proc.returncode == 0, proc.stderr
        assert "cleaning up a previous run" in proc.stderr
        assert run_dsbra("cluster", "status", *state).returncode == 0
        env = json.loads(run_dsbra("cluster", "env", "--json", *state).stdout)
        assert env["locality_delay"]["continuous_scheduling"] is True
        from dsbra.hadoop.rest import ResourceManager
        from dsbra.observe.delay_threshold import settings_from_conf

        settings = settings_from_conf(ResourceManager(env["rm"]).conf(), nodes=1)
        assert settings.delay_scheduling and settings.delay_threshold_s == 3.0
    finally:
        proc = run_dsbra("cluster", "down", *state)
    assert proc.returncode == 0 and "cluster down" in proc.stdout
    assert _leftovers(SECOND_NET["prefix"]) == []
    marker = f"-Ddsbra.state={tmp_path.resolve()}".encode()
    running = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, marker)]
    assert running == []
    assert run_dsbra("cluster", "status", *state).returncode == 3


def _cmdline_has(pid: str, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return marker in handle.read()
    except OSError:
        return False


def test_a_daemon_that_dies_at_start_is_named_with_its_log(cluster, second_cluster_slot):
    """A heap the JVM refuses: `up` names the daemon and the log that says why, leaves nothing."""
    from dsbra.cluster import cluster as cl
    from dsbra.cluster.paths import StateLayout
    from dsbra.cluster.spec import ClusterSpec
    from dsbra.errors import ClusterError

    spec = ClusterSpec(workers=1, replication=1, **SECOND_NET)
    spec.heaps["resourcemanager"] = "1k"  # "Too small maximum heap"
    layout = StateLayout(second_cluster_slot.resolve())
    with pytest.raises(ClusterError) as failure:
        cl.up(spec, layout, timeout=120, log=lambda *_: None)
    message = str(failure.value)
    assert message.startswith("resourcemanager exited during start-up; see its log ")
    assert str(layout.out("resourcemanager")) in message and "heap" in message
    assert _leftovers(SECOND_NET["prefix"]) == []
    assert _state_processes(layout.root) == []
    assert not layout.state_file.exists()


def _state_processes(state_dir: Path) -> list[int]:
    from dsbra.cluster.processes import state_processes

    return state_processes(state_dir)
