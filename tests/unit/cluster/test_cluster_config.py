"""Config rendering from conf-templates/: every file parses and carries the values that make the
cluster what it claims (distinct worker identities, racks, Fair Scheduler, heaps, classpaths)."""

from __future__ import annotations

import dataclasses
import getpass
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dsbra.cluster import cluster as cl
from dsbra.cluster.confdir import CONFIG_FILES, HostPaths, allocation_file, render_host
from dsbra.cluster.daemons import MAIN_CLASSES, cluster_daemons, java_command
from dsbra.cluster.install import HadoopInstall
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ClusterError, InputError

PATHS = HostPaths(conf="/state/conf/x", data="/state/data/x", tmp="/state/data/x/tmp", lib="/jars/lib")


def props(xml_text: str) -> dict[str, str]:
    root = ET.fromstring(xml_text)
    assert root.tag == "configuration"
    return {p.findtext("name"): p.findtext("value") for p in root.findall("property")}


def render(spec=None, role="master", worker_index=None):
    spec = spec or ClusterSpec()
    worker = spec.worker_list[worker_index] if worker_index is not None else None
    return render_host(spec, "worker" if worker else role, PATHS, "/usr/lib/jvm/java-17", worker)


def test_all_files_render_and_xml_parses():
    files = render()
    assert set(files) == set(CONFIG_FILES)
    for name, text in files.items():
        if name.endswith(".xml"):
            ET.fromstring(text)


def test_worker_identity_is_its_address_for_hdfs_and_yarn():
    spec = ClusterSpec()
    files = render(spec, worker_index=2)
    hdfs, yarn = props(files["hdfs-site.xml"]), props(files["yarn-site.xml"])
    assert hdfs["dfs.datanode.hostname"] == yarn["yarn.nodemanager.hostname"] == "10.77.0.13"
    assert hdfs["dfs.datanode.address"] == "10.77.0.13:9866"
    assert yarn["yarn.nodemanager.address"] == "10.77.0.13:8041"
    assert hdfs["dfs.datanode.data.dir"] == "/state/data/x/datanode"
    assert yarn["yarn.nodemanager.local-dirs"] == "/state/data/x/nm-local"


def test_master_conf_has_no_worker_identity():
    files = render()
    assert "dfs.datanode.hostname" not in props(files["hdfs-site.xml"])
    assert "yarn.nodemanager.hostname" not in props(files["yarn-site.xml"])


def test_topology_table_maps_each_worker_address_to_its_rack():
    spec = ClusterSpec(workers=5, racks=2, replication=3)
    table = render(spec)["topology.table"]
    rows = dict(line.split() for line in table.splitlines())
    assert rows == {w.host: w.rack for w in spec.worker_list}
    core = props(render(spec)["core-site.xml"])
    assert core["net.topology.node.switch.mapping.impl"] == "org.apache.hadoop.net.TableMapping"
    assert core["net.topology.table.file.name"] == "/state/conf/x/topology.table"


@pytest.mark.parametrize("node, rack", [(0.5, 0.25), (1.0, 1.0), (-1, -1)])
def test_fair_scheduler_and_locality_delay(node, rack):
    yarn = props(render(ClusterSpec(locality_delay_node=node, locality_delay_rack=rack))["yarn-site.xml"])
    assert yarn["yarn.resourcemanager.scheduler.class"].endswith(".fair.FairScheduler")
    assert float(yarn["yarn.scheduler.fair.locality.threshold.node"]) == node
    assert float(yarn["yarn.scheduler.fair.locality.threshold.rack"]) == rack
    assert yarn["yarn.scheduler.fair.allocation.file"] == "/state/conf/x/fair-scheduler.xml"


def test_time_based_locality_delay_turns_on_continuous_scheduling():
    count_based = props(render(ClusterSpec())["yarn-site.xml"])
    assert "yarn.scheduler.fair.continuous-scheduling-enabled" not in count_based
    yarn = props(render(ClusterSpec(continuous_scheduling=True, locality_delay_node_ms=8000,
                                      locality_delay_rack_ms=2000))["yarn-site.xml"])
    assert yarn["yarn.scheduler.fair.continuous-scheduling-enabled"] == "true"
    assert yarn["yarn.scheduler.fair.locality-delay-node-ms"] == "8000"
    assert yarn["yarn.scheduler.fair.locality-delay-rack-ms"] == "2000"


