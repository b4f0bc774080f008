"""`dsbra run` on a real cluster with delay scheduling: dry run, safe mode, the held-out files.

The daemon tests' cluster in the second slot (harness.py: continuous scheduling, D = 10 s, two
hot one-block files at replication 1, cold ones on every worker; each test starts with every
file back at its base), shared with test_daemon_faults.py and test_placement_heat.py. The
daemon runs as a real process (`dsbra run`), round after round. Raising hot files and lowering
them back in apply mode: test_placement_heat.py, which checks where each replica went too.
"""

from __future__ import annotations

import json
import socket

import pytest
import requests

from harness import BASE, HOT, Daemon, daemon_config, dfsadmin, replay_until, replication, run_dsbra

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
# seed and path, dsbra.policy.experiment; checked below, so a change of hash fails loudly)
HOLDOUT_SEED = 4


def test_holdout_keeps_control_files_unchanged_and_impact_reads_the_state(daemon_cluster,
                                                                           tmp_path):
    from dsbra.impact import impact
    from dsbra.policy.experiment import Holdout

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
