"""`dsbra conf render`: values validated with one-line errors naming the key, and rendered through
the same templates and `render_host` as `dsbra cluster up`, into XML that parses."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from dsbra.cluster.confdir import render_host
from dsbra.cluster.spec import ClusterSpec
from dsbra.conf.render import RENDERED, render_values
from dsbra.cluster.values import parse_values
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


CAPACITY = """
yarn:
  scheduler: capacity
  multiple_assignments: false
  max_container_assignments: -1
  max_offswitch_assignments: 3
  schedule_asynchronously: true
  multi_node_placement: true
capacity_queues:
  - {name: default, capacity: 30}
  - name: analytics
    capacity: 70
    maximum_capacity: 90
    state: STOPPED
    queues:
      - {name: adhoc, capacity: 33.3, user_limit_factor: -1, minimum_user_limit_percent: 50}
      - {name: batch, capacity: 66.7, maximum_capacity: 80, maximum_am_resource_percent: 0.25}
"""


def test_capacity_queues_render_nested_with_their_settings():
    values = parse_values(yaml.safe_load(CAPACITY))
    assert values.spec_fields.keys() == {"scheduler", "multiple_assignments", "max_container_assignments",
                                         "max_offswitch_assignments", "schedule_asynchronously",
                                         "multi_node_placement", "capacity_queues"}
    cs = props(render_values(values)["capacity-scheduler.xml"])
    key = "yarn.scheduler.capacity."
    assert cs[key + "root.queues"] == "default,analytics"
    assert cs[key + "root.analytics.queues"] == "adhoc,batch"
    assert float(cs[key + "root.analytics.capacity"]) == 70 and float(cs[key + "root.analytics.maximum-capacity"]) == 90
    assert float(cs[key + "root.analytics.adhoc.capacity"]) == 33.3
    assert float(cs[key + "root.analytics.adhoc.user-limit-factor"]) == -1
    assert float(cs[key + "root.analytics.adhoc.minimum-user-limit-percent"]) == 50
    assert float(cs[key + "root.analytics.batch.maximum-am-resource-percent"]) == 0.25
    # leaves left out take the bundled cluster's settings; children the STOPPED parent's state
    assert float(cs[key + "root.default.user-limit-factor"]) == 2.0
    assert float(cs[key + "root.default.maximum-capacity"]) == 100
    assert cs[key + "root.default.state"] == "RUNNING"
    assert cs[key + "root.analytics.batch.state"] == cs[key + "root.analytics.adhoc.state"] == "STOPPED"
    # leaf settings on leaves only
    assert key + "root.analytics.user-limit-factor" not in cs
    assert cs[key + "per-node-heartbeat.multiple-assignments-enabled"] == "false"
    assert cs[key + "per-node-heartbeat.maximum-container-assignments"] == "-1"
    assert cs[key + "per-node-heartbeat.maximum-offswitch-assignments"] == "3"
    assert cs[key + "schedule-asynchronously.enable"] == "true"
    assert cs[key + "multi-node-placement-enabled"] == "true"
    # multi-node placement needs a sorting policy every queue finds
    assert cs[key + "multi-node-sorting.policy"] == "resource-based"
    assert cs[key + "multi-node-sorting.policy.resource-based.class"].endswith(".ResourceUsageMultiNodeLookupPolicy")


def test_capacity_defaults_are_hadoops_assignment_settings():
    cs = props(render_values(parse_values({"yarn": {"scheduler": "capacity"}}))["capacity-scheduler.xml"])
    key = "yarn.scheduler.capacity."
    assert cs[key + "root.queues"] == "default,benchmark"
    assert (cs[key + "per-node-heartbeat.multiple-assignments-enabled"],
            cs[key + "per-node-heartbeat.maximum-container-assignments"],
            cs[key + "per-node-heartbeat.maximum-offswitch-assignments"],
            cs[key + "schedule-asynchronously.enable"], cs[key + "multi-node-placement-enabled"]) == \
        ("true", "100", "1", "false", "false")
    assert not any(k.startswith(key + "multi-node-sorting") for k in cs)


def test_empty_values_render_what_cluster_up_renders():
    """The same templates and code: an empty values file gives `cluster up`'s master files."""
    values = parse_values({})
    ours = render_values(values)
    theirs = render_host(ClusterSpec(), "master", values.paths, values.java_home)
    assert all(ours[name] == theirs[name] for name in RENDERED)


def test_spec_fields_only_what_the_file_sets():
    assert parse_values({"queues": [{"name": "a"}]}).spec_fields.keys() == {"queues"}