@pytest.mark.parametrize("node, rack", [(40, -1), (2, 3), (-1, -1)])
def test_capacity_scheduler_with_its_queues_and_locality_delays(node, rack):
    spec = ClusterSpec(scheduler="capacity", node_locality_delay=node,
                       rack_locality_additional_delay=rack)
    files = render(spec)
    yarn = props(files["yarn-site.xml"])
    assert yarn["yarn.resourcemanager.scheduler.class"].endswith(".capacity.CapacityScheduler")
    assert not any(k.startswith("yarn.scheduler.fair.") for k in yarn)
    # containers at their asked sizes: the Capacity Scheduler normalises to the minimum allocation
    assert int(yarn["yarn.scheduler.minimum-allocation-mb"]) == spec.memory_increment_mb
    cs = props(files["capacity-scheduler.xml"])
    assert cs["yarn.scheduler.capacity.root.queues"] == "default,benchmark"
    assert sum(float(cs[f"yarn.scheduler.capacity.root.{q}.capacity"])
               for q in ("default", "benchmark")) == 100
    # one user (every job here) may use its queue's maximum, not only its capacity
    assert float(cs["yarn.scheduler.capacity.root.benchmark.user-limit-factor"]) * 50 >= 100
    assert float(cs["yarn.scheduler.capacity.root.benchmark.maximum-am-resource-percent"]) == 0.5
    assert int(cs["yarn.scheduler.capacity.node-locality-delay"]) == node
    assert int(cs["yarn.scheduler.capacity.rack-locality-additional-delay"]) == rack


def test_allocation_file_declares_the_queues():
    root = ET.fromstring(render()["fair-scheduler.xml"])
    assert [q.get("name") for q in root.findall("queue")] == ["default", "benchmark"]
    assert [r.get("name") for r in root.find("queuePlacementPolicy")] == ["specified", "default"]


def test_the_allocation_file_alone_is_the_hosts_and_carries_a_changed_am_share():
    spec = ClusterSpec(queues=[{"name": "benchmark", "weight": 1.0, "policy": "fair", "max_am_share": 0.75}])
    assert allocation_file(ClusterSpec()) == render()["fair-scheduler.xml"]
    assert allocation_file(spec) == render(spec)["fair-scheduler.xml"]
    assert ET.fromstring(allocation_file(spec)).find("queue").findtext("maxAMShare") == "0.75"


def test_hdfs_sizes_and_fast_redundancy():
    hdfs = props(render(ClusterSpec(replication=2, block_size=4 * 1024 * 1024))["hdfs-site.xml"])
    assert hdfs["dfs.replication"] == "2"
    assert hdfs["dfs.blocksize"] == str(4 * 1024 * 1024)
    assert hdfs["dfs.namenode.safemode.extension"] == "0"
    assert hdfs["dfs.namenode.redundancy.interval.seconds"] == "1"


def test_containers_get_small_heaps_and_java17_flags():
    mapred = props(render()["mapred-site.xml"])
    assert mapred["mapreduce.map.memory.mb"] == "512"
    assert mapred["mapreduce.map.java.opts"].startswith("-Xmx307m ")
    for key in ("yarn.app.mapreduce.am.command-opts", "mapreduce.map.java.opts", "mapreduce.reduce.java.opts"):
        assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in mapred[key]
    assert mapred["mapreduce.application.classpath"] == "/jars/lib/*"
    assert mapred["mapreduce.job.ubertask.enable"] == "false"
    assert mapred["yarn.app.mapreduce.am.env"] == "JAVA_HOME=/usr/lib/jvm/java-17"


def test_nodemanager_resources_and_vmem_check_off():
    yarn = props(render(ClusterSpec(nm_memory_mb=3072))["yarn-site.xml"])
    assert yarn["yarn.nodemanager.resource.memory-mb"] == "3072"
    assert yarn["yarn.nodemanager.vmem-check-enabled"] == "false"
    assert yarn["yarn.application.classpath"] == "/state/conf/x,/jars/lib/*"


