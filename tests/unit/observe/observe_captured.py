"""Replay of HTTP exchanges captured from the bundled real cluster (Hadoop 3.4.2).

The fixtures under tests/fixtures/captured/hadoop-3.4.2 were recorded by
``.venv/bin/python tools/capture_fixtures.py`` against a live cluster; nothing in them is
hand-written. See that script's docstring for the scenarios.
"""

from __future__ import annotations

import json
from pathlib import Path

from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.replay import Replayer, session_for

CAPTURED = Path(__file__).resolve().parents[2] / "fixtures" / "captured" / "hadoop-3.4.2"
RM, NN, JHS = "http://10.77.0.1:8088", "http://10.77.0.1:9870", "http://10.77.0.1:19888"
SCENARIOS = ["collector-binary", "collector-json"]


def replay_endpoints(scenario: str) -> tuple[Endpoints, Replayer]:
    replayer = Replayer(CAPTURED / scenario)
    return Endpoints.from_urls(RM, NN, JHS, user="root", session=session_for(replayer)), replayer


def expected(scenario: str) -> dict:
    return json.loads((CAPTURED / scenario / "expected.json").read_text())


class ReplayClock:
    """The collector's clock readings recorded during the capture, served in order."""

    def __init__(self, readings: list[float]):
        self.readings, self.i = readings, 0

    def __call__(self) -> float:
        value = self.readings[min(self.i, len(self.readings) - 1)]
        self.i += 1
        return value

    def restarted(self) -> "ReplayClock":
        """The clock of a collector started now: its first reading (its __init__) is extra."""
        other = ReplayClock(self.readings)
        other.i = self.i - 1
        return other


def replay_collector(scenario: str, state_path=None, polls: int | None = None):
    """A Collector driven through the recorded polls of ``scenario`` with the recorded clock."""
    exp = expected(scenario)
    ep, replayer = replay_endpoints(scenario)
    clock = ReplayClock(exp["clock"])
    c = Collector(ep, since_ms=exp["since_ms"], clock=clock, state_path=state_path)
    c.settings()
    for _ in range(exp["polls"] if polls is None else polls):
        c.poll()
    return c, ep, replayer, exp


def bodies(scenario: str, predicate) -> list[tuple[dict, bytes]]:
    """(exchange, body) of the recorded exchanges whose URL satisfies ``predicate``."""
    manifest = json.loads((CAPTURED / scenario / "manifest.json").read_text())
    return [(ex, (CAPTURED / scenario / ex["body"]).read_bytes())
            for ex in manifest["exchanges"] if predicate(ex["url"])]

