"""`dsbra conf check` on the Capacity Scheduler, on replies captured from the bundled cluster:
tests/fixtures/capacity-3.4.2 (the default queues root.default and root.benchmark, 50% each) and
tests/fixtures/capacity-nested-3.4.2 (nested queues and changed settings, from its values.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dsbra.conf.check import Live, compare, notes, read_rendered
from dsbra.conf.render import render_values, write_rendered
from dsbra.cluster.values import parse_values
from dsbra.errors import InputError
from dsbra.hadoop.rest import parse_conf
from test_conf_check import live as fair_live

FIXTURES = Path(__file__).parents[2] / "fixtures"
DEFAULT = FIXTURES / "capacity-3.4.2"
NESTED = FIXTURES / "capacity-nested-3.4.2"
#: what `dsbra cluster up --scheduler capacity --node-locality-delay 2` ran for DEFAULT
DEFAULT_VALUES = {"hdfs": {"replication": 2}, "yarn": {"scheduler": "capacity", "node_locality_delay": 2}}


def live(directory: Path) -> Live:
    body = lambda n: json.loads((directory / n).read_text())  # noqa: E731
    return Live(rm_conf=parse_conf((directory / "rm-conf.json").read_bytes()), scheduler=body("scheduler.json"),
                nodes=body("nodes.json")["nodes"]["node"], nn_conf=None)


def files(doc: dict) -> dict[str, str]:
    return render_values(parse_values(doc))


def nested_values() -> dict:
    return yaml.safe_load((NESTED / "values.yaml").read_text())


def test_the_default_queues_agree_and_the_unseen_settings_are_a_note():
    rendered = files(DEFAULT_VALUES)
    assert compare(rendered, live(DEFAULT)) == []
    [note] = notes(rendered, live(DEFAULT))
    assert note.startswith("capacity-scheduler.xml not compared, the ResourceManager shows it nowhere")
    assert "node-locality-delay 2, rack-locality-additional-delay -1" in note
    assert "per-node-heartbeat.maximum-container-assignments 100" in note


def test_a_changed_capacity_and_leaf_setting_are_reported():
    doc = DEFAULT_VALUES | {"capacity_queues": [{"name": "default", "capacity": 60},
                                                {"name": "benchmark", "capacity": 40, "user_limit_factor": 1}]}
    assert compare(files(doc), live(DEFAULT)) == [
        "capacity-scheduler.xml root.benchmark capacity: rendered 40.0, live 50.0",
        "capacity-scheduler.xml root.benchmark user-limit-factor: rendered 1.0, live 2.0",
        "capacity-scheduler.xml root.default capacity: rendered 60.0, live 50.0",
    ]


def test_nested_queues_agree_with_the_file_they_were_started_from():
    rendered = files(nested_values())
    # root.default's 30% comes back as the Java float 30.000002
    assert compare(rendered, live(NESTED)) == []
    [note] = notes(rendered, live(NESTED))
    assert ("node-locality-delay 3, rack-locality-additional-delay 1, "
            "per-node-heartbeat.multiple-assignments-enabled true, "
            "per-node-heartbeat.maximum-container-assignments 4, "
            "per-node-heartbeat.maximum-offswitch-assignments 2, schedule-asynchronously.enable true, "
            "multi-node-placement-enabled true") in note


def test_nested_differences_name_the_queue():
    doc = nested_values()
    analytics = doc["capacity_queues"][1]
    adhoc, batch = analytics["queues"]
    adhoc.update(capacity=50, minimum_user_limit_percent=100)
    batch.update(capacity=50, state="RUNNING")
    analytics["queues"].append({"name": "extra", "capacity": 0})
    diffs = compare(files(doc), live(NESTED))
    assert diffs == [
        "capacity-scheduler.xml root.analytics.extra: the RM has no such queue",
        "capacity-scheduler.xml root.analytics.adhoc capacity: rendered 50.0, live 33.3",
        "capacity-scheduler.xml root.analytics.adhoc minimum-user-limit-percent: rendered 100.0, live 50.0",
        "capacity-scheduler.xml root.analytics.batch state: rendered RUNNING, live STOPPED",
        "capacity-scheduler.xml root.analytics.batch capacity: rendered 50.0, live 66.7",
    ]
    doc["capacity_queues"] = [{"name": "default", "capacity": 30, "maximum_capacity": 50},
                              {"name": "analytics", "capacity": 70, "maximum_capacity": 90}]
    diffs = compare(files(doc), live(NESTED))
    assert diffs == [
        "capacity-scheduler.xml: live queue root.analytics.adhoc is not in the file",
        "capacity-scheduler.xml: live queue root.analytics.batch is not in the file",
        "capacity-scheduler.xml root.default maximum-capacity: rendered 50.0, live 100.0",
    ]


def test_the_yarn_keys_that_apply_are_compared_and_the_fair_ones_not():
    doc = DEFAULT_VALUES | {"yarn": DEFAULT_VALUES["yarn"] | {"heartbeat": "2s"}}
    assert compare(files(doc), live(DEFAULT)) == [
        "yarn-site.xml yarn.resourcemanager.nodemanagers.heartbeat-interval-ms: rendered 2000, live 1000"]


def test_files_for_the_other_scheduler_differ_in_the_class_and_skip_the_queues():
    fair = files({"hdfs": {"replication": 2}})
    diffs = compare(fair, live(DEFAULT))
    assert diffs[0].startswith("yarn-site.xml yarn.resourcemanager.scheduler.class: rendered "
                               "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler, live ")
    assert not any(d.startswith(("fair-scheduler.xml", "capacity-scheduler.xml")) for d in diffs)
    assert notes(fair, live(DEFAULT)) == ["queues not compared: the rendered files name the FairScheduler, "
                                          "the ResourceManager's scheduler reply is of type capacityScheduler"]
    # and the other way round, on a Fair Scheduler cluster (test_conf_check.py's replies)
    capacity = files({"yarn": {"scheduler": "capacity"}})
    on_fair = fair_live("hadoop-3.4.2")
    assert compare(capacity, on_fair) == [
        "yarn-site.xml yarn.resourcemanager.scheduler.class: rendered "
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler, live "
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler"]
    assert notes(capacity, on_fair) == ["queues not compared: the rendered files name the CapacityScheduler, "
                                        "the ResourceManager's scheduler reply is of type fairScheduler"]


def test_a_rendered_directory_carries_capacity_scheduler_xml(tmp_path):
    rendered = files(DEFAULT_VALUES)
    write_rendered(rendered, tmp_path)
    assert read_rendered(tmp_path) == rendered
    (tmp_path / "capacity-scheduler.xml").unlink()
    with pytest.raises(InputError, match="names the CapacityScheduler, but there is no capacity-scheduler.xml"):
        compare(read_rendered(tmp_path), live(DEFAULT))