def test_containers_are_granted_at_their_configured_sizes():
    """The scheduler's increment divides every container size, so a 512 MB map takes 512 MB
    (at Hadoop's 1024 MB increment it took 1024) and a NodeManager is filled exactly."""
    spec = ClusterSpec()
    files = render(spec)
    yarn, mapred = props(files["yarn-site.xml"]), props(files["mapred-site.xml"])
    increment = int(yarn["yarn.resource-types.memory-mb.increment-allocation"])
    assert int(yarn["yarn.scheduler.minimum-allocation-mb"]) == increment
    sizes = [int(mapred[k]) for k in ("mapreduce.map.memory.mb", "mapreduce.reduce.memory.mb",
                                      "yarn.app.mapreduce.am.resource.mb")]
    assert all(size % increment == 0 for size in sizes)
    assert int(yarn["yarn.nodemanager.resource.memory-mb"]) % sizes[0] == 0


def test_reducers_wait_for_all_maps_by_default():
    """Early reducers of concurrent jobs can hold every container their maps need (issue 27)."""
    mapred = props(render()["mapred-site.xml"])
    assert mapred["mapreduce.job.reduce.slowstart.completedmaps"] == "1.0"


def test_port_offset_reaches_every_master_address():
    spec = ClusterSpec(port_offset=100)
    files = render(spec)
    hdfs, yarn, mapred = (props(files[n]) for n in ("hdfs-site.xml", "yarn-site.xml", "mapred-site.xml"))
    assert hdfs["dfs.namenode.rpc-address"] == "10.77.0.1:8120"
    assert yarn["yarn.resourcemanager.webapp.address"] == "10.77.0.1:8188"
    assert mapred["mapreduce.jobhistory.webapp.address"] == "10.77.0.1:19988"
    assert props(files["core-site.xml"])["fs.defaultFS"] == "hdfs://10.77.0.1:8120"


def test_daemon_logs_go_to_a_file_and_the_client_logs_to_stderr():
    assert "log4j.rootLogger=INFO,file" in render()["log4j.properties"]
    assert "log4j.rootLogger=INFO,console" in render(role="client")["log4j.properties"]


def test_heat_placement_puts_dsbras_policy_on_the_namenode_reading_the_heat_file():
    paths = dataclasses.replace(PATHS, heat_uri="file:///state/placement/heat.json")
    heat = props(render_host(ClusterSpec(block_placement="heat"), "master", paths,
                             "/usr/lib/jvm/java-17")["hdfs-site.xml"])
    assert heat["dfs.block.replicator.classname"] == (
        "org.apache.hadoop.hdfs.server.blockmanagement.BlockPlacementPolicyDsbraHeat")
    assert heat["dsbra.placement.heat.uri"] == "file:///state/placement/heat.json"
    assert heat["dsbra.placement.heat.refresh.ms"] == "1000"
    default = props(render()["hdfs-site.xml"])
    assert not any(k.startswith("dsbra.") or k == "dfs.block.replicator.classname"
                   for k in default)


def test_heat_placement_adds_the_plugin_jar_to_the_namenode_only(tmp_path):
    from dsbra.cluster.paths import placement_jar

    spec = ClusterSpec(block_placement="heat", workers=2, replication=2)
    for d in cluster_daemons(spec):
        cmd = java_command(spec, StateLayout(tmp_path), HadoopInstall(tmp_path / "h"),
                           tmp_path / "java", d)
        classpath = cmd[cmd.index("-cp") + 1]
        assert (str(placement_jar(spec.hadoop_version)) in classpath) == (d.kind == "namenode")


def test_an_unknown_placement_is_refused_naming_the_flag():
    with pytest.raises(InputError, match=r"--placement must be one of default, heat, got 'hot'"):
        ClusterSpec(block_placement="hot")


def test_ha_two_namenodes_on_a_quorum_journal_each_knowing_its_id():
    spec = ClusterSpec(ha=True, workers=4)
    paths = dataclasses.replace(PATHS, rm_store="/state/data/rmstore")
    first, second, client = (props(render_host(spec, role, paths, "/j", None, host)["hdfs-site.xml"])
                             for role, host in (("master", "master"), ("master", "master2"),
                                                ("client", "client")))
    jn = spec.port("journalnode_rpc")
    assert first["dfs.namenode.shared.edits.dir"] == (
        f"qjournal://10.77.0.11:{jn};10.77.0.12:{jn};10.77.0.13:{jn}/dsbra")
    assert (first["dfs.ha.namenode.id"], second["dfs.ha.namenode.id"]) == ("nn1", "nn2")
    assert "dfs.ha.namenode.id" not in client and "dfs.namenode.rpc-address" not in client
    assert client["dfs.namenode.rpc-address.dsbra.nn2"] == f"10.77.0.1:{spec.port('namenode2_rpc')}"
    core = props(render_host(spec, "client", paths, "/j")["core-site.xml"])
    assert core["fs.defaultFS"] == "hdfs://dsbra"


