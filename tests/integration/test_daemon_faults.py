"""`dsbra run` under faults on a real cluster: kill -9 mid-apply, ResourceManager and
JobHistoryServer down, a dead DataNode.

The daemon tests' cluster in the second slot (harness.py, shared with test_daemon.py and
test_placement_heat.py) serves every test of the module, in order. After each fault a scan of
HDFS shows every file at or above its base replication, and the journal is consistent: every
intent closed, none sent twice, and per file the chain of changes (each intent starts from the
previous change's target) ends at the replication HDFS reports.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests

from dsbra.cluster import cluster as cl
from harness import BASE, DATA, HOT, Daemon, daemon_config, replay, scan

pytestmark = pytest.mark.cluster

QUIET_ROUNDS = 3


def _daemon(tmp_path, env, name: str, *, interval_s: float, poll_s: float) -> Daemon:
    """An applying daemon with short rounds (the fault tests are not about the profile)."""
    cfg = daemon_config(env, tmp_path / name, interval_s=interval_s, poll_s=poll_s)
    return Daemon.configure(tmp_path, f"{name}-{interval_s:g}", cfg)


def _open(ops: list[dict], states: tuple[str, ...]) -> set[int]:
    """Ids of the actions whose last step is one of ``states``."""
    last = {}
    for r in ops:
        last[r["id"]] = r["op"]
    return {aid for aid, op in last.items() if op in states}


def test_resourcemanager_then_historyserver_down_are_skips(daemon_cluster, tmp_path):
    layout, env, client = daemon_cluster
    daemon = _daemon(tmp_path, env, "down", interval_s=3, poll_s=1).start()
    try:
        daemon.wait_rounds(1, 60)
        for name in ("resourcemanager", "historyserver"):
            cl.stop_daemon(layout, name)
            daemon.wait_rounds(3, 120)
            cl.start_daemon(layout, name)
            before = daemon.text().count(" blocks=")
            daemon.wait_rounds(2, 120)
            assert daemon.text().count(" blocks=") > before, "no normal round after restart"
    finally:
        text = daemon.stop()
    assert "skipped: " in text, text[-3000:]
    assert "Traceback" not in text
    scan(client, daemon.journal())


def _dead_datanodes(env: dict) -> int:
    url = f"{env['namenode']}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
    return int(requests.get(url, timeout=5).json()["beans"][0]["NumDeadDataNodes"])


LOCK = "/system/dsbra.id"  # the daemon's default cluster.lock_path


def _lock_holder(client) -> dict | None:
    if client.status(LOCK, strict=False) is None:
        return None
    with client.read(LOCK, encoding="utf-8") as reader:
        return json.loads(reader.read())


def test_one_acting_daemon_per_cluster(daemon_cluster, tmp_path):
    """The lock file in HDFS: a second apply daemon (another state directory) refuses to start
    and names the holder, a dry-run one runs beside it; a daemon whose lock another took
    refuses to act; a lock nobody refreshed for long is taken over; a clean stop frees it."""
    layout, env, client = daemon_cluster
    daemon = _daemon(tmp_path, env, "a", interval_s=3, poll_s=1).start()
    try:
        daemon.wait_rounds(1, 60)
        assert _lock_holder(client)["pid"] == daemon.proc.pid
        second = _daemon(tmp_path, env, "b", interval_s=3, poll_s=1).once()
        assert second.returncode != 0, second.stderr[-2000:]
        last = second.stderr.strip().splitlines()[-1]
        assert last.startswith("dsbra: error: another dsbra") and f"pid {daemon.proc.pid}) holds " \
            f"the cluster lock {LOCK}" in last and "Traceback" not in second.stderr, second.stderr
        dry = _daemon(tmp_path, env, "dry", interval_s=3, poll_s=1)
        dry.update(mode="dry-run")
        assert (done := dry.once()).returncode == 0, done.stderr[-2000:]
        other = {"host": "elsewhere", "pid": 1, "state_dir": "/x", "instance": "other"}
        client.write(LOCK, json.dumps(other), overwrite=True, encoding="utf-8")
        daemon.wait_rounds(2, 60)
        assert "refuse reason=cluster-lock" in daemon.text(), daemon.text()[-3000:]
    finally:
        daemon.stop()
    assert _lock_holder(client) == other  # not its lock any more: left alone at the stop
    client.set_times(LOCK, modification_time=int((time.time() - 3600) * 1000))
    third = _daemon(tmp_path, env, "c", interval_s=3, poll_s=1)
    done = third.once()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "taking over from host elsewhere pid 1 (not refreshed for" in done.stderr
    assert _lock_holder(client) is None  # released at its clean stop
    scan(client, daemon.journal() + third.journal())


def test_dead_datanode_is_a_refusal(daemon_cluster, tmp_path):
    layout, env, client = daemon_cluster
    cl.stop_daemon(layout, "datanode-w4", kill=True)
    try:
        deadline = time.monotonic() + 120  # the NameNode calls it dead after 2 x recheck + 10 x heartbeat
        while _dead_datanodes(env) < 1:
            assert time.monotonic() < deadline, "the NameNode never saw the DataNode dead"
            time.sleep(2)
        daemon = _daemon(tmp_path, env, "dead", interval_s=2, poll_s=1).start("--once")
        assert daemon.proc.wait(timeout=120) == 0, daemon.text()[-3000:]
    finally:
        cl.start_daemon(layout, "datanode-w4")
    text = daemon.text()
    assert "refuse reason=dead-datanodes" in text, text[-3000:]
    assert any(r.startswith("dead-datanodes") for r in daemon.status()["last_round"]["refusals"])
    assert daemon.journal() == []
    scan(client, [])


def test_kill_9_while_applying_then_restart_reconciles(daemon_cluster, tmp_path):
    layout, env, client = daemon_cluster
    daemon = _daemon(tmp_path, env, "kill", interval_s=15, poll_s=3).start()
    failed: list[BaseException] = []
    killed = threading.Event()

    def workload():
        try:
            replay(layout, until=killed.is_set)  # its jobs killed too once the daemon is
        except BaseException as exc:  # noqa: BLE001 -- re-raised in the test's thread
            failed.append(exc)

    replaying = threading.Thread(target=workload, daemon=True)
    replaying.start()
    try:
        # kill -9 as soon as the first change is journaled, so the plan is cut mid-way
        deadline = time.monotonic() + 600
        while not any(r["op"] == "intent" for r in daemon.journal()):
            daemon.alive()
            assert time.monotonic() < deadline, "no change decided: " + daemon.text()[-3000:]
            time.sleep(0.01)
        daemon.proc.kill()
        daemon.proc.wait()
    finally:
        killed.set()
        replaying.join()
    if failed:
        raise failed[0]
    open_at_kill = _open(daemon.journal(), ("intent",))
    # restart with short windows: it reconciles, catches up with the jobs that ran while it
    # was dead (they may raise a hot file again), then lowers the quiet files back to base
    restarted = _daemon(tmp_path, env, "kill", interval_s=4, poll_s=1).start()
    try:
        deadline = time.monotonic() + 300
        while not (restarted.quiet_rounds() >= QUIET_ROUNDS
                   and all(client.status(p)["replication"] == BASE[p] for p in DATA)
                   and not _open(restarted.journal(), ("intent", "sent"))):
            restarted.alive()
            assert time.monotonic() < deadline, restarted.text()[-3000:]
            time.sleep(2)
    finally:
        text = restarted.stop()
    ops = restarted.journal()
    for aid in open_at_kill:  # what the crash left open was closed at start, never re-sent
        assert f"reconcile action={aid} " in text, text[-3000:]
    scan(client, ops)
    up = [r for r in ops if r["op"] == "intent" and r["target"] > r["before"]]
    assert up and all(r["path"] in HOT for r in up)
    assert all(client.status(p)["replication"] == BASE[p] for p in DATA)
