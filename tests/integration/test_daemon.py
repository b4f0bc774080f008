"""`dsbra run` on a real cluster with delay scheduling: dry run, safe mode, the held-out files,
the fast poll acting on the live demand.

The daemon tests' cluster in the second slot (harness.py: continuous scheduling, D = 10 s, two
hot one-block files at replication 1, cold ones on every worker; each test starts with every
file back at its base), shared with test_daemon_faults.py and test_placement_heat.py. The
daemon runs as a real process (`dsbra run`), round after round. Raising hot files and lowering
them back in apply mode: test_placement_heat.py, which checks where each replica went too.
"""

from __future__ import annotations

import json
import re
import socket
import time

import numpy as np
import pytest
import requests

from harness import (BASE, HOT, Daemon, daemon_config, dfsadmin, replay_until, replication,
                     run_dsbra, scan)

pytestmark = pytest.mark.cluster


def test_dry_run_decides_raises_and_changes_nothing(daemon_cluster, tmp_path):
    """A dry-run daemon decides as an applying one does (its log names the files it would
    raise), and neither the NameNode's replication nor the journal changes."""
    layout, env, client = daemon_cluster
    daemon = Daemon.configure(tmp_path, "dry", daemon_config(env, tmp_path / "dry", mode="dry-run"))
    daemon.start()
    try:
        replay_until(layout, daemon, lambda: set(daemon.would_raise()) & set(HOT))
    finally:
        err = daemon.stop()
    assert set(daemon.would_raise()) & set(HOT), err[-3000:]
    assert replication(client) == BASE
    assert daemon.journal() == []
    assert "outcome=sent" not in err
    # the sort jobs' input (grep-temp-*) is gone by the rounds: counted, logged at debug only
    assert "grep-temp" not in err, err[-3000:]
    status = daemon.status()
    assert status["mode"] == "dry-run" and status["rounds"] >= 2
    # a round reads each file once (its status and its blocks) and the NameNode's health once
    for r in status["recent_rounds"]:
        if "files_read" in r:
            sent = r["requests"]
            assert sent.get("hdfs.stat", 0) == sent.get("hdfs.blocks", 0) == r["files_read"], r
            assert sent["jmx"] == 3, r  # Jmx.namenode_health's three beans, once


def test_safe_mode_is_a_refusal_with_its_reason(daemon_cluster, tmp_path):
    layout, env, client = daemon_cluster
    daemon = Daemon.configure(tmp_path, "safe", daemon_config(env, tmp_path / "safe",
                                                              interval_s=5, poll_s=1))
    assert "ON" in dfsadmin(layout, "-safemode", "enter")
    try:
        proc = daemon.once()
    finally:
        dfsadmin(layout, "-safemode", "leave")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "refuse reason=safe-mode" in proc.stderr
    assert daemon.status()["last_round"]["refusals"][0].startswith("safe-mode")
    assert replication(client) == BASE
    assert daemon.journal() == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# experiment.seed 4 splits the two hot files: hot-0 control, hot-1 treatment (a fixed hash of
# seed and path, dsbra.experiment.design; checked below, so a change of hash fails loudly)
HOLDOUT_SEED = 4


