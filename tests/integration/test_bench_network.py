"""Worker-to-worker reads on the bundled cluster, unshaped and shaped (`cluster up --net-mbit`).

The shaping is applied to the session's cluster by the same function `up` calls
(netns.shape_worker) and removed afterwards, so no second cluster is needed.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from dsbra.bench.data import grep_block
from dsbra.bench.network import time_reads
from dsbra.cluster import netns
from dsbra.cluster import state as st
from dsbra.cluster.spec import ClusterSpec

pytestmark = pytest.mark.cluster

MB = 1 << 20


@pytest.fixture
def one_replica_block(webhdfs):
    path = f"/tests/net-{uuid.uuid4().hex}"
    webhdfs.write(path, grep_block(16 * MB // 102, 7), replication=1, blocksize=64 * MB)
    yield path
    webhdfs.delete(path)


def test_every_worker_reads_a_block_held_by_another(cluster, one_replica_block):
    """Worker-to-worker traffic crosses the cluster's own switch namespace, so a host firewall
    that drops bridged frames (Docker's FORWARD policy) cannot break non-local reads."""
    result = time_reads(cluster, one_replica_block, repeats=1)
    assert set(result["levels"]) == {"node_local", "rack_local", "off_rack"}
    assert result["bytes"] == (16 * MB // 102) * 102


def test_shaped_links_make_non_local_reads_slower(cluster, cluster_layout, one_replica_block):
    spec = ClusterSpec.from_dict(st.load(cluster_layout.state_file)["spec"])
    shaped = dataclasses.replace(spec, net_mbit=80.0)
    try:
        for worker in shaped.worker_list:
            netns.shape_worker(shaped, worker)
        result = time_reads(cluster, one_replica_block, repeats=2)
    finally:
        for worker in shaped.worker_list:
            netns.unshape_worker(worker)
    levels = result["levels"]
    wire_s = result["bytes"] * 8 / 80e6  # the time the bytes take at 80 Mbit/s
    for level in ("rack_local", "off_rack"):
        assert levels[level]["median_s"] >= 0.8 * wire_s, result
        assert levels[level]["median_s"] >= 3 * levels["node_local"]["median_s"], result