def test_ha_two_resourcemanagers_sharing_a_state_store():
    spec = ClusterSpec(ha=True, workers=2, replication=2, ha_failover="manual")
    paths = dataclasses.replace(PATHS, rm_store="/state/data/rmstore")
    second = props(render_host(spec, "master", paths, "/j", None, "master2")["yarn-site.xml"])
    worker = props(render_host(spec, "worker", paths, "/j", spec.worker_list[0])["yarn-site.xml"])
    assert second["yarn.resourcemanager.ha.id"] == "rm2" and "yarn.resourcemanager.ha.id" not in worker
    assert worker["yarn.resourcemanager.ha.rm-ids"] == "rm1,rm2"
    assert worker["yarn.resourcemanager.webapp.address.rm2"] == f"10.77.0.1:{spec.port('rm2_http')}"
    assert second["yarn.resourcemanager.fs.state-store.uri"] == "file:///state/data/rmstore"
    assert second["yarn.resourcemanager.recovery.enabled"] == "true"
    assert spec.journal_nodes == spec.worker_list[:1]  # fewer than three workers: one JournalNode


def test_ha_daemons_and_ports():
    spec = ClusterSpec(ha=True, workers=4)
    names = {d.name: d for d in cluster_daemons(spec)}
    assert names["namenode2"].host == names["resourcemanager2"].host == "master2"
    assert {n for n in names if n.startswith("journalnode")} == {"journalnode-w1", "journalnode-w2",
                                                                 "journalnode-w3"}
    assert "namenode2_http" in spec.master_ports and "namenode2_http" not in ClusterSpec().master_ports
    assert list(spec.namenode_urls) == ["nn1", "nn2"] and list(ClusterSpec().rm_urls) == ["rm1"]
    assert not any(d.host == "master2" or d.kind == "journalnode" for d in cluster_daemons(ClusterSpec()))


def _ha_site(spec: ClusterSpec, host: str) -> dict[str, dict[str, str]]:
    """Every -site.xml of ``host`` (master, master2, client, or a worker name) as properties."""
    role, worker = ("worker", spec.worker_list[0]) if host.startswith("w") else (
        "client" if host == "client" else "master", None)
    paths = dataclasses.replace(PATHS, rm_store="/state/data/rmstore")
    files = render_host(spec, role, paths, "/j", worker, host)
    return {name: props(text) for name, text in files.items() if name.endswith("-site.xml")}


def test_ha_automatic_failover_zookeeper_for_the_zkfcs_and_the_rms_elector():
    spec = ClusterSpec(ha=True, workers=4, port_offset=100)
    zookeeper = "10.77.0.1:2281"
    for host in ("master", "master2", "client", "w1"):
        site = _ha_site(spec, host)
        assert site["core-site.xml"]["ha.zookeeper.quorum"] == zookeeper, host
        assert site["core-site.xml"]["hadoop.zk.address"] == zookeeper, host
        assert site["hdfs-site.xml"]["dfs.ha.automatic-failover.enabled"] == "true", host
        # both ZKFCs on the master's address: a port per NameNode id, as their RPC addresses
        assert (site["hdfs-site.xml"]["dfs.ha.zkfc.port.dsbra.nn1"],
                site["hdfs-site.xml"]["dfs.ha.zkfc.port.dsbra.nn2"]) == ("8119", "8219"), host
        yarn = site["yarn-site.xml"]
        assert (yarn["yarn.resourcemanager.ha.automatic-failover.enabled"],
                yarn["yarn.resourcemanager.ha.automatic-failover.embedded"]) == ("true", "true"), host
        assert yarn["yarn.resourcemanager.store.class"].endswith(".ZKRMStateStore"), host
        assert "yarn.resourcemanager.fs.state-store.uri" not in yarn, host
    assert spec.zookeeper == zookeeper
    ports = [spec.port(name) for name in spec.master_ports]
    assert {"zookeeper", "zkfc_rpc", "zkfc2_rpc"} <= set(spec.master_ports) and len(set(ports)) == len(ports)


