"""The hadoop-docker entry point renders the same configs and command lines as the netns cluster."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

from dsbra.cluster import container

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK on PATH")


def test_worker_dry_run_renders_its_identity_and_runs_datanode_and_nodemanager(tmp_path, capsys):
    container.main(["worker", "2", "--state-dir", str(tmp_path), "--dry-run"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["datanode-w2", "nodemanager-w2"]
    assert "org.apache.hadoop.hdfs.server.datanode.DataNode" in lines[0]
    assert all("ip netns" not in line for line in lines)  # containers are hosts already
    hdfs = ET.parse(tmp_path / "conf" / "w2" / "hdfs-site.xml").getroot()
    values = {p.findtext("name"): p.findtext("value") for p in hdfs}
    assert values["dfs.datanode.hostname"] == "10.77.0.12"


def test_namenode_dry_run_formats_first(tmp_path, capsys):
    container.main(["namenode", "--state-dir", str(tmp_path), "--dry-run"])
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["namenode-format", "namenode"]


def test_worker_index_is_checked(tmp_path):
    with pytest.raises(SystemExit):
        container.main(["worker", "9", "--state-dir", str(tmp_path), "--dry-run"])


def test_the_namenode_containers_client_state_is_an_up_cluster_for_bench_commands(tmp_path):
    """`dsbra bench data/replay --state-dir /dsbra` inside a container find the cluster through
    the state the NameNode's container writes: up, at the compose file's addresses."""
    from dsbra.cluster import cluster as cl
    from dsbra.cluster.install import HadoopInstall
    from dsbra.cluster.paths import StateLayout, hadoop_home
    from dsbra.cluster.spec import ClusterSpec

    spec = ClusterSpec(workers=4, replication=3, subnet="172.29.3.0/24")
    layout = StateLayout(tmp_path)
    container._client_state(spec, layout, HadoopInstall(hadoop_home(spec.hadoop_version)),
                            container.find_java())
    env = cl.env(layout)
    assert env["rm"] == spec.urls["rm"] and env["webhdfs"] == spec.urls["webhdfs"]
    assert "172.29.3." in env["rm"]


def test_the_resourcemanager_container_renders_the_capacity_scheduler_of_the_compose_file(tmp_path, capsys):
    from dsbra.cluster.docker import compose_document

    doc = compose_document(scheduler="capacity", node_locality_delay=3)
    args = doc["services"]["resourcemanager"]["command"][1:]
    assert doc["services"]["w1"]["command"][2:] == args  # every host renders the same spec
    container.main(["resourcemanager", *args, "--state-dir", str(tmp_path), "--dry-run"])
    assert capsys.readouterr().out.split()[0] == "resourcemanager"

    def conf(name):
        root = ET.parse(tmp_path / "conf" / "master" / name).getroot()
        return {p.findtext("name"): p.findtext("value") for p in root}

    assert conf("yarn-site.xml")["yarn.resourcemanager.scheduler.class"].endswith("CapacityScheduler")
    assert conf("capacity-scheduler.xml")["yarn.scheduler.capacity.node-locality-delay"] == "3"
    with pytest.raises(SystemExit):  # a bad value is the parser's one-line error
        container.main(["resourcemanager", "--scheduler", "capacity", "--node-locality-delay", "-5",
                        "--state-dir", str(tmp_path), "--dry-run"])
    # the daemon beside it cannot read that delay from the RM's /conf: the compose file gives it
    assert doc["services"]["dsbra"]["environment"]["DSBRA_CLUSTER__NODE_LOCALITY_DELAY"] == "3"


def test_the_namenode_container_runs_the_placement_plugin_reading_the_sidecars_heat(tmp_path, capsys):
    """`dsbra docker compose --placement heat`: the plugin's jar on the NameNode's classpath (the
    image's DSBRA_PLACEMENT_DIR) and its heat read from the sidecar's /heat in their namespace."""
    from dsbra.cluster.docker import DAEMON_HTTP_PORT, compose_document
    from dsbra.cluster.paths import placement_jar

    doc = compose_document(placement="heat")
    args = doc["services"]["namenode"]["command"][1:]
    assert doc["services"]["dsbra"]["environment"]["DSBRA_PLACEMENT__LEAD_S"] == "3"
    container.main(["namenode", *args, "--state-dir", str(tmp_path), "--dry-run"])
    namenode = capsys.readouterr().out.splitlines()[-1]
    assert str(placement_jar("3.4.2")) in namenode
    hdfs = ET.parse(tmp_path / "conf" / "master" / "hdfs-site.xml").getroot()
    values = {p.findtext("name"): p.findtext("value") for p in hdfs}
    assert values["dfs.block.replicator.classname"].endswith("BlockPlacementPolicyDsbraHeat")
    assert values["dsbra.placement.heat.uri"] == f"http://127.0.0.1:{DAEMON_HTTP_PORT}/heat"


def test_without_the_sidecar_the_plugin_reads_the_state_volumes_heat_file(tmp_path, capsys):
    from dsbra.cluster.docker import compose_document

    args = compose_document(placement="heat", daemon=False)["services"]["namenode"]["command"][1:]
    container.main(["namenode", *args, "--state-dir", str(tmp_path), "--dry-run"])
    hdfs = ET.parse(tmp_path / "conf" / "master" / "hdfs-site.xml").getroot()
    values = {p.findtext("name"): p.findtext("value") for p in hdfs}
    assert values["dsbra.placement.heat.uri"] == (tmp_path / "placement" / "heat.json").as_uri()
