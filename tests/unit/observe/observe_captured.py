"""Replay of HTTP exchanges captured from the bundled real cluster.

The fixtures under tests/fixtures/captured/hadoop-<version> were recorded by
``.venv/bin/python tools/capture_fixtures.py`` against a live cluster of that release (3.4.2
answers in Jersey 1's JSON shapes, 3.5.0 in Jersey 2's); nothing in them is hand-written. See
that script's docstring for the scenarios. A scenario is named ``hadoop-<version>/<name>``;
a bare name means the 3.4.2 capture.
"""

from __future__ import annotations

import json
from pathlib import Path

from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.http_fixtures import Replayer, session_for

CAPTURED_ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "captured"
DEFAULT_VERSION = "hadoop-3.4.2"
#: the Hadoop captures (spark-<version> holds Spark's, of another shape)
VERSIONS = sorted(d.name for d in CAPTURED_ROOT.iterdir() if d.is_dir() and d.name.startswith("hadoop-"))
RM, NN, JHS = "http://10.77.0.1:8088", "http://10.77.0.1:9870", "http://10.77.0.1:19888"
SCENARIOS = [f"{v}/{name}" for v in VERSIONS for name in ("collector-binary", "collector-json")]


def captured(scenario: str) -> Path:
    """The directory of a scenario (``hadoop-<version>/<name>``, or a bare 3.4.2 name)."""
    return CAPTURED_ROOT / (scenario if "/" in scenario else f"{DEFAULT_VERSION}/{scenario}")


def replay_endpoints(scenario: str) -> tuple[Endpoints, Replayer]:
    replayer = Replayer(captured(scenario))
    return Endpoints.from_urls(RM, NN, JHS, user="root", session=session_for(replayer)), replayer


def expected(scenario: str) -> dict:
    return json.loads((captured(scenario) / "expected.json").read_text())


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
    manifest = json.loads((captured(scenario) / "manifest.json").read_text())
    return [(ex, (captured(scenario) / ex["body"]).read_bytes())
            for ex in manifest["exchanges"] if predicate(ex["url"])]