CS = {"yarn": {"scheduler": "capacity"}}


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
    ({"yarn": {"scheduler": "lifo"}}, "values: --scheduler must be one of fair, capacity, fifo"),
    ({"yarn": {"node_locality_delay": "40"}}, "yarn.node_locality_delay: must be a count"),
    ({"yarn": {"rack_locality_additional_delay": -2}}, "yarn.rack_locality_additional_delay: must be a count"),
    ("just text", "values: must be a mapping"),
    # the Capacity Scheduler's queues and settings
    ({"capacity_queues": [{"name": "a", "capacity": 100}]},
     "capacity_queues: the Capacity Scheduler's queues, but yarn.scheduler is fair"),
    ({"yarn": {"scheduler": "capacity"}, "queues": [{"name": "a"}]},
     "queues: the Fair Scheduler's, but yarn.scheduler is capacity"),
    ({"yarn": {"scheduler": "capacity"}, "placement": ["specified"]},
     "placement: the Fair Scheduler's, but yarn.scheduler is capacity"),
    (CS | {"capacity_queues": []}, "capacity_queues: must be a non-empty list of queues"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 60}, {"name": "b", "capacity": 30}]},
     "capacity_queues: the capacities of sibling queues must sum to 100 (percent of their parent's), got 90"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 50}, {"name": "b", "capacity": 50, "queues": [
        {"name": "c", "capacity": 50}, {"name": "d", "capacity": 40}]}]},
     "capacity_queues[1].queues: the capacities of sibling queues must sum to 100"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100}, {"name": "a", "capacity": 0}]},
     "capacity_queues[1].name: queue 'a' is named twice"),
    (CS | {"capacity_queues": [{"name": "a.b", "capacity": 100}]}, "capacity_queues[0].name: a queue needs a name"),
    (CS | {"capacity_queues": [{"name": "a"}]}, "capacity_queues[0].capacity: a queue needs a capacity"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": "half"}]}, "capacity_queues[0].capacity: must be float"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 120}]}, "capacity_queues[0].capacity: must be within 0..100"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "wieght": 1}]}, "capacity_queues[0].wieght: unknown key"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 50, "maximum_capacity": 40}, {"name": "b", "capacity": 50}]},
     "capacity_queues[0].maximum_capacity: must be within the queue's capacity (50) and 100, got 40"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "maximum_capacity": 101}]},
     "capacity_queues[0].maximum_capacity: must be within"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "user_limit_factor": 0}]},
     "capacity_queues[0].user_limit_factor: must be > 0, or -1 (no user limit), got 0.0"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "minimum_user_limit_percent": 0}]},
     "capacity_queues[0].minimum_user_limit_percent: must be within 1..100"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "maximum_am_resource_percent": 10}]},
     "capacity_queues[0].maximum_am_resource_percent: must be a fraction within 0..1"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "state": "running"}]},
     "capacity_queues[0].state: must be RUNNING or STOPPED"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "state": "STOPPED",
                                "queues": [{"name": "b", "capacity": 100, "state": "RUNNING"}]}]},
     "capacity_queues[0].queues[0].state: RUNNING under a STOPPED parent"),
    (CS | {"capacity_queues": [{"name": "a", "capacity": 100, "user_limit_factor": 1,
                                "queues": [{"name": "b", "capacity": 100}]}]},
     "capacity_queues[0].user_limit_factor: a leaf queue's setting; 'a' has child queues"),
    ({"yarn": {"multiple_assignments": "yes"}}, "yarn.multiple_assignments: must be bool"),
    ({"yarn": {"max_container_assignments": 0}}, "yarn.max_container_assignments: must be >= 1, or -1"),
    ({"yarn": {"max_offswitch_assignments": 0}}, "yarn.max_offswitch_assignments: must be >= 1"),
    ({"yarn": {"schedule_asynchronously": 1}}, "yarn.schedule_asynchronously: must be bool"),
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


def test_cluster_up_refuses_capacity_queues_under_a_command_line_fair_scheduler(tmp_path):
    """(the command line wins over the file, so the spec refuses the mix the values file cannot see)"""
    values = tmp_path / "capacity.yaml"
    values.write_text(CAPACITY)
    proc = subprocess.run([sys.executable, "-m", "dsbra", "cluster", "up", "--state-dir", str(tmp_path / "s"),
                           "--values", str(values), "--scheduler", "fair"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "dsbra: error: capacity_queues are the Capacity Scheduler's queues, and --scheduler is fair"]
    assert not (tmp_path / "s").exists()
