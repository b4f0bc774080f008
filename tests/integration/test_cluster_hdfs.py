"""HDFS of the bundled cluster: WebHDFS, distinct worker hosts, racks, replication."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import requests

pytestmark = pytest.mark.cluster


def _block_locations(cluster, path: str) -> list[dict]:
    resp = requests.get(f"{cluster['webhdfs']}{path}", params={"op": "GET_BLOCK_LOCATIONS", "user.name": "root"},
                        timeout=10)
    resp.raise_for_status()
    return resp.json()["LocatedBlocks"]["locatedBlocks"]


def _live_replicas(cluster, path: str) -> set[str]:
    [block] = _block_locations(cluster, path)
    return {loc["hostName"] for loc in block["locations"]}


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def scratch(webhdfs):
    path = f"/tests/{uuid.uuid4().hex}"
    yield path
    webhdfs.delete(path, recursive=True)


def test_webhdfs_write_then_read(webhdfs, scratch):
    payload = b"dsbra " * 10000
    webhdfs.write(f"{scratch}/a.txt", data=payload)
    with webhdfs.read(f"{scratch}/a.txt") as reader:
        assert reader.read() == payload
    assert webhdfs.status(f"{scratch}/a.txt")["length"] == len(payload)


def test_block_locations_name_distinct_worker_hosts(cluster, webhdfs, scratch):
    worker_hosts = {w["host"] for w in cluster["workers"]}
    hosts_seen = set()
    for i in range(6):
        webhdfs.write(f"{scratch}/f{i}", data=b"x" * 4096)
        # a loaded DataNode may drop out of the write pipeline; the NameNode then copies the
        # block within seconds, so wait for the full replica count
        _wait(lambda: len(_block_locations(cluster, f"{scratch}/f{i}")[0]["locations"]) == cluster["replication"],
              30, f"{cluster['replication']} replicas of f{i}")
        [block] = _block_locations(cluster, f"{scratch}/f{i}")
        hosts = [loc["hostName"] for loc in block["locations"]]
        assert len(hosts) == len(set(hosts)) == cluster["replication"]
        assert set(hosts) <= worker_hosts
        # the NameNode knows each DataNode by its own address: its registration IP is its host name
        assert all(loc["ipAddr"] == loc["hostName"] for loc in block["locations"])
        hosts_seen.update(hosts)
    assert len(hosts_seen) >= 2


def test_namenode_and_resourcemanager_agree_on_two_or_more_racks(cluster):
    expected = {w["host"]: w["rack"] for w in cluster["workers"]}
    bean = requests.get(f"{cluster['namenode']}/jmx", params={"qry": "Hadoop:service=NameNode,name=NameNodeInfo"},
                        timeout=10).json()["beans"][0]
    nn_racks = {key.split(":")[0]: node["location"] for key, node in json.loads(bean["LiveNodes"]).items()}
    assert nn_racks == expected
    assert len(set(nn_racks.values())) >= 2
    nodes = requests.get(f"{cluster['rm']}/ws/v1/cluster/nodes", timeout=10).json()["nodes"]["node"]
    rm_racks = {node["nodeHostName"]: node["rack"] for node in nodes}
    assert rm_racks == expected


def test_setreplication_raises_then_lowers_live_replicas(cluster, webhdfs, scratch):
    path = f"{scratch}/hot"
    base = cluster["replication"]
    target = base + 1
    assert target <= len(cluster["workers"]), "needs a spare worker"
    webhdfs.write(path, data=b"y" * 100_000, replication=base)
    _wait(lambda: len(_live_replicas(cluster, path)) == base, 30, f"{base} replicas after write")

    before = _live_replicas(cluster, path)
    assert _set_replication(cluster, path, target) == {"boolean": True}
    assert webhdfs.status(path)["replication"] == target
    _wait(lambda: len(_live_replicas(cluster, path)) == target, 60, f"{target} live replicas")
    assert before < _live_replicas(cluster, path)  # the old replicas stay, one new host joins

    assert _set_replication(cluster, path, base) == {"boolean": True}
    _wait(lambda: len(_live_replicas(cluster, path)) == base, 60, f"back to {base} live replicas")


def _set_replication(cluster, path: str, replication: int) -> dict:
    resp = requests.put(f"{cluster['webhdfs']}{path}",
                        params={"op": "SETREPLICATION", "replication": replication, "user.name": "root"}, timeout=10)
    resp.raise_for_status()
    return resp.json()
