"""The schedulers' delay-scheduling settings have one home (dsbra.hadoop.locality, issue 44):
the cluster spec, a values file and the simulator take its defaults and give its reason for a
bad value, each under its own name for the setting."""

from __future__ import annotations

import pytest

from dsbra.cluster.spec import ClusterSpec
from dsbra.cluster.values import parse_values
from dsbra.errors import ConfigError, InputError
from dsbra.hadoop import locality
from dsbra.observe.delay_threshold import settings_from_conf
from dsbra.sim.config import SimConfig


def test_the_defaults_are_hadoops_and_shared():
    assert ClusterSpec.node_locality_delay == SimConfig.node_locality_delay == 40
    assert (ClusterSpec.rack_locality_additional_delay == SimConfig.rack_locality_additional_delay
            == locality.RACK_LOCALITY_ADDITIONAL_DELAY == -1)
    assert SimConfig.yarn_threshold_node == SimConfig.yarn_threshold_rack == locality.THRESHOLD_OFF
    # a Capacity Scheduler whose /conf does not show its delay: Hadoop's default is assumed
    conf = {"yarn.resourcemanager.scheduler.class": "org.apache.hadoop.yarn.server."
            "resourcemanager.scheduler.capacity.CapacityScheduler"}
    settings = settings_from_conf(conf, nodes=100)
    assert settings.delay_source == "hadoop-default"


@pytest.mark.parametrize("value", [-2, 2.5, True, "40"])
def test_a_bad_capacity_delay_has_one_reason_under_each_name(value):
    reason = locality.opportunities_problem(value)
    assert reason and reason.startswith("must be a count of missed scheduling opportunities")
    with pytest.raises(InputError) as spec:
        ClusterSpec(scheduler="capacity", node_locality_delay=value)
    assert str(spec.value) == f"--node-locality-delay {reason}"
    with pytest.raises(ConfigError) as values:
        parse_values({"yarn": {"scheduler": "capacity", "rack_locality_additional_delay": value}})
    assert str(values.value) == f"yarn.rack_locality_additional_delay: {reason}"
    with pytest.raises(ConfigError) as sim:
        SimConfig(scheduler="capacity", node_locality_delay=value).validated()
    assert str(sim.value) == f"node-locality-delay {reason}"


@pytest.mark.parametrize("value", [1.5, -0.5, 2.0])
def test_a_bad_fair_threshold_has_one_reason_under_each_name(value):
    reason = locality.threshold_problem(value)
    assert reason and reason.startswith("must be -1 (off) or within 0..1")
    with pytest.raises(InputError) as spec:
        ClusterSpec(locality_delay_rack=value)
    assert str(spec.value) == f"--locality-delay-rack {reason}"
    with pytest.raises(ConfigError) as values:
        parse_values({"yarn": {"locality_threshold_node": value}})
    assert str(values.value) == f"yarn.locality_threshold_node: {reason}"
    with pytest.raises(ConfigError) as sim:
        SimConfig(delay_mode="yarn", yarn_threshold_node=value).validated()
    assert str(sim.value) == f"yarn-threshold-node {reason}"


@pytest.mark.parametrize("value", [-1.0, 0.0, 0.5, 1.0])
def test_a_fair_threshold_off_or_a_fraction_is_taken_everywhere(value):
    assert locality.threshold_problem(value) is None
    assert ClusterSpec(locality_delay_node=value).locality_delay_node == value
    assert parse_values({"yarn": {"locality_threshold_node": value}}).spec.locality_delay_node == value
    assert SimConfig(delay_mode="yarn", yarn_threshold_node=value,
                     yarn_threshold_rack=value).validated().yarn_threshold_node == value


def test_the_time_based_delays_go_together():
    assert locality.timed_delays_problem(-1, -1) is None
    assert locality.timed_delays_problem(0, 3000) is None
    for node_ms, rack_ms in ((5000, -1), (-5, -5)):
        reason = locality.timed_delays_problem(node_ms, rack_ms)
        with pytest.raises(InputError) as spec:
            ClusterSpec(continuous_scheduling=True, locality_delay_node_ms=node_ms,
                        locality_delay_rack_ms=rack_ms)
        assert str(spec.value) == f"--locality-delay-node-ms and --locality-delay-rack-ms {reason}"
