"""What the daemon says about the scheduler it found, from /conf replies captured on the bundled
cluster: the Fair Scheduler's (tests/fixtures/captured) and the Capacity Scheduler's
(tests/fixtures/capacity-3.4.2). The FIFO scheduler's refusal is proven on a real FIFO cluster
(tests/integration/test_daemon_schedulers.py)."""

from __future__ import annotations

from pathlib import Path

from observe_captured import bodies

from dsbra.hadoop.rest import parse_conf
from dsbra.observe.delay_threshold import settings_from_conf

CAPACITY = Path(__file__).parents[2] / "fixtures" / "capacity-3.4.2" / "rm-conf.json"


def _fair_conf() -> dict[str, str]:
    replies = bodies("collector-json", lambda url: url.endswith(":8088/conf?format=json"))
    return parse_conf(replies[0][1])


def test_the_fair_scheduler_gives_a_signal_and_its_d_is_described():
    s = settings_from_conf(_fair_conf(), nodes=4)
    assert s.short_name == "FairScheduler" and s.no_signal() is None
    assert s.describe().startswith("scheduler=FairScheduler delay_scheduling=on D=")
    assert "delay_source=rm-conf nodes=4" in s.describe()


def test_the_capacity_scheduler_gives_a_signal_and_says_where_its_delay_came_from():
    s = settings_from_conf(parse_conf(CAPACITY.read_bytes()), nodes=4, node_locality_delay=2)
    assert s.short_name == "CapacityScheduler" and s.no_signal() is None
    assert s.describe() == ("scheduler=CapacityScheduler delay_scheduling=on D=2.0s (lower bound "
                            "0.5s) delay_source=dsbra-config nodes=4 heartbeat_s=1")
    off = settings_from_conf(parse_conf(CAPACITY.read_bytes()), nodes=4, node_locality_delay=-1)
    assert off.no_signal() is None  # a scheduler dsbra reads, with its delay off
    assert off.describe() == "scheduler=CapacityScheduler delay_scheduling=off nodes=4"
