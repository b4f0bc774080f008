"""dsbra on a Kerberized, https-only HA cluster (`dsbra cluster up --ha --kerberos --tls`,
issue 23): the two halves test_ha.py and test_secure_cluster.py test apart, together, as the
clusters dsbra is for run them.

One bring-up for the module, in the second slot, with test_daemon.py's files: two NameNodes on
three JournalNodes (each logged in as nn/<its address>), two ResourceManagers, ZooKeeper and a
ZKFC beside each NameNode (logged in as the NameNode), SPNEGO and https on every web endpoint.
First `haadmin -failover` as the cluster's Kerberos client, through the ZKFCs. Then the daemon,
logged in from dsbra's keytab and told nothing but the cluster's client configuration
(`HADOOP_CONF_DIR`: both NameNodes' and RMs' https addresses), runs while grep jobs keep the hot
files busy; the active NameNode is killed, then the active RM, and the daemon must go on against
the new active ones (one more SPNEGO handshake each), keep its cluster lock, and leave a journal
with every change sent once or reconciled and no file below its base.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from dsbra.act.hdfs_client import make_client
from dsbra.cluster import cluster as cl
from dsbra.cluster import security as sec
from dsbra.cluster.jobs import grep_lines
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import HA_NAMENODES, HA_RMS
from test_daemon import BASE, COLD, HOT, SPEC
from test_daemon_faults import _journal, _rounds, _wait_rounds, check_journal
from test_ha import (INTERVAL_S, NAMENODE_FAILOVER_BOUND_S, RM_FAILOVER_BOUND_S, _failover_namenode,
                     _maps_after, _other, _wait_active, _workload)

pytestmark = [pytest.mark.cluster, pytest.mark.secure, pytest.mark.ha]

SECURE_HA_SPEC = dataclasses.replace(SPEC, ha=True, kerberos=True, tls=True)


@pytest.fixture(scope="module")
def secure_ha_cluster(second_cluster_slot_module):
    if os.geteuid() != 0:
        pytest.skip("the bundled cluster needs root (network namespaces)")
    layout = StateLayout(second_cluster_slot_module.resolve())
    try:
        cl.up(SECURE_HA_SPEC, layout, timeout=400, log=lambda *_: None)
        env = cl.env(layout)
        with cl.web_session(SECURE_HA_SPEC, layout) as session:  # in the client's environment
            client = make_client(";".join(env["namenode"].split(",")), kerberos=True,
                                 principal=sec.client_principal(), ca_bundle=env["ca_bundle"])
            for i, path in enumerate(HOT + COLD):
                client.write(path, grep_lines(3000, seed=i), overwrite=True, replication=BASE[path])
            yield layout, env, client, session
    finally:
        cl.down(layout)


def test_haadmin_failover_through_the_zkfcs_as_the_kerberos_client(secure_ha_cluster):
    layout, _, _, session = secure_ha_cluster
    spec = SECURE_HA_SPEC
    active = cl.active_namenode(spec, session)
    assert active == "nn1"  # its ZKFC started first and won the election
    assert cl.active_rm(spec, session) in HA_RMS
    standby = _other(HA_NAMENODES, active)
    _failover_namenode(layout, active, standby, spec)
    assert cl.active_namenode(spec, session) == standby


def _config(tmp_path: Path, env: dict, name: str) -> str:
    """The daemon's config on this cluster: no URLs (HADOOP_CONF_DIR names them), dsbra's
    keytab and the cluster's CA."""
    krb = env["kerberos"]
    cfg = {"mode": "apply", "interval_s": INTERVAL_S, "poll_s": 2, "state_dir": str(tmp_path / name),
           "cluster": {"kerberos": True, "kerberos_principal": krb["principal"], "keytab": krb["keytab"],
                       "ca_bundle": env["ca_bundle"]},
           "http": {"enabled": False},
           "policy": {"params": {"hot_factor": 1.2, "min_pressure": 0.4}}}  # test_ha.py's
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _daemon_env(env: dict) -> dict[str, str]:
    """The realm's krb5.conf, the cluster's client configuration, no one else's ticket cache."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("KRB5", "DSBRA_"))}
    return {**out, "KRB5_CONFIG": env["kerberos"]["krb5_conf"], "HADOOP_CONF_DIR": env["conf_dir"]}


def _start(config: str, log: Path, env: dict) -> subprocess.Popen:
    with open(log, "a") as fh:
        return subprocess.Popen([sys.executable, "-m", "dsbra", "run", "--config", config],
                                stdout=subprocess.DEVNULL, stderr=fh, env=_daemon_env(env))


def test_daemon_follows_namenode_and_resourcemanager_failover_with_spnego(secure_ha_cluster, tmp_path):
    layout, env, client, session = secure_ha_cluster
    spec = SECURE_HA_SPEC
    nn_active, rm_active = cl.active_namenode(spec, session), cl.active_rm(spec, session)
    nn_standby, rm_standby = _other(HA_NAMENODES, nn_active), _other(HA_RMS, rm_active)
    config, log = _config(tmp_path, env, "secure-ha"), tmp_path / "secure-ha.log"
    stop = threading.Event()
    workload = _workload(layout, stop)
    proc = _start(config, log, env)
    try:
        _wait_rounds(proc, log, 2, 300)
        nn_kill_at = len(log.read_text())
        t0 = time.monotonic()
        cl.stop_daemon(layout, cl.HA_DAEMONS[nn_active], kill=True)
        nn_failover_s = _wait_active(lambda: cl.active_namenode(spec, session), nn_standby, t0,
                                     NAMENODE_FAILOVER_BOUND_S)
        nn_at = len(log.read_text())
        _wait_rounds(proc, log, 2, 300)
        # the cluster lock, through the new active NameNode: a second daemon is refused
        other = subprocess.run([sys.executable, "-m", "dsbra", "run", "--config",
                                _config(tmp_path, env, "other"), "--once"],
                               capture_output=True, text=True, timeout=120, env=_daemon_env(env))
        assert other.returncode != 0 and "cluster lock" in other.stderr, other.stderr[-2000:]

        rm_kill_at = len(log.read_text())
        t0 = time.monotonic()
        cl.stop_daemon(layout, cl.HA_DAEMONS[rm_active], kill=True)
        rm_failover_s = _wait_active(lambda: cl.active_rm(spec, session), rm_standby, t0,
                                     RM_FAILOVER_BOUND_S)
        rm_at = len(log.read_text())
        _wait_rounds(proc, log, 3, 400)
        deadline = time.monotonic() + 240
        while _maps_after(log, rm_at) == 0 and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(2)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.terminate()
            assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert _maps_after(log, nn_at) > 0, text[-3000:]
    assert _maps_after(log, rm_at) > 0, text[-3000:]
    assert f"failover service=WebHDFS to={spec.namenode_urls[nn_standby]}" in text[nn_kill_at:]
    assert f"failover service=ResourceManager to={spec.rm_urls[rm_standby]}" in text[rm_kill_at:]
    ops = _journal(tmp_path / "secure-ha")
    base = check_journal(ops, client)
    for path, want in BASE.items():
        assert client.status(path)["replication"] >= base.get(path, want), path
    print(f"secure HA failover: NameNode {nn_active}->{nn_standby} {nn_failover_s:.1f} s, "
          f"ResourceManager {rm_active}->{rm_standby} {rm_failover_s:.1f} s; journal {len(ops)} "
          f"records ({sum(r['op'] == 'sent' for r in ops)} sent); {_rounds(log)} rounds")
    workload.join(timeout=1)
