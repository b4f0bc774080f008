"""`dsbra conf delay`: the paper's sizing rule, its wait in seconds, YARN's settings, bad inputs."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from dsbra.conf.delay import size_delay
from dsbra.errors import InputError


def test_paper_example_gives_about_0_23_m():
    sizing = size_delay(0.95, 20, 100, 3)
    assert sizing.skip_count == pytest.approx(23.1, abs=0.05)
    assert sizing.threshold_node == pytest.approx(0.231, abs=0.001)
    assert sizing.wait_s is None and sizing.delay_node_ms is None


def test_wait_and_time_based_equivalent():
    sizing = size_delay(0.95, 20, 100, 3, slots_per_node=4, task_seconds=30)
    d = 100 / 3 * math.log(2)
    assert sizing.wait_s == pytest.approx(d * 30 / 400)
    assert sizing.delay_node_ms == round(d * 30 / 400 * 1000)
    # every heartbeat counts: 100 nodes at 1 s use up D in D/100 s, far short of the wait
    assert sizing.yarn_count_hold_s == pytest.approx(d / 100)
    assert any("locality-delay-node-ms=1733" in w for w in sizing.warnings)


def test_no_warning_when_count_holds_long_enough():
    # tasks of 2 s on one-slot nodes: a slot frees as often as a heartbeat arrives
    sizing = size_delay(0.95, 20, 100, 3, slots_per_node=1, task_seconds=1.0, heartbeat_s=1.0)
    assert sizing.warnings == ()


def test_higher_locality_or_fewer_replicas_need_more_skips():
    base = size_delay(0.95, 20, 100, 3).skip_count
    assert size_delay(0.99, 20, 100, 3).skip_count > base
    assert size_delay(0.95, 20, 100, 1).skip_count == pytest.approx(3 * base)


def test_d_above_m_is_capped_and_warned():
    sizing = size_delay(0.999, 1, 10, 1)
    assert sizing.skip_count > 10 and sizing.threshold_node == 1.0
    assert any("caps" in w for w in sizing.warnings)


@pytest.mark.parametrize("args, word", [
    ((1.0, 20, 100, 3), "--locality"), ((0.0, 20, 100, 3), "--locality"),
    ((float("nan"), 20, 100, 3), "--locality"), ((0.9, 0, 100, 3), "--tasks"),
    ((0.9, 20, 0, 3), "--nodes"), ((0.9, 20, 2, 3), "--replication"), ((0.9, 20, 10, 0), "--replication"),
])
def test_bad_inputs_name_the_flag(args, word):
    with pytest.raises(InputError, match=word):
        size_delay(*args)


def test_bad_wait_inputs():
    with pytest.raises(InputError, match="go together"):
        size_delay(0.9, 20, 10, 3, slots_per_node=4)
    with pytest.raises(InputError, match="--task-seconds"):
        size_delay(0.9, 20, 10, 3, slots_per_node=4, task_seconds=float("inf"))
    with pytest.raises(InputError, match="--heartbeat-s"):
        size_delay(0.9, 20, 10, 3, heartbeat_s=0)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "dsbra", "conf", "delay", *args], capture_output=True, text=True)


def test_cli_json_and_one_line_error():
    proc = _run("--locality", "0.95", "--tasks", "20", "--nodes", "100", "--replication", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"skip_count", "threshold_node", "wait_s", "delay_node_ms"} <= set(out)
    assert out["wait_s"] is None and round(out["skip_count"], 1) == 23.1
    proc = _run("--locality", "0.95", "--tasks", "20", "--nodes", "2", "--replication", "3")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == ["dsbra: error: --replication must be between 1 and --nodes (2), got 3"]


def test_cli_text_warns_with_the_time_based_setting():
    proc = _run("--locality", "0.95", "--tasks", "20", "--nodes", "100", "--replication", "3",
                "--slots-per-node", "4", "--task-seconds", "30")
    assert proc.returncode == 0
    assert "locality-delay-node-ms = 1733" in proc.stdout
    assert "warning:" in proc.stderr


def test_capacity_delay_is_the_skip_count_capped_by_the_cluster():
    from dsbra.conf.delay import size_capacity_delay

    c = size_capacity_delay(0.95, 20, 100, 3, slots_per_node=4, task_seconds=30)
    d = 100 / 3 * math.log(2)
    assert c.node_locality_delay == math.ceil(d) == 24 and c.effective_count == 24
    # an app offered every heartbeat of 100 nodes uses 24 opportunities in 0.24 s
    assert c.hold_s == pytest.approx(0.24) and c.hold_max_s == pytest.approx(24.0)
    assert any("no time-based delay" in w for w in c.warnings)
    small = size_capacity_delay(0.999, 100, 4, 1)  # D = 9.6 > 4: capped at the 4 nodes
    assert small.node_locality_delay > 4 and small.effective_count == 4
    assert any("caps it at 4" in w for w in small.warnings)


def test_cli_prints_the_capacity_schedulers_setting():
    proc = _run("--locality", "0.95", "--tasks", "20", "--nodes", "100", "--replication", "3",
                "--scheduler", "capacity")
    assert proc.returncode == 0, proc.stderr
    assert "yarn.scheduler.capacity.node-locality-delay = 24" in proc.stdout
    assert "fair" not in proc.stdout
    out = json.loads(_run("--locality", "0.95", "--tasks", "20", "--nodes", "100",
                          "--replication", "3", "--scheduler", "capacity", "--json").stdout)
    assert out["node_locality_delay"] == 24 and out["effective_count"] == 24
