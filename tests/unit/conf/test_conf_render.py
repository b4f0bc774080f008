"""`dsbra conf render`: values validated with one-line errors naming the key, and rendered through
the same templates and `render_host` as `dsbra cluster up`, into XML that parses."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from dsbra.cluster.config import HostPaths, render_host
from dsbra.cluster.spec import ClusterSpec
from dsbra.conf.render import RENDERED, render_values
from dsbra.conf.values import parse_values
from dsbra.errors import ConfigError

FULL = """
cluster: {workers: 4, racks: 2}
hdfs: {replication: 2, block_size: 16m}
yarn:
  heartbeat: 500ms
  locality_delay_node: 3s
  locality_delay_rack: 1s
  preemption: true
queues:
  - {name: default, weight: 1}
  - name: analytics
    weight: 3
    policy: drf
    min_resources: {memory: 1g, vcores: 1}
    max_resources: {memory: 4g, vcores: 4}
    fair_share_preemption_timeout: 30s
    min_share_preemption_timeout: 1m
    fair_share_preemption_threshold: 0.8
    queues:
      - {name: adhoc, weight: 1, max_running_apps: 5}
      - {name: batch, weight: 2, policy: fifo}
placement:
  - {rule: specified, create: false}
  - {rule: default, queue: analytics.batch}
render: {conf_dir: /etc/hadoop/conf, data_dir: /data, lib_dir: /opt/lib, java_home: /jvm}
"""


def props(text: str) -> dict[str, str]:
    return {p.findtext("name"): p.findtext("value") for p in ET.fromstring(text).findall("property")}


def test_full_values_render_to_xml_that_parses():
    files = render_values(parse_values(yaml.safe_load(FULL)))
    assert set(files) == set(RENDERED)
    for name, text in files.items():
        if name.endswith(".xml"):
            ET.fromstring(text)
    alloc = ET.fromstring(files["fair-scheduler.xml"])
    analytics = alloc.find("queue[@name='analytics']")
    assert analytics.findtext("weight") == "3.0" and analytics.findtext("schedulingPolicy") == "drf"
    assert analytics.findtext("minResources") == "1024 mb,1 vcores"
    assert analytics.findtext("maxResources") == "4096 mb,4 vcores"
    assert analytics.findtext("fairSharePreemptionTimeout") == "30"
    assert analytics.findtext("minSharePreemptionTimeout") == "60"
    assert analytics.findtext("fairSharePreemptionThreshold") == "0.8"
    assert analytics.find("queue[@name='adhoc']").findtext("maxRunningApps") == "5"
    assert analytics.find("queue[@name='batch']").findtext("schedulingPolicy") == "fifo"
    rules = [r.attrib for r in alloc.find("queuePlacementPolicy")]
    assert rules == [{"name": "specified", "create": "false"}, {"name": "default", "queue": "analytics.batch"}]
    yarn = props(files["yarn-site.xml"])
    assert yarn["yarn.resourcemanager.nodemanagers.heartbeat-interval-ms"] == "500"
    assert yarn["yarn.scheduler.fair.continuous-scheduling-enabled"] == "true"
    assert yarn["yarn.scheduler.fair.locality-delay-node-ms"] == "3000"
    assert yarn["yarn.scheduler.fair.locality-delay-rack-ms"] == "1000"
    assert yarn["yarn.scheduler.fair.preemption"] == "true"
    assert yarn["yarn.scheduler.fair.allocation.file"] == "/etc/hadoop/conf/fair-scheduler.xml"
    hdfs = props(files["hdfs-site.xml"])
    assert hdfs["dfs.replication"] == "2" and hdfs["dfs.blocksize"] == str(16 * 1024 * 1024)
    assert props(files["mapred-site.xml"])["mapreduce.map.env"] == "JAVA_HOME=/jvm"
    assert len(files["topology.table"].split("\n")) - 1 == 4


def test_count_based_thresholds():
    files = render_values(parse_values({"yarn": {"locality_threshold_node": 0.25, "locality_threshold_rack": 0.5}}))
    yarn = props(files["yarn-site.xml"])
    assert yarn["yarn.scheduler.fair.locality.threshold.node"] == "0.25"
    assert yarn["yarn.scheduler.fair.locality.threshold.rack"] == "0.5"
    assert "yarn.scheduler.fair.continuous-scheduling-enabled" not in yarn


def test_the_capacity_scheduler_from_values():
    files = render_values(parse_values({"yarn": {"scheduler": "capacity", "node_locality_delay": 8,
                                                 "rack_locality_additional_delay": 2}}))
    assert props(files["yarn-site.xml"])["yarn.resourcemanager.scheduler.class"].endswith("CapacityScheduler")
    cs = props(files["capacity-scheduler.xml"])
    assert cs["yarn.scheduler.capacity.node-locality-delay"] == "8"
    assert cs["yarn.scheduler.capacity.rack-locality-additional-delay"] == "2"


def test_empty_values_render_what_cluster_up_renders():
    """The same templates and code: an empty values file gives `cluster up`'s master files."""
    values = parse_values({})
    ours = render_values(values)
    theirs = render_host(ClusterSpec(), "master", values.paths, values.java_home)
    assert all(ours[name] == theirs[name] for name in RENDERED)


