"""`dsbra run --apply` on an HA cluster (`dsbra cluster up --ha`) while it fails over by itself.

One cluster for the module (test_daemon.py's four workers and data, plus a second NameNode on
a quorum journal, a second ResourceManager, and for automatic failover a ZooKeeper server and
a ZKFC beside each NameNode). First `dsbra cluster haadmin hdfs -failover` hands the active
NameNode over through the ZKFCs, and manual transitions are refused. Then the daemon is given
every NameNode and RM (the comma-separated URLs of `dsbra cluster env`); grep jobs keep the hot
files busy; in the middle of the run the active NameNode is killed (kill -9) and the standby
must become active by itself (its ZKFC wins the election) within a bound, then the same for
the active ResourceManager (the embedded elector of the standby, once the dead one's ZooKeeper
session expires). The daemon must go on with rounds against the new active ones, keep its
cluster lock (a second daemon is refused), and its journal must show every change sent once or
reconciled, none lost or doubled, no file below its base replication.

Manual failover (`--ha-failover manual`, haadmin -transitionToActive) is what this test did
before automatic failover; its configuration is covered by the render tests
(tests/unit/test_cluster_config.py).
Then, with the second NameNode and RM active and the first ones back as standbys (the first
URLs of every list), `dsbra cluster load` and the network benchmark's reads must still work.
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
from dsbra.cluster.spec import HA_NAMENODES, HA_RMS, ClusterSpec
from dsbra.errors import ClusterError
from test_daemon import BASE, SPEC, _hot_jobs, cluster_with_data
from test_daemon_faults import _journal, _rounds, _stop, _wait_rounds, check_journal

pytestmark = [pytest.mark.cluster, pytest.mark.ha]

HA_SPEC: ClusterSpec = dataclasses.replace(SPEC, ha=True)  # automatic failover, the default
#: seconds from the kill until the standby is active: a ZKFC notices its NameNode gone within
#: a health check (1 s) and quits the election; an RM's lock goes with its ZooKeeper session
#: (10 s); both then load state. Bounds for a loaded 2-core machine
NAMENODE_FAILOVER_BOUND_S = 60
RM_FAILOVER_BOUND_S = 90
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


def _other(ids: tuple[str, str], one: str) -> str:
    return ids[1 - ids.index(one)]


def _wait_active(active, want: str, since: float, bound_s: float) -> float:
    """Seconds from ``since`` until ``active()`` (cl.active_namenode or cl.active_rm) names
    ``want``; fails after ``bound_s``."""
    while active() != want:
        assert time.monotonic() - since < bound_s, f"{want} not active {bound_s} s after the kill"
        time.sleep(0.5)
    return time.monotonic() - since


def _failover_namenode(layout, active: str, standby: str, spec: ClusterSpec = HA_SPEC) -> None:
    """`haadmin -failover` through the ZKFCs. A NameNode that just answered may need one more
    health check of its ZKFC before it takes part (refused: "... is not currently healthy.
    Cannot be failover target"): retried for a minute."""
    deadline = time.monotonic() + 60
    while True:
        try:
            cl.ha_admin(spec, layout, "hdfs", ["-failover", active, standby])
            return
        except ClusterError as exc:
            assert "not currently healthy" in str(exc) and time.monotonic() < deadline, str(exc)
            time.sleep(1)


def test_haadmin_failover_goes_through_the_zkfcs(ha_cluster):
    layout, _, _ = ha_cluster
    spec = HA_SPEC
    active = cl.active_namenode(spec)
    assert active == "nn1"  # its ZKFC started first and won the election
    standby = _other(HA_NAMENODES, active)
    with pytest.raises(ClusterError, match=r"^automatic failover is on, .* -transitionToActive is refused"):
        cl.ha_admin(spec, layout, "hdfs", ["-transitionToActive", standby])
    _failover_namenode(layout, active, standby)
    assert cl.active_namenode(spec) == standby
    states = cl.ha_admin(spec, layout, "hdfs", ["-getAllServiceState"])
    assert re.search(rf":{spec.port('namenode_rpc')}\s+standby", states), states  # nn1


def follow_failovers(spec: ClusterSpec, layout, client, config, name: str, tmp_path: Path,
                     session=None, env: dict | None = None) -> str:
    """The daemon (``config(name)``'s, a real process with ``env``) running under test_daemon.py's
    workload while the active NameNode, then the active RM, is killed; ``session``: the
    cluster's web session (SPNEGO on --kerberos). Checks that it carries on against each new
    active one, keeps its cluster lock, and leaves a consistent journal with no file below its
    base; returns its log."""
    nn_active, rm_active = cl.active_namenode(spec, session), cl.active_rm(spec, session)
    nn_standby, rm_standby = _other(HA_NAMENODES, nn_active), _other(HA_RMS, rm_active)
    log = tmp_path / f"{name}.log"
    stop = threading.Event()
    workload = _workload(layout, stop)
    with open(log, "a") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "dsbra", "run", "--config", config(name)],
                                stdout=subprocess.DEVNULL, stderr=fh, env=env)
    try:
        _wait_rounds(proc, log, 2, 300)
        # the NameNode: killed mid-run; the standby's ZKFC makes it active
        nn_kill_at = len(log.read_text())
        t0 = time.monotonic()
        cl.stop_daemon(layout, cl.HA_DAEMONS[nn_active], kill=True)
        nn_failover_s = _wait_active(lambda: cl.active_namenode(spec, session), nn_standby, t0,
                                     NAMENODE_FAILOVER_BOUND_S)
        nn_at = len(log.read_text())
        _wait_rounds(proc, log, 2, 300)
        # the cluster lock, through the new active NameNode: a second daemon is refused
        other = subprocess.run([sys.executable, "-m", "dsbra", "run", "--config", config("other"), "--once"],
                               capture_output=True, text=True, timeout=120, env=env)
        assert other.returncode != 0 and "cluster lock" in other.stderr, other.stderr[-2000:]

        # the ResourceManager: killed; the standby's elector takes the lock once the dead
        # one's ZooKeeper session expires
        rm_kill_at = len(log.read_text())
        t0 = time.monotonic()
        cl.stop_daemon(layout, cl.HA_DAEMONS[rm_active], kill=True)
        rm_failover_s = _wait_active(lambda: cl.active_rm(spec, session), rm_standby, t0,
                                     RM_FAILOVER_BOUND_S)
        rm_at = len(log.read_text())
        _wait_rounds(proc, log, 3, 400)
        # rounds after each failover saw map tasks: the daemon observes through the new ones
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
    assert f"failover service=WebHDFS to={spec.namenode_urls[nn_standby]}" in text[nn_kill_at:]
    assert f"failover service=ResourceManager to={spec.rm_urls[rm_standby]}" in text[rm_kill_at:]
    ops = _journal(tmp_path / name)
    base = check_journal(ops, client)  # every change sent once or reconciled; none lost
    for path, want in BASE.items():
        assert client.status(path)["replication"] >= base.get(path, want), path
    print(f"{name} failover: NameNode {nn_active}->{nn_standby} {nn_failover_s:.1f} s, "
          f"ResourceManager {rm_active}->{rm_standby} {rm_failover_s:.1f} s; journal {len(ops)} records "
          f"({sum(r['op'] == 'sent' for r in ops)} sent); {_rounds(log)} rounds")
    workload.join(timeout=1)
    return text


