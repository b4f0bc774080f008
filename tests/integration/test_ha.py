"""`dsbra run --apply` on an HA cluster (`dsbra cluster up --ha`) while it fails over.

One cluster for the module (test_daemon.py's four workers and data, plus a second NameNode on
a quorum journal and a second ResourceManager). The daemon is given every NameNode and RM
(the comma-separated URLs of `dsbra cluster env`). Grep jobs keep the hot files busy; in the
middle of the run the active NameNode is killed (kill -9) and the standby made active by hand
(`hdfs haadmin -failover`, which fences the dead one), then the same for the ResourceManager
(`yarn rmadmin -transitionToActive --forceactive`: it has no -failover). The daemon must go on
with rounds against the new active ones, keep its cluster lock (a second daemon is refused),
and its journal must show every change sent once or reconciled, none lost or doubled, no file
below its base replication. Then, with the second NameNode and RM active and the first ones
back as standbys, `dsbra cluster load` and the network benchmark's reads must still work.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from dsbra.bench.network import time_reads
from dsbra.cluster import cluster as cl
from dsbra.cluster import loadcheck
from dsbra.cluster.jobs import grep_lines, submit_spaced
from dsbra.cluster.spec import ClusterSpec
from test_daemon import BASE, SPEC, _hot_jobs, cluster_with_data
from test_daemon_faults import _journal, _rounds, _start, _stop, _wait_rounds, check_journal

pytestmark = [pytest.mark.cluster, pytest.mark.ha]

HA_SPEC: ClusterSpec = dataclasses.replace(SPEC, ha=True)
INTERVAL_S = 15
ROUND_MAPS = re.compile(r" blocks=\d+ map_tasks=(\d+) ")


@pytest.fixture(scope="module")
def ha_cluster(second_cluster_slot_module):
    with cluster_with_data(second_cluster_slot_module, HA_SPEC) as up:
        yield up


def _config(tmp_path: Path, env: dict, name: str) -> str:
    cfg = {"mode": "apply", "interval_s": INTERVAL_S, "poll_s": 2, "state_dir": str(tmp_path / name),
           # every NameNode and RM, comma-separated (`dsbra cluster env`); the daemon follows
           "cluster": {"rm": env["rm"], "webhdfs": env["namenode"], "jhs": env["jhs"], "user": "root"},
           "http": {"enabled": False},
           # test_daemon_faults.py's profile: short windows hold few maps
           "policy": {"params": {"hot_factor": 1.2, "min_pressure": 0.4}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _workload(layout, stop: threading.Event) -> threading.Thread:
    """Rounds of test_daemon.py's hot grep jobs until ``stop``; a failed job (its client lost
    the ResourceManager) is not the daemon's concern, so not checked."""
    def run():
        while not stop.is_set():
            runs = submit_spaced(_hot_jobs()[:3], 3.0, lambda runs: None, state_dir=layout.root)
            for r in runs:
                r.wait(timeout=600, check=False)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _maps_after(log: Path, offset: int) -> int:
    """Map tasks the daemon's rounds counted in its log after byte ``offset``."""
    return sum(int(n) for n in ROUND_MAPS.findall(log.read_text()[offset:]))


def test_daemon_follows_namenode_and_resourcemanager_failover(ha_cluster, tmp_path):
    layout, env, client = ha_cluster
    spec = HA_SPEC
    assert (cl.active_namenode(spec), cl.active_rm(spec)) == ("nn1", "rm1")
    config, log = _config(tmp_path, env, "ha"), tmp_path / "ha.log"
    state = tmp_path / "ha"
    stop = threading.Event()
    workload = _workload(layout, stop)
    proc = _start(config, log)
    try:
        _wait_rounds(proc, log, 2, 300)
        # the NameNode: killed mid-run; the standby made active, the dead one fenced
        t0 = time.monotonic()
        cl.stop_daemon(layout, "namenode", kill=True)
        cl.ha_admin(spec, layout, "hdfs", ["-failover", "nn1", "nn2"])
        assert cl.active_namenode(spec) == "nn2"
        nn_failover_s = time.monotonic() - t0
        nn_at = len(log.read_text())
        _wait_rounds(proc, log, 2, 300)
        # the cluster lock, through the new active NameNode: a second daemon is refused
        other = subprocess.run([sys.executable, "-m", "dsbra", "run", "--config",
                                _config(tmp_path, env, "other"), "--once"],
                               capture_output=True, text=True, timeout=120)
        assert other.returncode != 0 and "cluster lock" in other.stderr, other.stderr[-2000:]

        # the ResourceManager: killed; the standby forced active (rmadmin has no -failover)
        cl.stop_daemon(layout, "resourcemanager", kill=True)
        cl.ha_admin(spec, layout, "yarn", ["-transitionToActive", "--forceactive", "rm2"])
        assert cl.active_rm(spec) == "rm2"
        rm_at = len(log.read_text())
        _wait_rounds(proc, log, 3, 400)
        # rounds after each failover saw map tasks: the daemon observes through rm2 and nn2
        deadline = time.monotonic() + 240
        while _maps_after(log, rm_at) == 0 and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(2)
    finally:
        stop.set()
        if proc.poll() is None:
            _stop(proc, log)
    text = log.read_text()
    assert _maps_after(log, nn_at) > 0, text[-3000:]
    assert _maps_after(log, rm_at) > 0, text[-3000:]
    # it asked the dead ones, was refused or unanswered, and went on with the new active ones
    assert f"failover service=WebHDFS to={spec.namenode_urls['nn2']}" in text
    assert f"failover service=ResourceManager to={spec.rm_urls['rm2']}" in text
    ops = _journal(state)
    base = check_journal(ops, client)  # every change sent once or reconciled; none lost
    for path, want in BASE.items():
        assert client.status(path)["replication"] >= base.get(path, want), path
    print(f"NameNode failover {nn_failover_s:.1f} s; journal {len(ops)} records "
          f"({sum(r['op'] == 'sent' for r in ops)} sent); {_rounds(log)} rounds")
    workload.join(timeout=1)


def test_load_check_and_network_reads_go_to_the_second_namenode_and_rm(ha_cluster):
    """`dsbra cluster load` and the network benchmark's reads, with nn1 and rm1 standbys (the
    first URLs) and nn2 and rm2 active: as the test above leaves them, once the killed ones
    are back; run alone, this test fails over by hand."""
    layout, env, client = ha_cluster
    spec = HA_SPEC
    for name in ("namenode", "resourcemanager"):
        cl.start_daemon(layout, name)  # a no-op unless the test above killed it
    if cl.active_namenode(spec) != "nn2":
        cl.ha_admin(spec, layout, "hdfs", ["-failover", "nn1", "nn2"])
    if cl.active_rm(spec) != "rm2":
        cl.ha_admin(spec, layout, "yarn", ["-transitionToStandby", "rm1"])
        cl.ha_admin(spec, layout, "yarn", ["-transitionToActive", "rm2"])
    assert (cl.active_namenode(spec), cl.active_rm(spec)) == ("nn2", "rm2")
    path = "/td/net-ha"
    client.write(path, grep_lines(3000, seed=99), overwrite=True, replication=1)
    reads = time_reads(env, path, repeats=1)
    assert set(reads["levels"]) == {"node_local", "rack_local", "off_rack"}, reads
    summary = loadcheck.run(layout, jobs=1, gap_s=0.0)
    assert summary["failed_jobs"] == 0 and summary["peak_containers"] > 0, summary