def test_ha_automatic_failover_zookeeper_runs_standalone_on_the_master():
    spec = ClusterSpec(ha=True, workers=4)
    zoo = render_host(spec, "master", PATHS, "/j", None, "master")["zoo.cfg"]
    settings = dict(line.split("=", 1) for line in zoo.splitlines() if line and not line.startswith("#"))
    assert settings == {"tickTime": "2000", "dataDir": "/state/data/x/zookeeper", "clientPort": "2181",
                        "clientPortAddress": "10.77.0.1", "admin.enableServer": "false"}
    for role, host in (("master", "master2"), ("client", "client")):
        assert "zoo.cfg" not in render_host(spec, role, PATHS, "/j", None, host)
    daemons = {d.name: d for d in cluster_daemons(spec)}
    assert [(daemons[n].host, daemons[n].kind) for n in ("zookeeper", "zkfc", "zkfc2")] == [
        ("master", "zookeeper"), ("master", "zkfc"), ("master2", "zkfc")]
    cmd = java_command(spec, StateLayout(Path("/state")), HadoopInstall(Path("/h")), Path("/java"),
                       daemons["zookeeper"])
    assert cmd[-2:] == [MAIN_CLASSES["zookeeper"], "/state/conf/master/zoo.cfg"]


def test_ha_manual_failover_runs_no_zookeeper():
    spec = ClusterSpec(ha=True, workers=4, ha_failover="manual")
    for host in ("master", "master2", "client", "w1"):
        site = _ha_site(spec, host)
        assert not {"ha.zookeeper.quorum", "hadoop.zk.address"} & set(site["core-site.xml"]), host
        assert site["hdfs-site.xml"]["dfs.ha.automatic-failover.enabled"] == "false", host
        assert "dfs.ha.zkfc.port.dsbra.nn1" not in site["hdfs-site.xml"], host
        yarn = site["yarn-site.xml"]
        assert yarn["yarn.resourcemanager.ha.automatic-failover.enabled"] == "false", host
        assert yarn["yarn.resourcemanager.store.class"].endswith(".FileSystemRMStateStore"), host
        assert yarn["yarn.resourcemanager.fs.state-store.uri"] == "file:///state/data/rmstore", host
    assert "zoo.cfg" not in render_host(spec, "master", PATHS, "/j", None, "master")
    assert not {"zookeeper", "zkfc", "zkfc2"} & {d.name for d in cluster_daemons(spec)}
    assert "zookeeper" not in spec.master_ports and "namenode2_rpc" in spec.master_ports
    assert not ClusterSpec().automatic_failover  # no --ha: nothing to fail over


def test_an_unknown_ha_failover_is_refused_naming_the_flag():
    with pytest.raises(InputError, match=r"--ha-failover must be one of auto, manual, got 'zk'"):
        ClusterSpec(ha=True, ha_failover="zk")


@pytest.mark.parametrize("service, args", [("hdfs", ["-transitionToActive", "nn2"]),
                                           ("yarn", ["-transitionToStandby", "--forcemanual", "rm1"])])
def test_automatic_failover_refuses_manual_transitions_in_one_line(tmp_path, service, args):
    # refused before any tool runs: no cluster, no state
    with pytest.raises(ClusterError, match=rf"automatic failover is on, .* {args[0]} is refused; .*"
                                           r"--ha-failover manual$"):
        cl.ha_admin(ClusterSpec(ha=True), StateLayout(tmp_path), service, args)


SECURE_PATHS = dataclasses.replace(PATHS, security="/state/security", keytab="/state/security/keytabs/x.keytab")


def _secure(role="master", worker_index=None) -> dict[str, dict[str, str]]:
    spec = ClusterSpec(kerberos=True, tls=True)
    worker = spec.worker_list[worker_index] if worker_index is not None else None
    files = render_host(spec, "worker" if worker else role, SECURE_PATHS, "/usr/lib/jvm/java-17", worker,
                        store_password="pw")
    return {name: props(text) for name, text in files.items() if name.endswith("-site.xml") or name.startswith("ssl-")}


