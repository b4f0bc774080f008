"""`dsbra run --apply` on an HA cluster (`dsbra cluster up --ha`) while it fails over by itself.

One cluster for the module (harness.py's four workers and data, plus a second NameNode on a
quorum journal, a second ResourceManager, and for automatic failover a ZooKeeper server and a
ZKFC beside each NameNode). First `dsbra cluster haadmin hdfs -failover` hands the active
NameNode over through the ZKFCs, and manual transitions are refused. Then the daemon is given
every NameNode and RM (the comma-separated URLs of `dsbra cluster env`); grep jobs keep hot
files busy; in the middle of the run the active NameNode is killed (kill -9) and the standby
must become active by itself (its ZKFC wins the election) within a bound, then the same for
the active ResourceManager (the embedded elector of the standby, once the dead one's ZooKeeper
session expires). After each failover the jobs read a new hot file, which the daemon must raise
through the new active NameNode; it keeps its cluster lock (a second daemon is refused), and
its journal must show every change sent once or reconciled, none lost or doubled, no file
below its base replication (harness.follow_failovers).

Manual failover (`--ha-failover manual`, haadmin -transitionToActive) is what this test did
before automatic failover; its configuration is covered by the render tests
(tests/unit/cluster/test_cluster_config.py).
Then, with the second NameNode and RM active and the first ones back as standbys (the first
URLs of every list), `dsbra cluster load` and the network benchmark's reads must still work.
"""

from __future__ import annotations

import dataclasses
import re
import time

import pytest

from dsbra.bench.network import time_reads
from dsbra.cluster import cluster as cl
from dsbra.cluster import loadcheck
from dsbra.cluster.jobs import grep_lines
from dsbra.cluster.spec import HA_NAMENODES, ClusterSpec
from dsbra.errors import ClusterError
from harness import (HA_INTERVAL_S, RM_FAILOVER_BOUND_S, SPEC, Daemon,
                     daemon_config, failover_namenode, follow_failovers, other, wait_active,
                     write_data)

pytestmark = [pytest.mark.cluster, pytest.mark.ha]

HA_SPEC: ClusterSpec = dataclasses.replace(SPEC, ha=True)  # automatic failover, the default


@pytest.fixture(scope="module")
def ha_cluster(second_slot):
    layout, env, _ = second_slot.cluster(HA_SPEC)
    client = cl.hdfs_client(env["namenode"])  # every NameNode
    write_data(client)
    return layout, env, client


def test_haadmin_failover_goes_through_the_zkfcs(ha_cluster):
    layout, _, _ = ha_cluster
    spec = HA_SPEC
    active = cl.active_namenode(spec)
    assert active == "nn1"  # its ZKFC started first and won the election
    standby = other(HA_NAMENODES, active)
    with pytest.raises(ClusterError, match=r"^automatic failover is on, .* -transitionToActive is refused"):
        cl.ha_admin(spec, layout, "hdfs", ["-transitionToActive", standby])
    failover_namenode(layout, active, standby, spec)
    assert cl.active_namenode(spec) == standby
    states = cl.ha_admin(spec, layout, "hdfs", ["-getAllServiceState"])
    assert re.search(rf":{spec.port('namenode_rpc')}\s+standby", states), states  # nn1


def test_daemon_follows_automatic_namenode_and_resourcemanager_failover(ha_cluster, tmp_path):
    layout, env, client = ha_cluster
    # every NameNode and RM, comma-separated (`dsbra cluster env`); the daemon follows
    cfg = daemon_config(env, tmp_path / "ha", interval_s=HA_INTERVAL_S, poll_s=2)
    follow_failovers(HA_SPEC, layout, client, Daemon.configure(tmp_path, "ha", cfg))


def test_load_check_and_network_reads_go_to_the_second_namenode_and_rm(ha_cluster):
    """`dsbra cluster load` and the network benchmark's reads, with nn1 and rm1 standbys (the
    first URLs) and nn2 and rm2 active: the killed daemons of the test above started again,
    then the NameNode failed over through the ZKFCs and rm1 restarted if either is not so."""
    layout, env, client = ha_cluster
    spec = HA_SPEC
    cl.start_daemon(layout, *cl.HA_DAEMONS.values())  # those the test above killed
    if cl.active_namenode(spec) != "nn2":
        failover_namenode(layout, "nn1", "nn2", spec)
    if cl.active_rm(spec) != "rm2":  # automatic failover refuses transitions: restart rm1
        cl.stop_daemon(layout, cl.HA_DAEMONS["rm1"])
        wait_active(lambda: cl.active_rm(spec), "rm2", time.monotonic(), RM_FAILOVER_BOUND_S)
        cl.start_daemon(layout, cl.HA_DAEMONS["rm1"])
    assert (cl.active_namenode(spec), cl.active_rm(spec)) == ("nn2", "rm2")
    path = "/td/net-ha"
    client.write(path, grep_lines(3000, seed=99), overwrite=True, replication=1)
    reads = time_reads(env, path, repeats=1)
    assert set(reads["levels"]) == {"node_local", "rack_local", "off_rack"}, reads
    summary = loadcheck.run(layout, jobs=1, gap_s=0.0)
    assert summary["failed_jobs"] == 0 and summary["peak_containers"] > 0, summary
