"""`dsbra conf check --advise` on ResourceManager configurations captured from the bundled
cluster (Fair Scheduler with count-based delay, and the Capacity Scheduler), and on the captured
Fair one with its delay settings left to Hadoop's defaults (off)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsbra.conf.advice import AM_HEARTBEAT_KEY, advise
from dsbra.hadoop.rest import parse_conf

FIXTURES = Path(__file__).parents[2] / "fixtures"
FAIR_CONFS = [FIXTURES / "captured" / v / "collector-json" / "0001.body" for v in ("hadoop-3.4.2", "hadoop-3.5.0")]


def fair(path: Path) -> dict[str, str]:
    return parse_conf(path.read_bytes())


@pytest.mark.parametrize("path", FAIR_CONFS, ids=lambda p: p.parts[-3])
def test_the_bundled_fair_cluster_is_advised_only_on_its_am_heartbeat(path):
    conf = fair(path)
    assert conf["yarn.scheduler.fair.locality.threshold.node"] == "1.0"  # count-based delay, on
    [advice] = advise(conf)
    assert advice.setting == AM_HEARTBEAT_KEY and advice.live == "500 ms"
    assert "set it to 100 ms" in advice.change
    first, sim, real = advice.lines()
    assert first.startswith(f"{AM_HEARTBEAT_KEY} is 500 ms: set it to 100 ms")
    assert sim.startswith("  simulator: 100 ms instead of 500 gains +5.0")
    assert real.startswith("  real cluster: not separated: +2.4 points [-1.1, +5.8]")


def test_delay_scheduling_left_at_hadoops_default_is_advised_on():
    conf = fair(FAIR_CONFS[0])
    del conf["yarn.scheduler.fair.locality.threshold.node"]  # the Fair Scheduler's default: -1, off
    advice = advise(conf)
    assert [a.live for a in advice] == ["off", "500 ms"]
    assert "`dsbra conf delay` sizes it" in advice[0].change
    assert "-16.5 [-18.4, -14.7]" in advice[0].simulator and "not separated" in advice[0].real


def test_time_based_delay_counts_as_on_and_minus_one_as_off():
    conf = fair(FAIR_CONFS[0]) | {"yarn.scheduler.fair.continuous-scheduling-enabled": "true",
                                  "yarn.scheduler.fair.locality-delay-node-ms": "10000",
                                  "yarn.scheduler.fair.locality-delay-rack-ms": "10000"}
    assert [a.live for a in advise(conf)] == ["500 ms"]
    off = conf | {"yarn.scheduler.fair.locality-delay-node-ms": "-1",
                  "yarn.scheduler.fair.locality-delay-rack-ms": "-1"}
    assert [a.live for a in advise(off)] == ["off", "500 ms"]


def test_an_am_heartbeat_at_the_advised_beat_or_not_shown_is_not_advised_on():
    conf = fair(FAIR_CONFS[0])
    assert advise(conf | {AM_HEARTBEAT_KEY: "100"}) == []
    del conf[AM_HEARTBEAT_KEY]  # an RM without the jobs' mapred-site.xml on its class path
    assert advise(conf) == []


def test_the_capacity_scheduler_is_not_advised_on_its_delay():
    """Its locality delay lives in capacity-scheduler.xml, which the RM's /conf does not show."""
    conf = parse_conf((FIXTURES / "capacity-3.4.2" / "rm-conf.json").read_bytes())
    assert "CapacityScheduler" in conf["yarn.resourcemanager.scheduler.class"]
    assert [a.setting for a in advise(conf)] == [AM_HEARTBEAT_KEY]