def test_kerberos_names_every_principal_by_its_hosts_address():
    master = _secure()
    worker = _secure(worker_index=0)
    assert master["core-site.xml"]["hadoop.security.authentication"] == "kerberos"
    assert master["hdfs-site.xml"]["dfs.namenode.kerberos.principal"] == "nn/10.77.0.1@DSBRA.CLUSTER"
    assert master["yarn-site.xml"]["yarn.resourcemanager.principal"] == "rm/10.77.0.1@DSBRA.CLUSTER"
    assert master["mapred-site.xml"]["mapreduce.jobhistory.principal"] == "jhs/10.77.0.1@DSBRA.CLUSTER"
    assert worker["hdfs-site.xml"]["dfs.datanode.kerberos.principal"] == "dn/10.77.0.11@DSBRA.CLUSTER"
    assert worker["yarn-site.xml"]["yarn.nodemanager.principal"] == "nm/10.77.0.11@DSBRA.CLUSTER"
    assert worker["core-site.xml"]["hadoop.http.authentication.kerberos.principal"] == "HTTP/10.77.0.11@DSBRA.CLUSTER"
    assert worker["hdfs-site.xml"]["dfs.data.transfer.protection"] == "authentication"
    assert "-Djava.security.krb5.conf=/state/security/krb5.conf" in master["mapred-site.xml"]["mapreduce.map.java.opts"]


def test_tls_makes_every_web_endpoint_https_only_on_the_same_port():
    master, worker = _secure(), _secure(worker_index=0)
    assert master["hdfs-site.xml"]["dfs.http.policy"] == "HTTPS_ONLY"
    assert master["hdfs-site.xml"]["dfs.namenode.https-address"] == master["hdfs-site.xml"]["dfs.namenode.http-address"]
    assert master["yarn-site.xml"]["yarn.http.policy"] == "HTTPS_ONLY"
    assert master["mapred-site.xml"]["mapreduce.jobhistory.http.policy"] == "HTTPS_ONLY"
    assert worker["hdfs-site.xml"]["dfs.datanode.https.address"] == "10.77.0.11:9864"
    assert master["ssl-server.xml"]["ssl.server.keystore.location"] == "/state/security/tls/keystore.p12"
    assert master["ssl-client.xml"]["ssl.client.truststore.password"] == "pw"
    assert ClusterSpec(tls=True).urls["webhdfs"].startswith("https://")


def test_the_plain_cluster_has_no_security_settings():
    files = render()
    assert "ssl-server.xml" not in files
    assert "hadoop.security.authentication" not in props(files["core-site.xml"])


def test_kerberos_without_tls_is_refused_with_the_reason():
    with pytest.raises(InputError, match="--kerberos needs --tls: .*HTTPS_ONLY"):
        ClusterSpec(kerberos=True)


def test_the_realm_maps_every_host_address_without_dns_and_each_host_has_its_keytab():
    from dsbra.cluster.security import host_principals, krb5_conf_text

    spec = ClusterSpec(workers=2, replication=2, port_offset=100, kerberos=True, tls=True)
    conf = krb5_conf_text(spec)
    for line in ("rdns = false", "dns_canonicalize_hostname = false", "kdc = 10.77.0.1:10188",
                 "10.77.0.1 = DSBRA.CLUSTER", "10.77.0.12 = DSBRA.CLUSTER"):
        assert line in conf
    keytabs = host_principals(spec)
    assert keytabs["master"] == [f"{s}/10.77.0.1@DSBRA.CLUSTER" for s in ("nn", "rm", "jhs", "HTTP")]
    assert keytabs["w2"] == [f"{s}/10.77.0.12@DSBRA.CLUSTER" for s in ("dn", "nm", "HTTP")]
    assert keytabs["dsbra"] == ["dsbra@DSBRA.CLUSTER"]


def _secure_ha_site(host: str) -> dict[str, dict[str, str]]:
    """_ha_site of an --ha --kerberos --tls cluster, with the secure paths."""
    spec = ClusterSpec(ha=True, workers=4, kerberos=True, tls=True)
    role, worker = ("worker", spec.worker_list[0]) if host.startswith("w") else (
        "client" if host == "client" else "master", None)
    paths = dataclasses.replace(SECURE_PATHS, rm_store="/state/data/rmstore")
    files = render_host(spec, role, paths, "/j", worker, host, store_password="pw")
    return {name: props(text) for name, text in files.items() if name.endswith("-site.xml")}


