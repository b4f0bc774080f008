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
from pathlib import Path

import pytest
import yaml

from dsbra.act.hdfs_client import make_client
from dsbra.cluster import cluster as cl
from dsbra.cluster import security as sec
from dsbra.cluster.jobs import grep_lines
from dsbra.cluster.spec import HA_NAMENODES, HA_RMS
from test_daemon import BASE, COLD, HOT, SPEC, bundled_cluster
from test_ha import INTERVAL_S, _failover_namenode, _other, follow_failovers

pytestmark = [pytest.mark.cluster, pytest.mark.secure, pytest.mark.ha]

SECURE_HA_SPEC = dataclasses.replace(SPEC, ha=True, kerberos=True, tls=True)


@pytest.fixture(scope="module")
def secure_ha_cluster(second_cluster_slot_module):
    with bundled_cluster(second_cluster_slot_module, SECURE_HA_SPEC, timeout=400) as (layout, env):
        with cl.web_session(SECURE_HA_SPEC, layout) as session:  # in the client's environment
            client = make_client(";".join(env["namenode"].split(",")), kerberos=True,
                                 principal=sec.client_principal(), ca_bundle=env["ca_bundle"])
            for i, path in enumerate(HOT + COLD):
                client.write(path, grep_lines(3000, seed=i), overwrite=True, replication=BASE[path])
            yield layout, env, client, session


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


def test_daemon_follows_namenode_and_resourcemanager_failover_with_spnego(secure_ha_cluster, tmp_path):
    layout, env, client, session = secure_ha_cluster
    text = follow_failovers(SECURE_HA_SPEC, layout, client, lambda name: _config(tmp_path, env, name),
                            "secure-ha", tmp_path, session=session, env=_daemon_env(env))
    assert "Traceback" not in text, text[-3000:]