def test_holdout_keeps_control_files_unchanged_and_impact_reads_the_state(daemon_cluster,
                                                                           tmp_path):
    from dsbra.experiment.impact import impact
    from dsbra.experiment.design import Holdout

    assert list(Holdout(0.5, HOLDOUT_SEED).is_control(HOT)) == [True, False]
    layout, env, client = daemon_cluster
    state = tmp_path / "holdout"
    port = free_port()
    daemon = Daemon.configure(tmp_path, "holdout", daemon_config(
        env, state, experiment={"holdout": 0.5, "seed": HOLDOUT_SEED},
        http={"enabled": True, "host": "127.0.0.1", "port": port}))

    def groups() -> dict[str, str]:
        path = state / "experiment.jsonl"
        if not path.exists():
            return {}
        return {json.loads(line)["file"]: json.loads(line)["group"]
                for line in path.read_text().splitlines()}

    def maps_after_first_decision() -> int:
        doc = impact(state)
        return doc["maps"]["treated"] + doc["maps"]["control"]

    samples = []
    daemon.start()
    try:
        # both hot files assigned, and a round has recorded a map of one of them launched after
        # its first decision: what `dsbra impact` compares
        replay_until(layout, daemon, lambda: (samples.append(replication(client)) or True)
                     and set(HOT) <= set(groups()) and maps_after_first_decision() > 0)
        # the running daemon's status page and metrics (issue 46)
        page = requests.get(f"http://127.0.0.1:{port}/", timeout=30).text
        metrics = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    finally:
        err = daemon.stop()
    assert env["rm"] in page and "FairScheduler" in page, page[:3000]
    assert HOT[1] in page and "Holdout 50%" in page, page
    assert "dsbra_decisions_total{rule=\"hot\"}" in metrics and "dsbra_extra_replica_bytes" in metrics
    assert set(HOT) <= set(groups()), (groups(), err[-4000:])
    assert groups()[HOT[0]] == "control" and groups()[HOT[1]] == "treatment"
    # the control file was never changed: not in any sample, not in the journal's intents
    assert all(r[HOT[0]] == BASE[HOT[0]] for r in samples + [replication(client)])
    ops = daemon.journal()
    assert not any(r["op"] == "intent" and r["path"] == HOT[0] for r in ops)
    held = [r for r in ops if r["op"] == "held-out"]
    assert held and all(r["path"] == HOT[0] and r["target"] > r["before"] for r in held)
    assert "outcome=held-out" in err
    status = daemon.status()
    assert status["experiment"]["files"]["control"] >= 1
    assert status["experiment"]["files"]["treatment"] >= 1
    assert list((state / "maps").glob("*/*.parquet"))
    proc = run_dsbra("impact", str(state), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["files"]["treated"] >= 1 and doc["files"]["control"] >= 1
    assert doc["maps"]["treated"] + doc["maps"]["control"] > 0


#: the switchback of the guard's test: 10-minute periods, the first minute a burn-in
GUARD_PERIOD_S, GUARD_BURN_IN_S, GUARD_SEED = 600, 60, 5


def _harmful_switchback(state, blocks: int, now_ms: int) -> None:
    """A switchback started ``2 * blocks + 2`` periods and half a minute before ``now_ms``,
    recorded as the daemon records it, with job records written as its rounds write them:
    jobs 50% slower in the periods the policy was on. Its ``blocks`` first blocks are settled
    by ``now_ms`` (a period old), so the guard's verdict is known in advance, as the placement
    tests' heat documents make the plugin's choices known."""
    from dsbra.experiment.assignment import switchback_of
    from dsbra.experiment.records import JOBS_DIR, RecordStore, job_records

    period_ms = GUARD_PERIOD_S * 1000
    start_ms = now_ms - (2 * blocks + 2) * period_ms - 30_000
    sb, _ = switchback_of(state, GUARD_PERIOD_S, GUARD_BURN_IN_S, GUARD_SEED, start_ms)
    rng = np.random.default_rng(0)
    store = RecordStore(state / JOBS_DIR, 1e12, 1 << 40)
    for period in range(2 * blocks):
        begin = start_ms + period * period_ms
        level_s = 60.0 if sb.is_on(period) else 40.0
        jobs = [{"job_id": f"job_{s}_0001", "submit_ms": s, "maps": 1,
                 "finish_ms": s + int(1000 * level_s * rng.uniform(0.9, 1.1))}
                for s in range(begin + GUARD_BURN_IN_S * 1000, begin + period_ms - 60_000, 30_000)]
        store.write(job_records(jobs, begin + period_ms, sb), begin + period_ms)


def test_the_guard_pauses_the_daemon_through_its_pause_path(daemon_cluster, tmp_path):
    """`dsbra run --apply` with a switchback and the do-no-harm guard, its state dir holding
    five settled blocks in which jobs ran slower with the policy on: its first round, at a
    block's end, pauses it as `dsbra pause` does, and the log, status.json, `dsbra status`
    and the metric say why; it goes on observing, changes nothing, and `dsbra resume` lets
    it act again (the guard looks next at the next block's end)."""
    from dsbra.daemon.service import GUARD_PAUSE

    _, env, client = daemon_cluster
    state = tmp_path / "guard"
    state.mkdir()
    _harmful_switchback(state, blocks=5, now_ms=int(time.time() * 1000))
    port = free_port()
    daemon = Daemon.configure(tmp_path, "guard", daemon_config(
        env, state, interval_s=5, poll_s=1,
        experiment={"design": "switchback", "period_s": GUARD_PERIOD_S,
                    "burn_in_s": GUARD_BURN_IN_S, "seed": GUARD_SEED, "guard": True,
                    "guard_margin": 0.05},
        http={"enabled": True, "host": "127.0.0.1", "port": port}))
    daemon.start()
    try:
        daemon.wait_rounds(2, timeout_s=120)  # the guard's round, and one paused
        metrics = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
        shown = run_dsbra("status", "--config", str(daemon.path), timeout=60)
        assert run_dsbra("resume", "--config", str(daemon.path), timeout=60).returncode == 0
        daemon.wait_rounds(1, timeout_s=60)
        resumed = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    finally:
        err = daemon.stop()
    assert "guard round=1 fired: jobs slower with the policy on: mean response +" in err, err[-3000:]
    assert "beyond the guard's margin of 5%" in err
    assert "refuse reason=paused" in err
    assert "dsbra_guard_fired 1.0" in metrics, metrics
    assert shown.returncode == 0 and "(paused)" in shown.stdout, shown.stdout + shown.stderr
    assert "guard: jobs slower with the policy on" in shown.stdout
    assert f"paused: {GUARD_PAUSE}: jobs slower" in shown.stdout  # round 2's refusal
    assert "dsbra_guard_fired 0.0" in resumed
    assert not (state / "paused").exists()
    status = daemon.status()
    assert status["guard"]["fired"] and status["guard"]["margin"] == 0.05
    assert status["rounds"] >= 3
    assert daemon.journal() == [] and replication(client) == BASE


#: the fast poll's raise sent: `fast-poll round=N file=F replication=A->B base=.. rule=demand ...`
FAST_RAISE = re.compile(r"fast-poll round=(\d+) file=(\S+) replication=(\d+)->(\d+) base=\d+ "
                        r"rule=demand due=(\S+) servable=(\S+) .*outcome=sent")


def test_the_fast_poll_raises_a_hot_file_within_its_round_and_the_round_keeps_it(daemon_cluster,
                                                                                 tmp_path):
    """`demand.enabled` (a fast poll every 2 s, a short D of 1 s: a map is due only where a
    container frees within a second): the hot jobs' maps pile up on each hot file's one holder,
    and the fast poll raises one of them (rule demand, its own decision line and journal intent)
    while the round it falls in is still collecting; that round and the next do not lower it
    (the fast poll holds it, docs/daemon.md "The fast poll"; idle_polls 90: its own lowering
    waits three minutes without demand). Rounds of 60 s, so that the round's own rule, on the
    default profile, has not raised the file first."""
    layout, env, client = daemon_cluster
    cfg = daemon_config(env, tmp_path / "fast", interval_s=60, poll_s=3,
                        policy={"name": "dsbra"},
                        demand={"enabled": True, "poll_s": 2, "delay_threshold_s": 1.0,
                                "idle_polls": 90})
    daemon = Daemon.configure(tmp_path, "fast", cfg).start()

    def fast_raised() -> list[dict]:
        return [r for r in daemon.raised(HOT, op="sent") if r["reason"]["rule"] == "demand"]

    try:
        assert replay_until(layout, daemon, fast_raised), daemon.text()[-3000:]
        first = min(fast_raised(), key=lambda r: r["id"])
        raised_in = first["round"]
        while daemon.rounds() < raised_in + 1:  # the raise's round, and the next, ended
            daemon.wait_rounds(1, timeout_s=180)
    finally:
        log = daemon.stop()
    assert first["reason"]["policy"] == "dsbra-demand" and first["before"] == BASE[first["path"]]
    line = next(m for m in FAST_RAISE.finditer(log) if m[2] == first["path"])
    assert int(line[1]) == raised_in and int(line[4]) == first["target"], line[0]
    assert float(line[5]) > float(line[6]), line[0]  # more maps due than the holder serves
    round_end = re.search(rf"\bround={raised_in} blocks=", log)
    assert round_end and line.start() < round_end.start(), "raised after its round ended"
    # neither that round nor the next lowered it: it ended both held by the fast poll (unless
    # the round raised it further, which makes it the round's)
    changes = [r for r in daemon.journal() if r["op"] == "intent" and r["path"] == first["path"]]
    assert [r for r in changes if r["target"] < r["before"]
            and r["reason"]["rule"] != "demand-gone"] == [], changes
    taken_over = any(r["reason"]["rule"] not in ("demand", "demand-gone") for r in changes)
    rounds = {r["round"]: r for r in daemon.status()["recent_rounds"]}
    for n in (raised_in, raised_in + 1):
        assert taken_over or first["path"] in rounds[n].get("fast_poll_held", []), rounds[n]
    fast = rounds[raised_in]["fast_poll"]  # what the round's fast polls asked of Hadoop
    assert fast["polls"] >= 10 and fast["requests"].get("rm.apps", 0) >= fast["polls"] - 2, fast
    scan(client, daemon.journal())
