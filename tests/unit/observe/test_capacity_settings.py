"""D on a Capacity Scheduler cluster, from replies captured on the bundled cluster brought up
with `dsbra cluster up --scheduler capacity --node-locality-delay 2` (Hadoop 3.4.2):
tests/fixtures/capacity-3.4.2/ (the RM's /conf, /ws/v1/cluster/scheduler and nodes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsbra.hadoop.rest import parse_conf
from dsbra.observe.delay_threshold import settings_from_conf

CAPTURED = Path(__file__).parents[2] / "fixtures" / "capacity-3.4.2"


def _conf() -> dict[str, str]:
    return parse_conf((CAPTURED / "rm-conf.json").read_bytes())


def _running_nodes() -> int:
    nodes = json.loads((CAPTURED / "nodes.json").read_text())["nodes"]["node"]
    return sum(n["state"] == "RUNNING" for n in nodes)


def test_the_node_delay_is_hadoops_default_when_the_rm_does_not_show_it():
    conf = _conf()
    assert conf["yarn.resourcemanager.scheduler.class"].endswith(".capacity.CapacityScheduler")
    assert "yarn.scheduler.capacity.node-locality-delay" not in conf
    s = settings_from_conf(conf, _running_nodes())
    assert _running_nodes() == 4 and s.delay_source == "hadoop-default"
    # min(4 nodes, 40): four missed opportunities, at one heartbeat of 1 s each at most
    assert s.delay_scheduling and s.delay_threshold_s == pytest.approx(4.0)
    assert s.min_delay_s == pytest.approx(1.0) and s.node_threshold == pytest.approx(1.0)
    assert s.container_mb(512) == 512  # normalised to the 128 MB minimum allocation


def test_the_operators_value_when_given_and_off_at_zero():
    given = settings_from_conf(_conf(), 4, node_locality_delay=2)
    assert given.delay_source == "dsbra-config" and given.delay_threshold_s == pytest.approx(2.0)
    off = settings_from_conf(_conf(), 4, node_locality_delay=0)
    assert not off.delay_scheduling and off.delay_threshold_s == 0.0


def test_the_rms_value_wins_when_its_configuration_shows_one():
    """(an operator who sets the key in yarn-site.xml: the Capacity Scheduler reads it there
    too, and /conf shows it)"""
    from dsbra.observe.delay_threshold import _capacity_node_delay

    shown = {"yarn.scheduler.capacity.node-locality-delay": "3"}
    assert _capacity_node_delay(shown, 2) == (3, "rm-conf")
    assert _capacity_node_delay({}, 2) == (2, "dsbra-config")
    assert _capacity_node_delay({}, None) == (40, "hadoop-default")

