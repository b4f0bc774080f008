"""The cluster's pure parts: argument validation, host/rack/port layout, CLI argument errors."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from dsbra.cluster import state as st
from dsbra.cluster.cli import cluster
from dsbra.cluster.spec import ClusterSpec, parse_size
from dsbra.errors import InputError


def test_default_layout_four_workers_on_two_racks():
    spec = ClusterSpec()
    workers = spec.worker_list
    assert spec.master == "10.77.0.1"
    assert [w.host for w in workers] == ["10.77.0.11", "10.77.0.12", "10.77.0.13", "10.77.0.14"]
    assert [w.rack for w in workers] == ["/rack1", "/rack1", "/rack2", "/rack2"]
    assert [w.netns for w in workers] == ["dsbra-w1", "dsbra-w2", "dsbra-w3", "dsbra-w4"]
    assert len({w.veth for w in workers}) == 4 and spec.bridge == "dsbra0"


@pytest.mark.parametrize("workers, racks, expected", [
    (1, 2, ["/rack1"]),
    (3, 2, ["/rack1", "/rack1", "/rack2"]),
    (5, 3, ["/rack1", "/rack1", "/rack2", "/rack2", "/rack3"]),
])
def test_workers_spread_contiguously_over_racks(workers, racks, expected):
    spec = ClusterSpec(workers=workers, racks=racks, replication=1)
    assert [w.rack for w in spec.worker_list] == expected


def test_port_offset_moves_master_ports_only():
    spec = ClusterSpec(port_offset=1000)
    assert spec.port("namenode_rpc") == 9020
    assert spec.port("datanode_xfer") == 9866  # workers have their own addresses
    assert spec.urls["webhdfs"] == "http://10.77.0.1:10870/webhdfs/v1"


def test_custom_subnet_and_prefix():
    spec = ClusterSpec(subnet="198.18.0.0/24", prefix="x1", workers=2, replication=2)
    assert spec.master == "198.18.0.1"
    assert [w.host for w in spec.worker_list] == ["198.18.0.11", "198.18.0.12"]
    assert spec.bridge == "x10" and spec.worker_list[1].netns == "x1-w2"


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 0}, r"--workers must be in \[1, 32\]"),
    ({"workers": 33}, r"--workers must be in \[1, 32\]"),
    ({"racks": 0}, "--racks"),
    ({"subnet": "10.0.0.0/33"}, "not an IPv4 network"),
    ({"subnet": "10.0.0.0/29"}, "too small"),
    ({"subnet": "127.0.0.0/24"}, "loopback"),
    ({"prefix": "a-b"}, "--prefix"),
    ({"prefix": "toolongname"}, "--prefix"),
    ({"port_offset": -1}, "--port-offset"),
    ({"replication": 5}, "--replication"),
    ({"replication": 0}, "--replication"),
    ({"block_size": 1000}, "--block-size"),
    ({"locality_delay_node": 1.5}, "--locality-delay-node"),
    ({"locality_delay_rack": -0.5}, "--locality-delay-rack"),
    ({"nm_memory_mb": 600}, "--nm-memory-mb"),
    ({"map_memory_mb": 500}, "map_memory_mb must be a positive multiple"),
    ({"am_memory_mb": 640, "memory_increment_mb": 512}, "am_memory_mb must be a positive multiple"),
    ({"memory_increment_mb": 0}, "memory_increment_mb"),
    ({"continuous_scheduling": True, "locality_delay_node_ms": 5000}, "go together"),
    ({"continuous_scheduling": True, "locality_delay_node_ms": -5, "locality_delay_rack_ms": -5}, "go together"),
    ({"locality_delay_node_ms": 5000, "locality_delay_rack_ms": 0}, "need --continuous-scheduling"),
    ({"hadoop_version": "3.3.6"}, "--hadoop-version"),
    ({"scheduler": "deadline"}, "--scheduler must be one of fair, capacity, fifo"),
    ({"scheduler": "capacity", "node_locality_delay": -2}, "--node-locality-delay"),
    ({"scheduler": "capacity", "rack_locality_additional_delay": -3}, "--rack-locality-additional-delay"),
    ({"scheduler": "capacity", "continuous_scheduling": True}, "the Fair Scheduler's"),
    ({"capacity_queues": [{"name": "a", "capacity": 100.0}]}, "capacity_queues are the Capacity Scheduler's"),
    ({"scheduler": "capacity", "queues": [{"name": "a"}]}, "queues and placement are the Fair Scheduler's"),
])
def test_invalid_specs_are_input_errors(kwargs, message):
    with pytest.raises(InputError, match=message):
        ClusterSpec(**kwargs)


def test_locality_delay_minus_one_turns_delay_scheduling_off():
    assert ClusterSpec(locality_delay_node=-1, locality_delay_rack=-1).locality_delay_node == -1


def test_spec_round_trips_through_its_dict():
    spec = ClusterSpec(workers=3, racks=3, block_size=2 * 1024 * 1024, locality_delay_node=0.5)
    assert ClusterSpec.from_dict(spec.to_dict()) == spec


def test_capacity_queues_and_settings_round_trip_through_the_state_file(tmp_path):
    queues = [{"name": "a", "capacity": 100.0, "maximum_capacity": 100.0, "state": "RUNNING",
               "queues": [{"name": "b", "capacity": 100.0, "maximum_capacity": 100.0, "state": "RUNNING",
                           "user_limit_factor": -1.0, "minimum_user_limit_percent": 100.0,
                           "maximum_am_resource_percent": 0.5}]}]
    spec = ClusterSpec(scheduler="capacity", capacity_queues=queues, max_container_assignments=-1,
                       schedule_asynchronously=True)
    st.save(tmp_path / "state.json", st.new(spec.to_dict()))
    assert ClusterSpec.from_dict(st.load(tmp_path / "state.json")["spec"]) == spec


@pytest.mark.parametrize("text, size", [("8m", 8 * 1024**2), ("128k", 128 * 1024), ("1g", 1024**3),
                                        ("1048576", 1048576), ("1.5m", 1572864)])
def test_parse_size(text, size):
    assert parse_size(text) == size


def test_parse_size_rejects_garbage():
    with pytest.raises(InputError, match="not a size"):
        parse_size("big")


@pytest.mark.parametrize("args", [["up", "--workers", "0"], ["up", "--replication", "9"],
                                  ["up", "--block-size", "x"], ["up", "--ha-failover", "manual"]])
def test_cli_rejects_bad_arguments_before_touching_anything(tmp_path, args):
    result = CliRunner().invoke(cluster, [*args, "--state-dir", str(tmp_path)])
    assert isinstance(result.exception, InputError)
    assert list(tmp_path.iterdir()) == []


def test_cli_rejects_non_numeric_workers():
    result = CliRunner().invoke(cluster, ["up", "--workers", "four"])
    assert result.exit_code == 2 and "is not a valid integer" in result.output


def test_every_cluster_command_has_help():
    for command in ("up", "down", "status", "env", "logs", "install"):
        result = CliRunner().invoke(cluster, [command, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output
