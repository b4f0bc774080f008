"""dsbra on a Kerberized, https-only HA cluster (`dsbra cluster up --ha --kerberos --tls`, issue
23): HA as test_ha.py tests it, with the security test_secure_cluster.py tests on this cluster
first, together, as the clusters dsbra is for run them.

One bring-up, in the second slot, shared with test_secure_cluster.py (which runs first and
fails nothing over), with test_daemon.py's files: two NameNodes on three JournalNodes (each
logged in as nn/<its address>), two ResourceManagers, ZooKeeper and a ZKFC beside each NameNode
(logged in as the NameNode), SPNEGO and https on every web endpoint. First `haadmin -failover`
as the cluster's Kerberos client, through the ZKFCs. Then the daemon, logged in from dsbra's
keytab and told nothing but the cluster's client configuration (`HADOOP_CONF_DIR`: both
NameNodes' and RMs' https addresses), runs while grep jobs keep the hot files busy; the active
NameNode is killed, then the active RM, and the daemon must go on against the new active ones
(one more SPNEGO handshake each), raise the new hot file the jobs read after each failover
through the new active NameNode, keep its cluster lock, and leave a journal with every change
sent once or reconciled and no file below its base (harness.follow_failovers). dsbra's tickets
last 30 s, so the daemon logs in again from its keytab several times during the run, and no
request of its is refused (no 401 in its log).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from dsbra.cluster import cluster as cl
from dsbra.cluster import security as sec
from dsbra.cluster.spec import HA_NAMENODES, HA_RMS
from harness import (HA_INTERVAL_S, HOT_PROFILE, SECURE_HA_SPEC, Daemon, failover_namenode,
                     follow_failovers, other)

pytestmark = [pytest.mark.cluster, pytest.mark.secure, pytest.mark.ha]

#: dsbra's tickets live this long (the principal's maxlife), so the daemon's run through both
#: failovers outlives several: each SPNEGO login after the first (a new active NameNode or RM,
#: or the cluster's 60 s cookie expired) is made with a ticket gssapi took anew from the keytab
TICKET_LIFETIME_S = 30


@pytest.fixture(scope="module")
def secure_ha_cluster(secure_ha_cluster):
    """conftest's, with dsbra's tickets cut to TICKET_LIFETIME_S."""
    sec.kadmin(sec.security_paths(secure_ha_cluster[0]),
               f'modprinc -maxlife "{TICKET_LIFETIME_S} seconds" {sec.DSBRA_PRINCIPAL}')
    return secure_ha_cluster


def test_haadmin_failover_through_the_zkfcs_as_the_kerberos_client(secure_ha_cluster):
    layout, _, _, session = secure_ha_cluster
    spec = SECURE_HA_SPEC
    active = cl.active_namenode(spec, session)
    assert active == "nn1"  # its ZKFC started first and won the election
    assert cl.active_rm(spec, session) in HA_RMS
    standby = other(HA_NAMENODES, active)
    failover_namenode(layout, active, standby, spec)
    assert cl.active_namenode(spec, session) == standby


def _config(env: dict, state_dir: Path) -> dict:
    """The daemon's config on this cluster: no URLs (HADOOP_CONF_DIR names them), dsbra's
    keytab and the cluster's CA."""
    krb = env["kerberos"]
    return {"mode": "apply", "interval_s": HA_INTERVAL_S, "poll_s": 2, "state_dir": str(state_dir),
            "cluster": {"kerberos": True, "kerberos_principal": krb["principal"],
                        "keytab": krb["keytab"], "ca_bundle": env["ca_bundle"]},
            "http": {"enabled": False}, "policy": HOT_PROFILE}


def _daemon_env(env: dict) -> dict[str, str]:
    """The realm's krb5.conf, the cluster's client configuration, no one else's ticket cache."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("KRB5", "DSBRA_"))}
    return {**out, "KRB5_CONFIG": env["kerberos"]["krb5_conf"], "HADOOP_CONF_DIR": env["conf_dir"]}


def test_daemon_follows_namenode_and_resourcemanager_failover_with_spnego(secure_ha_cluster, tmp_path):
    layout, env, client, session = secure_ha_cluster
    daemon = Daemon.configure(tmp_path, "secure-ha", _config(env, tmp_path / "secure-ha"),
                              _daemon_env(env))
    started = time.monotonic()
    text = follow_failovers(SECURE_HA_SPEC, layout, client, daemon, session=session)
    ran_s = time.monotonic() - started
    assert "Traceback" not in text, text[-3000:]
    # no HTTP 401; a log timestamp's milliseconds (",401") are not one (a run failed on that)
    assert not re.search(r"(?<!,)\b401\b", text), text[-4000:]
    # the run outlived at least two of dsbra's tickets, and every request authenticated (above)
    assert ran_s > 2 * TICKET_LIFETIME_S, ran_s