def test_daemon_follows_automatic_namenode_and_resourcemanager_failover(ha_cluster, tmp_path):
    layout, env, client = ha_cluster
    follow_failovers(HA_SPEC, layout, client, lambda name: _config(tmp_path, env, name), "ha", tmp_path)


def test_load_check_and_network_reads_go_to_the_second_namenode_and_rm(ha_cluster):
    """`dsbra cluster load` and the network benchmark's reads, with nn1 and rm1 standbys (the
    first URLs) and nn2 and rm2 active: the killed daemons of the test above started again,
    then the NameNode failed over through the ZKFCs and rm1 restarted if either is not so."""
    layout, env, client = ha_cluster
    spec = HA_SPEC
    cl.start_daemon(layout, *cl.HA_DAEMONS.values())  # those the test above killed
    if cl.active_namenode(spec) != "nn2":
        _failover_namenode(layout, "nn1", "nn2")
    if cl.active_rm(spec) != "rm2":  # automatic failover refuses transitions: restart rm1
        cl.stop_daemon(layout, cl.HA_DAEMONS["rm1"])
        _wait_active(lambda: cl.active_rm(spec), "rm2", time.monotonic(), RM_FAILOVER_BOUND_S)
        cl.start_daemon(layout, cl.HA_DAEMONS["rm1"])
    assert (cl.active_namenode(spec), cl.active_rm(spec)) == ("nn2", "rm2")
    path = "/td/net-ha"
    client.write(path, grep_lines(3000, seed=99), overwrite=True, replication=1)
    reads = time_reads(env, path, repeats=1)
    assert set(reads["levels"]) == {"node_local", "rack_local", "off_rack"}, reads
    summary = loadcheck.run(layout, jobs=1, gap_s=0.0)
    assert summary["failed_jobs"] == 0 and summary["peak_containers"] > 0, summary
