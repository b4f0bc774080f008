"""Normalise the JSON shapes of Hadoop's REST APIs across Jersey 1 (3.4) and Jersey 2 (3.5).

Jersey 1 wraps lists as ``{"tasks": {"task": [...]}}`` and writes an empty list as
``{"tasks": null}``; Jersey 2 (HADOOP-15984) may write a one-element list as a bare object
``{"tasks": {"task": {...}}}``, an empty one as ``{}`` or omit the key, and adds ``@xsi.type``
keys. These helpers accept all of them so callers see plain lists of dicts.
"""

from __future__ import annotations

import math

from typing import Any

from dsbra.errors import HadoopError


def as_list(value: Any) -> list:
    """A JSON value that should be a list: None -> [], a lone object -> [object]."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def items(doc: Any, outer: str, inner: str, *, what: str | None = None) -> list[dict]:
    """The list under ``doc[outer][inner]`` in any of the shapes above, dicts only.

    Raises HadoopError when ``doc`` is not an object at all (a malformed reply); entries that
    are not objects are dropped (the caller logs the skip via ``malformed``).
    """
    if not isinstance(doc, dict):
        raise HadoopError(f"malformed reply for {what or outer}: expected a JSON object, "
                          f"got {type(doc).__name__}")
    wrapper = doc.get(outer)
    if wrapper is None or wrapper == "":
        return []
    if isinstance(wrapper, list):  # some Jersey 2 endpoints drop the inner wrapper
        entries = wrapper
    elif isinstance(wrapper, dict):
        entries = as_list(wrapper.get(inner))
    else:
        raise HadoopError(f"malformed reply for {what or outer}: '{outer}' is a "
                          f"{type(wrapper).__name__}")
    return [e for e in entries if isinstance(e, dict)]


def single(doc: Any, key: str, *, what: str | None = None) -> dict:
    """The object under ``doc[key]`` (``{"app": {...}}``, ``{"clusterMetrics": {...}}``)."""
    if not isinstance(doc, dict) or not isinstance(doc.get(key), dict):
        raise HadoopError(f"malformed reply for {what or key}: no '{key}' object")
    return doc[key]


JAVA_LONG_MIN, JAVA_LONG_MAX = -(2 ** 63), 2 ** 63 - 1


def as_int(value: Any, default: int | None = None) -> int | None:
    """An integer field that Jersey 2 may send as a string; None/garbage -> default. Hadoop's
    numbers are Java longs: a value outside their range is garbage too (numpy's int64 arrays
    downstream could not hold it)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value):
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            try:
                number = int(float(value))
            except (ValueError, OverflowError):  # "nan", "inf"
                return default
    else:
        return default
    return number if JAVA_LONG_MIN <= number <= JAVA_LONG_MAX else default


def as_float(value: Any, default: float | None = None) -> float | None:
    if isinstance(value, bool):
        return default
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return default
    return default


def as_str(value: Any, default: str | None = None) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return default
