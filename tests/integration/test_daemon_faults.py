"""`dsbra run` under faults on a real cluster: kill -9 mid-apply, ResourceManager and
JobHistoryServer down, a dead DataNode.

One four-worker cluster in the second slot (test_daemon.py's: continuous scheduling,
D = 10 s, one-block hot files at replication 1, cold ones on every worker) serves every test of the module, in order. After
each fault a scan of HDFS shows every file at or above its base replication, and the journal
is consistent: every intent closed, none sent twice, and per file the chain of changes
(each intent starts from the previous change's target) ends at the replication HDFS reports.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
import yaml

from dsbra.cluster import cluster as cl
from test_daemon import BASE, COLD, HOT, _replay, cluster_with_data

pytestmark = pytest.mark.cluster

DATA = HOT + COLD
ROUND_LINE = re.compile(r" blocks=\d+ map_tasks=(\d+) gavg=\S+ decisions=(\d+) ")


@pytest.fixture(scope="module")
def fault_cluster(second_cluster_slot_module):
    with cluster_with_data(second_cluster_slot_module) as up:
        yield up


def _config(tmp_path: Path, env: dict, name: str, *, interval_s: float, poll_s: float) -> str:
    cfg = {"mode": "apply", "interval_s": interval_s, "poll_s": poll_s,
           "state_dir": str(tmp_path / name),
           "cluster": {"rm": env["rm"], "webhdfs": env["namenode"], "jhs": env["jhs"],
                       "user": "root"},
           "http": {"enabled": False},
           # the fault tests are not about the profile (test_daemon.py is): with two equally
           # hot files and a cold one or two per short window, the default profile's factor 2
           # over the window's mean pressure and its minimum pressure of one delayed map (a
           # loaded machine runs two or three maps a window) would raise nothing
           "policy": {"params": {"hot_factor": 1.2, "min_pressure": 0.4}}}
    path = tmp_path / f"{name}-{interval_s:g}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _start(config: str, log: Path, *extra: str) -> subprocess.Popen:
    """A real `dsbra run` process; its stderr (the key=value log) goes to ``log``."""
    with open(log, "a") as fh:
        return subprocess.Popen([sys.executable, "-m", "dsbra", "run", "--config", config, *extra],
                                stdout=subprocess.DEVNULL, stderr=fh)


def _stop(proc: subprocess.Popen, log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]


def _journal(state_dir: Path) -> list[dict]:
    path = state_dir / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _open(ops: list[dict], states: tuple[str, ...]) -> set[int]:
    """Ids of the actions whose last step is one of ``states``."""
    last = {}
    for r in ops:
        last[r["id"]] = r["op"]
    return {aid for aid, op in last.items() if op in states}


def _rounds(log: Path) -> int:
    """Rounds the daemon ended (done or skipped) so far."""
    text = log.read_text()
    return text.count(" blocks=") + text.count(" skipped: ")


QUIET_ROUNDS = 3


def _quiet_rounds(log: Path) -> int:
    """How many of the last rounds saw no map task and decided nothing.

    Only after a few such rounds is the daemon settled: the collector has read every job of
    the workload, so stopping it (SIGTERM finishes a round) changes nothing more.
    """
    quiet = 0
    for m in reversed(ROUND_LINE.findall(log.read_text())):
        if m != ("0", "0"):
            break
        quiet += 1
    return quiet


def _wait_rounds(proc, log: Path, n: int, timeout_s: float) -> None:
    target = _rounds(log) + n
    deadline = time.monotonic() + timeout_s
    while _rounds(log) < target:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"fewer than {n} rounds in {timeout_s} s"
        time.sleep(0.5)


def check_journal(ops: list[dict], client) -> dict[str, int]:
    """Journal consistency; returns each journaled file's base.

    Every intent is closed (sent, done, cancelled or failed), none is sent or done twice, and
    per file each intent starts from where the previous change left it, so the last change's
    target is what HDFS reports now: nothing applied twice, nothing lost.
    """
    intents = {r["id"]: r for r in ops if r["op"] == "intent"}
    steps: dict[int, list[str]] = {i: [] for i in intents}
    for r in ops:
        if r["op"] != "intent":
            steps[r["id"]].append(r["op"])
    base: dict[str, int] = {}
    now: dict[str, int] = {}
    for aid in sorted(intents):
        rec, ops_of = intents[aid], steps[aid]
        assert ops_of and ops_of[-1] in ("sent", "done", "cancelled", "failed"), (rec, ops_of)
        assert ops_of.count("sent") <= 1 and ops_of.count("done") <= 1, (rec, ops_of)
        path = rec["path"]
        base.setdefault(path, rec["base"])
        assert rec["base"] == base[path] and rec["target"] >= base[path], rec
        assert rec["before"] == now.get(path, base[path]), (rec, now.get(path))
        if "sent" in ops_of:
            now[path] = rec["target"]
    for path, repl in now.items():
        assert client.status(path)["replication"] == repl, path
    return base


def scan(client, ops: list[dict]) -> None:
    """Every file of HDFS at or above its base (the journal's, else as written for the data
    files), and the journal consistent."""
    base = BASE | check_journal(ops, client)
    for (root, _), _, files in client.walk("/", status=True):
        for name, st in files:
            path = f"{root.rstrip('/')}/{name}"
            assert st["replication"] >= base.get(path, 1), (path, st["replication"])


def test_resourcemanager_then_historyserver_down_are_skips(fault_cluster, tmp_path):
    layout, env, client = fault_cluster
    log = tmp_path / "down.log"
    proc = _start(_config(tmp_path, env, "down", interval_s=3, poll_s=1), log)
    try:
        _wait_rounds(proc, log, 1, 60)
        for daemon in ("resourcemanager", "historyserver"):
            cl.stop_daemon(layout, daemon)
            _wait_rounds(proc, log, 3, 120)
            cl.start_daemon(layout, daemon)
            before = log.read_text().count(" blocks=")
            _wait_rounds(proc, log, 2, 120)
            assert log.read_text().count(" blocks=") > before, "no normal round after restart"
    finally:
        _stop(proc, log)
    text = log.read_text()
    assert "skipped: " in text, text[-3000:]
    assert "Traceback" not in text
    scan(client, _journal(tmp_path / "down"))


def _dead_datanodes(env: dict) -> int:
    url = f"{env['namenode']}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
    return int(requests.get(url, timeout=5).json()["beans"][0]["NumDeadDataNodes"])


LOCK = "/system/dsbra.id"  # the daemon's default cluster.lock_path


def _run_once(config: str, mode: str | None = None) -> subprocess.CompletedProcess:
    """`dsbra run --once` (``mode``: rewrite the config's mode first)."""
    if mode is not None:
        cfg = yaml.safe_load(Path(config).read_text()) | {"mode": mode}
        Path(config).write_text(yaml.safe_dump(cfg))
    return subprocess.run([sys.executable, "-m", "dsbra", "run", "--config", config, "--once"],
                          capture_output=True, text=True, timeout=180)


def _lock_holder(client) -> dict | None:
    if client.status(LOCK, strict=False) is None:
        return None
    with client.read(LOCK, encoding="utf-8") as reader:
        return json.loads(reader.read())


def test_one_acting_daemon_per_cluster(fault_cluster, tmp_path):
    """The lock file in HDFS: a second apply daemon (another state directory) refuses to start
    and names the holder, a dry-run one runs beside it; a daemon whose lock another took
    refuses to act; a lock nobody refreshed for long is taken over; a clean stop frees it."""
    layout, env, client = fault_cluster
    log = tmp_path / "a.log"
    proc = _start(_config(tmp_path, env, "a", interval_s=3, poll_s=1), log)
    try:
        _wait_rounds(proc, log, 1, 60)
        assert _lock_holder(client)["pid"] == proc.pid
        second = _run_once(_config(tmp_path, env, "b", interval_s=3, poll_s=1))
        assert second.returncode != 0, second.stderr[-2000:]
        last = second.stderr.strip().splitlines()[-1]
        assert last.startswith("dsbra: error: another dsbra") and f"pid {proc.pid}) holds the " \
            f"cluster lock {LOCK}" in last and "Traceback" not in second.stderr, second.stderr
        dry = _run_once(_config(tmp_path, env, "dry", interval_s=3, poll_s=1), mode="dry-run")
        assert dry.returncode == 0, dry.stderr[-2000:]
        other = {"host": "elsewhere", "pid": 1, "state_dir": "/x", "instance": "other"}
        client.write(LOCK, json.dumps(other), overwrite=True, encoding="utf-8")
        _wait_rounds(proc, log, 2, 60)
        assert "refuse reason=cluster-lock" in log.read_text(), log.read_text()[-3000:]
    finally:
        _stop(proc, log)
    assert _lock_holder(client) == other  # not its lock any more: left alone at the stop
    client.set_times(LOCK, modification_time=int((time.time() - 3600) * 1000))
    third = _run_once(_config(tmp_path, env, "c", interval_s=3, poll_s=1))
    assert third.returncode == 0, third.stderr[-2000:]
    assert "taking over from host elsewhere pid 1 (not refreshed for" in third.stderr
    assert _lock_holder(client) is None  # released at its clean stop
    scan(client, _journal(tmp_path / "a") + _journal(tmp_path / "c"))


def test_dead_datanode_is_a_refusal(fault_cluster, tmp_path):
    layout, env, client = fault_cluster
    cl.stop_daemon(layout, "datanode-w4", kill=True)
    try:
        deadline = time.monotonic() + 120  # the NameNode calls it dead after 2 x recheck + 10 x heartbeat
        while _dead_datanodes(env) < 1:
            assert time.monotonic() < deadline, "the NameNode never saw the DataNode dead"
            time.sleep(2)
        log = tmp_path / "dead.log"
        proc = _start(_config(tmp_path, env, "dead", interval_s=2, poll_s=1), log, "--once")
        assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        cl.start_daemon(layout, "datanode-w4")
    text = log.read_text()
    assert "refuse reason=dead-datanodes" in text, text[-3000:]
    status = json.loads((tmp_path / "dead" / "status.json").read_text())
    assert any(r.startswith("dead-datanodes") for r in status["last_round"]["refusals"])
    assert _journal(tmp_path / "dead") == []
    scan(client, [])


def test_kill_9_while_applying_then_restart_reconciles(fault_cluster, tmp_path):
    layout, env, client = fault_cluster
    state = tmp_path / "kill"
    log = tmp_path / "kill.log"
    proc = _start(_config(tmp_path, env, "kill", interval_s=30, poll_s=3), log)
    failed: list[BaseException] = []

    def workload():
        try:
            _replay(layout)
        except BaseException as exc:  # noqa: BLE001 -- re-raised in the test's thread
            failed.append(exc)

    replay = threading.Thread(target=workload, daemon=True)
    replay.start()
    try:
        # kill -9 as soon as the first change is journaled, so the plan is cut mid-way
        deadline = time.monotonic() + 600
        while not any(r["op"] == "intent" for r in _journal(state)):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no change decided: " + log.read_text()[-3000:]
            time.sleep(0.01)
        proc.kill()
        proc.wait()
    finally:
        replay.join()
    if failed:
        raise failed[0]
    open_at_kill = _open(_journal(state), ("intent",))
    # restart with short windows: it reconciles, catches up with the jobs that ran while it
    # was dead (they may raise a hot file again), then lowers the quiet files back to base
    restart_log = tmp_path / "restart.log"
    proc = _start(_config(tmp_path, env, "kill", interval_s=4, poll_s=1), restart_log)
    try:
        deadline = time.monotonic() + 300
        while not (_quiet_rounds(restart_log) >= QUIET_ROUNDS
                   and all(client.status(p)["replication"] == BASE[p] for p in DATA)
                   and not _open(_journal(state), ("intent", "sent"))):
            assert proc.poll() is None, restart_log.read_text()[-3000:]
            assert time.monotonic() < deadline, restart_log.read_text()[-3000:]
            time.sleep(2)
    finally:
        _stop(proc, restart_log)
    ops = _journal(state)
    text = restart_log.read_text()
    for aid in open_at_kill:  # what the crash left open was closed at start, never re-sent
        assert f"reconcile action={aid} " in text, text[-3000:]
    scan(client, ops)
    up = [r for r in ops if r["op"] == "intent" and r["target"] > r["before"]]
    assert up and all(r["path"] in HOT for r in up)
    assert all(client.status(p)["replication"] == BASE[p] for p in DATA)
