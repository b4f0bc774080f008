"""Malformed and missing fields, fuzzed with hypothesis on the captured exchanges: the collector
and the window builder either succeed (skipping what is malformed, with a log line) or raise a
HadoopError (a one-line message at the CLI), never anything else."""

from __future__ import annotations

import json
import logging

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsbra.errors import HadoopError
from dsbra.observe import jhist
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.http_fixtures import Replayer, session_for
from dsbra.observe.window import build_window

from observe_captured import JHS, NN, RM, ReplayClock, captured, expected

JUNK = st.one_of(st.none(), st.integers(-5, 10**13), st.text(max_size=6), st.just([]),
                 st.just({}), st.booleans(), st.floats(allow_nan=True, allow_infinity=True))


def mutate(value, choice: int, replacement, drop: bool):
    """``value`` with one node (picked by ``choice``) replaced by ``replacement`` or dropped."""
    if isinstance(value, dict) and value:
        keys = sorted(value)
        k = keys[choice % len(keys)]
        out = dict(value)
        if choice % 4 == 0:
            if drop:
                del out[k]
            else:
                out[k] = replacement
        else:
            out[k] = mutate(value[k], choice // 4, replacement, drop)
        return out
    if isinstance(value, list) and value:
        out = list(value)
        i = choice % len(value)
        out[i] = mutate(value[i], choice // len(value) if choice % 3 else 0, replacement, drop)
        return out
    return replacement


class MutatingReplayer(Replayer):
    """Replays a scenario with the JSON body of exchange number ``target`` mutated."""

    def __init__(self, directory, target: int, choice: int, replacement, drop: bool):
        super().__init__(directory)
        manifest = json.loads((directory / "manifest.json").read_text())
        json_bodies = [ex["body"] for ex in manifest["exchanges"]
                       if ex["headers"].get("Content-Type", "").startswith("application/json")]
        self.target = json_bodies[target % len(json_bodies)]
        self.mutation = (choice, replacement, drop)

    def body(self, name: str) -> bytes:
        raw = super().body(name)
        if name != self.target:
            return raw
        doc = json.loads(raw)
        return json.dumps(mutate(doc, *self.mutation)).encode()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(["collector-binary", "collector-json"]), st.integers(0, 10**4),
       st.integers(0, 10**9), JUNK, st.booleans())
# a running job's conf reply without mapreduce.job.dir: its staging dir was looked up as None
@example(scenario="collector-json", target=2581, choice=0, replacement={}, drop=False)
def test_mutated_replies_never_crash_the_collector(scenario, target, choice, replacement, drop):
    exp = expected(scenario)
    replayer = MutatingReplayer(captured(scenario), target, choice, replacement, drop)
    ep = Endpoints.from_urls(RM, NN, JHS, user="root", session=session_for(replayer))
    c = Collector(ep, since_ms=exp["since_ms"], clock=ReplayClock(exp["clock"]))
    try:
        c.settings()
        for _ in range(exp["polls"]):
            c.poll()
        build_window(c, c.take(), window_start_ms=exp["since_ms"],
                     window_end_ms=exp["window_end_ms"]).document()
    except HadoopError:
        pass


def history_events():
    raw = [b for b in captured("collector-binary").glob("*.body")
           if b.read_bytes().startswith(b"Avro-Binary")]
    return jhist.read_events(max(raw, key=lambda p: p.stat().st_size).read_bytes()).events


EVENTS = history_events()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(EVENTS) - 1), st.integers(0, 10**6), JUNK, st.booleans())
def test_malformed_history_events_are_logged_skips(i, choice, replacement, drop):
    events = list(EVENTS)
    events[i] = mutate(events[i], choice, replacement, drop)
    job = jhist.job_from_events(events, "job_x")
    assert job.skipped >= 0


def test_a_skip_is_logged(caplog):
    events = list(EVENTS)
    started = next(i for i, e in enumerate(events) if e["type"] == "TASK_STARTED")
    events[started] = {"type": "TASK_STARTED", "event": {"taskid": None}}
    with caplog.at_level(logging.WARNING, logger="dsbra.observe.jhist"):
        job = jhist.job_from_events(events, "job_x")
    assert job.skipped >= 1
    assert "skipped a TASK_STARTED event" in caplog.text