def test_secure_ha_names_the_journalnodes_principals_and_each_pairs_https_address():
    spec = ClusterSpec(ha=True, workers=4, kerberos=True, tls=True)
    master, second, worker = (_secure_ha_site(h) for h in ("master", "master2", "w1"))
    # a NameNode checks each JournalNode's principal by the address it talks to; a JournalNode
    # logs in as its own
    assert master["hdfs-site.xml"]["dfs.journalnode.kerberos.principal"] == "nn/_HOST@DSBRA.CLUSTER"
    assert worker["hdfs-site.xml"]["dfs.journalnode.kerberos.principal"] == "nn/10.77.0.11@DSBRA.CLUSTER"
    assert worker["hdfs-site.xml"]["dfs.journalnode.kerberos.internal.spnego.principal"] == (
        "HTTP/10.77.0.11@DSBRA.CLUSTER")
    assert worker["hdfs-site.xml"]["dfs.journalnode.https-address"] == (
        f"10.77.0.11:{spec.port('journalnode_http')}")
    for site in (master, second):  # both NameNodes on the master's address, as its principals
        hdfs = site["hdfs-site.xml"]
        assert hdfs["dfs.namenode.kerberos.principal"] == "nn/10.77.0.1@DSBRA.CLUSTER"
        assert hdfs["dfs.namenode.https-address.dsbra.nn2"] == f"10.77.0.1:{spec.port('namenode2_http')}"
        assert "dfs.namenode.https-address" not in hdfs
        yarn = site["yarn-site.xml"]
        assert yarn["yarn.resourcemanager.principal"] == "rm/10.77.0.1@DSBRA.CLUSTER"
        assert yarn["yarn.resourcemanager.webapp.https.address.rm2"] == f"10.77.0.1:{spec.port('rm2_http')}"
    # the cluster's client may ask a ZKFC to fail over (haadmin -failover)
    assert master["hdfs-site.xml"]["dfs.cluster.administrators"] == getpass.getuser()
    assert list(spec.namenode_urls.values()) == [f"https://10.77.0.1:{spec.port('namenode_http')}",
                                                 f"https://10.77.0.1:{spec.port('namenode2_http')}"]


def test_secure_ha_gives_the_journalnodes_workers_an_nn_principal_and_master2_the_masters_keytab(tmp_path):
    from dsbra.cluster.confdir import host_paths
    from dsbra.cluster.security import host_principals

    spec = ClusterSpec(ha=True, workers=4, kerberos=True, tls=True)
    keytabs = host_principals(spec)
    assert [p for p in keytabs["w3"] if p.startswith("nn/")] == ["nn/10.77.0.13@DSBRA.CLUSTER"]
    assert not [p for p in keytabs["w4"] if p.startswith("nn/")]  # three JournalNodes of four
    layout = StateLayout(tmp_path)
    assert host_paths(layout, "master2", tmp_path).keytab == host_paths(layout, "master", tmp_path).keytab


def test_shared_cache_runs_a_sharedcachemanager_every_host_and_the_client_know():
    spec = ClusterSpec(shared_cache=True, workers=4, port_offset=100)
    daemons = {d.name: d for d in cluster_daemons(spec)}
    assert daemons["sharedcachemanager"].host == "master" and daemons["sharedcachemanager"].netns is None
    assert MAIN_CLASSES["sharedcachemanager"].endswith(".sharedcachemanager.SharedCacheManager")
    assert "sharedcachemanager" not in {d.name for d in cluster_daemons(ClusterSpec())}
    assert {"scm_client", "scm_uploader", "scm_admin", "scm_http"} <= set(spec.master_ports)
    assert spec.urls["sharedcache"] == "http://10.77.0.1:8888"
    for host in ("master", "client", "w1"):
        yarn = _ha_site(spec, host)["yarn-site.xml"]
        assert yarn["yarn.sharedcache.enabled"] == "true"
        assert yarn["yarn.sharedcache.root-dir"] == "/sharedcache"
        assert yarn["yarn.sharedcache.client-server.address"] == "10.77.0.1:8145"
        assert yarn["yarn.sharedcache.uploader.server.address"] == "10.77.0.1:8146"
        # the NodeManagers upload at the cluster's widest replication, not past its workers
        assert yarn["yarn.sharedcache.nm.uploader.replication.factor"] == "4"
    assert not [k for k in props(render()["yarn-site.xml"]) if k.startswith("yarn.sharedcache.")]


@pytest.mark.parametrize("fields, named", [({"hadoop_version": "3.5.0"}, "Hadoop 3.4.2"),
                                           ({"tls": True}, "--kerberos/--tls")])
def test_shared_cache_where_it_cannot_run_is_refused_in_one_line(fields, named):
    with pytest.raises(InputError, match="--shared-cache") as err:
        ClusterSpec(shared_cache=True, **fields)
    assert named in str(err.value) and "\n" not in str(err.value)
