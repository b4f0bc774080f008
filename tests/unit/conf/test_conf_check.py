"""`dsbra conf check`'s comparison on replies captured from the bundled cluster (4 workers on
2 racks, the default queues root.default and root.benchmark at weight 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsbra.conf.check import Live, compare, readiness, steady_shares
from dsbra.conf.render import render_values
from dsbra.cluster.values import parse_values
from dsbra.hadoop.rest import parse_conf

CAPTURED = Path(__file__).parents[2] / "fixtures" / "captured"
VERSIONS = ["hadoop-3.4.2", "hadoop-3.5.0"]


def live(version: str) -> Live:
    """The RM's /conf, /ws/v1/cluster/scheduler and /nodes as captured from a default `cluster up`."""
    body = lambda n: json.loads((CAPTURED / version / "endpoints" / n).read_text())  # noqa: E731
    conf = parse_conf((CAPTURED / version / "collector-json" / "0001.body").read_bytes())
    return Live(rm_conf=conf, scheduler=body("0005.body"), nodes=body("0002.body")["nodes"]["node"], nn_conf=None)


def files(doc: dict) -> dict[str, str]:
    return render_values(parse_values(doc))


@pytest.mark.parametrize("version", VERSIONS)
def test_default_queues_and_racks_agree(version):
    rendered = files({})
    assert compare(rendered, live(version)) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_changed_weight_policy_and_queue_set_are_reported(version):
    rendered = files({"queues": [{"name": "default", "weight": 1}, {"name": "benchmark", "weight": 3,
                                                                     "policy": "fifo"}]})
    diffs = compare(rendered, live(version))
    assert "fair-scheduler.xml root.benchmark schedulingPolicy: rendered fifo, live fair" in diffs
    assert any(d.startswith("fair-scheduler.xml root.benchmark weight 3: its steady fair share would be "
                            "7680 MB of 10240 MB, the RM gives it 5120 MB") for d in diffs)
    rendered = files({"queues": [{"name": "default"}, {"name": "other"}]})
    diffs = compare(rendered, live(version))
    assert "fair-scheduler.xml: live queue root.benchmark is not in the file" in diffs
    assert "fair-scheduler.xml root.other: the RM has no such queue" in diffs


@pytest.mark.parametrize("version", VERSIONS)
def test_racks_and_scheduler_settings_are_compared(version):
    rendered = files({"cluster": {"racks": 1}, "yarn": {"locality_threshold_node": 0.5}})
    diffs = compare(rendered, live(version))
    assert "yarn-site.xml yarn.scheduler.fair.locality.threshold.node: rendered 0.5, live 1.0" in diffs
    assert "topology.table 10.77.0.13: rendered rack /rack1, live /rack2" in diffs
    # a key the live RM leaves unset is compared as Hadoop's default
    timed = files({"yarn": {"locality_delay_node": "3s", "locality_delay_rack": "1s"}})
    diffs = compare(timed, live(version))
    assert "yarn-site.xml yarn.scheduler.fair.continuous-scheduling-enabled: rendered true, live false" in diffs
    assert "yarn-site.xml yarn.scheduler.fair.locality-delay-node-ms: rendered 3000, live -1" in diffs


def test_steady_shares_follow_weights_within_min_and_max():
    q = lambda w, lo=None, hi=None: {"weight": w, "min": lo, "max": hi}  # noqa: E731
    assert steady_shares({"a": q(1), "b": q(3)}, 2560) == pytest.approx({"a": 640, "b": 1920})
    shares = steady_shares({"a": q(1, lo=(2000, 1)), "b": q(3)}, 2560)
    assert shares == pytest.approx({"a": 2000, "b": 560})
    shares = steady_shares({"a": q(1), "b": q(3, hi=(1000, 1))}, 2560)
    assert shares == pytest.approx({"a": 1560, "b": 1000})


@pytest.mark.parametrize("version", VERSIONS)
def test_readiness_names_the_scheduler_and_its_d(version):
    # count-based Fair Scheduler delay: threshold 1.0 of 4 nodes at a 1 s heartbeat
    assert readiness(live(version)) == [
        (False, "scheduler FairScheduler: delay scheduling on, a map waits up to D = 4 s for a "
                "node-local container"), (False, "4 running node(s)")]


def test_readiness_says_when_the_capacity_schedulers_delay_is_hadoops_default():
    conf = parse_conf((Path(__file__).parents[2] / "fixtures" / "capacity-3.4.2" / "rm-conf.json").read_bytes())
    lines = readiness(Live(rm_conf=conf, scheduler={}, nodes=live(VERSIONS[0]).nodes, nn_conf=None))
    assert lines[0] == (False, "scheduler CapacityScheduler: delay scheduling on, a map waits up to "
                               "D = 4 s for a node-local container, Hadoop's default: the RM's "
                               "/conf does not show capacity-scheduler.xml")
    assert not any(problem for problem, _ in lines)