def test_spec_fields_only_what_the_file_sets():
    assert parse_values({"queues": [{"name": "a"}]}).spec_fields.keys() == {"queues"}


@pytest.mark.parametrize("doc, message", [
    ({"yarnn": {}}, "values.yarnn: unknown key"),
    ({"yarn": {"heartbeat_ms": 5}}, "yarn.heartbeat_ms: unknown key"),
    ({"queues": [{"name": "a", "wieght": 2}]}, "queues[0].wieght: unknown key"),
    ({"yarn": {"heartbeat": 1000}}, "yarn.heartbeat: not a duration"),
    ({"yarn": {"heartbeat": "1 sec"}}, "yarn.heartbeat: not a duration"),
    ({"hdfs": {"block_size": "8q"}}, "hdfs.block_size: not a size"),
    ({"queues": [{"name": "a", "min_resources": {"memory": "1x", "vcores": 1}}]},
     "queues[0].min_resources.memory: not a size"),
    ({"queues": [{"name": "a", "weight": 0}]}, "queues[0].weight: must be > 0"),
    ({"queues": [{"name": "a", "weight": -2}]}, "queues[0].weight: must be > 0"),
    ({"queues": [{"name": "a", "weight": "heavy"}]}, "queues[0].weight: must be float"),
    ({"queues": [{"name": "a"}, {"name": "a"}]}, "queues[1].name: queue 'a' is named twice"),
    ({"queues": [{"name": "a", "queues": [{"name": "a"}]}]}, "queues[0].queues[0].name: queue 'a' is named twice"),
    ({"queues": [{"name": "a", "policy": "lifo"}]}, "queues[0].policy: must be one of"),
    ({"queues": [{"name": "a", "policy": "fifo", "queues": [{"name": "b"}]}]}, "queues[0].policy: fifo is for leaf"),
    ({"queues": [{"name": "a"}], "placement": [{"rule": "default", "queue": "b"}]},
     "placement[0].queue: 'b' names no leaf queue"),
    ({"placement": ["random"]}, "placement[0]: a rule is one of"),
    ({"yarn": {"locality_delay_node": "3s"}}, "yarn.locality_delay_node: locality_delay_node and locality_delay_rack go together"),
    ({"yarn": {"locality_threshold_node": 2}}, "yarn.locality_threshold_node: must be -1 (off) or within 0..1"),
    ({"hdfs": {"replication": 5}}, "values: --replication must be between 1"),
    ({"yarn": {"scheduler": "fifo"}}, "values: --scheduler must be one of fair, capacity"),
    ({"yarn": {"node_locality_delay": "40"}}, "yarn.node_locality_delay: must be a count"),
    ({"yarn": {"rack_locality_additional_delay": -2}}, "yarn.rack_locality_additional_delay: must be a count"),
    ("just text", "values: must be a mapping"),
])
def test_bad_values_are_one_line_errors_naming_the_key(doc, message):
    with pytest.raises(ConfigError) as failure:
        parse_values(doc)
    assert str(failure.value).startswith(message)
    assert "\n" not in str(failure.value)


def test_cli_renders_files_and_refuses_bad_values_without_writing(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(FULL)
    bad.write_text("queues:\n  - {name: a, weight: 0}\n")
    run = [sys.executable, "-m", "dsbra", "conf", "render", "--values"]
    proc = subprocess.run([*run, str(good), "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(RENDERED)
    proc = subprocess.run([*run, str(bad), "--out", str(tmp_path / "no")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["dsbra: error: queues[0].weight: must be > 0, got 0.0"]
    assert not (tmp_path / "no").exists()


def test_cluster_up_refuses_bad_values_in_one_line_before_starting_anything(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("queues:\n  - {name: a}\n  - {name: a}\n")
    proc = subprocess.run([sys.executable, "-m", "dsbra", "cluster", "up", "--state-dir", str(tmp_path / "s"),
                           "--values", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["dsbra: error: queues[1].name: queue 'a' is named twice"]
    assert not (tmp_path / "s").exists()
