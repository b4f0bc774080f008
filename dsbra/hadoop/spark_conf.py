"""Spark's locality settings as Spark reads them: what `dsbra conf check` judges and the
collector divides a Spark task's wait by (the delay threshold D of the scheduler that waited)."""

from __future__ import annotations

import re

WAIT_KEY = "spark.locality.wait"
#: Spark's default for spark.locality.wait, which every level defaults to
DEFAULT_WAIT = "3s"
LEVELS = ("process", "node", "rack")
#: JavaUtils.timeStringAs: lower-cased and trimmed, an integer and a unit (ms when none)
TIME = re.compile(r"(-?[0-9]+)([a-z]+)?")
TIME_UNITS_US = {"us": 1, "ms": 1000, "s": 1_000_000, "m": 60_000_000, "min": 60_000_000,
                 "h": 3_600_000_000, "d": 86_400_000_000}


def spark_time_ms(text: str) -> int | None:
    """A Spark time setting in whole ms, as Spark reads it (TimeUnit.convert truncates: 500us is
    0, delay scheduling off); None when Spark would refuse it."""
    match = TIME.fullmatch(text.strip().lower())
    unit = (match.group(2) or "ms") if match else None
    if unit not in TIME_UNITS_US:
        return None
    us = int(match.group(1)) * TIME_UNITS_US[unit]
    return us // 1000 if us >= 0 else -(-us // 1000)


def waits(props: dict[str, str]) -> dict[str, tuple[str, str]]:
    """level -> (the key that sets it, its text): a level's own key, else spark.locality.wait,
    else Spark's default."""
    base = (WAIT_KEY, props[WAIT_KEY]) if WAIT_KEY in props else (f"{WAIT_KEY} (Spark's default)",
                                                                  DEFAULT_WAIT)
    keys = {level: f"{WAIT_KEY}.{level}" for level in LEVELS}
    return {level: (key, props[key]) if key in props else base for level, key in keys.items()}


def pairs(value) -> dict[str, str] | None:
    """``sparkProperties`` ([key, value] pairs, as /environment gives them) as a dict; None
    when the reply has another shape."""
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
        return None
    return {str(k): str(v) for k, v in value}
