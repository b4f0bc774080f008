"""Checks of one setting's value, each kind of rule in one wording.

Every check names the setting as its user spells it (``--racks``, ``racks``,
``config: http.port``), raises ``error``, the caller's type (InputError for an option or an
input, ConfigError for a configuration key), and returns the value when it passes:

- ``one_of``: "NAME must be one of a, b, c, got 'x'"
- ``at_least`` / ``above`` / ``at_most``: "NAME must be >= LOW" / "> LOW" / "<= HIGH"
- ``in_range``: "NAME must be in [LOW, HIGH]", "(" or ")" at an open end

A number is a finite int or float, never a bool; ``integer=True`` asks for an int ("must be an
integer >= 1"). ``none_ok=True`` lets None pass (" or null" in the message), ``note`` adds a
word in brackets: "copy-streams must be an integer >= 0 (0: copies cost the maps nothing), got
-1". A rule between two settings (racks against nodes) stays with its owner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from dsbra.errors import InputError


def is_number(value) -> bool:
    """A finite int or float (not a bool, NaN or an infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def one_of(name: str, value, choices: Iterable[str], *, none_ok: bool = False,
           error: type[Exception] = InputError):
    choices = tuple(choices)
    if (value is None and none_ok) or (value is not None and value in choices):
        return value
    raise error(f"{name} must be one of {', '.join(choices)}{' or null' if none_ok else ''}, "
                f"got {value!r}")


def at_least(name: str, value, low, **kw):
    return _number(name, value, lambda v: v >= low, f">= {low}", **kw)


def above(name: str, value, low, **kw):
    return _number(name, value, lambda v: v > low, f"> {low}", **kw)


def at_most(name: str, value, high, **kw):
    return _number(name, value, lambda v: v <= high, f"<= {high}", **kw)


def in_range(name: str, value, low, high, *, open_low: bool = False, open_high: bool = False,
             **kw):
    def ok(v) -> bool:
        return (low < v if open_low else low <= v) and (v < high if open_high else v <= high)

    bounds = f"{'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
    return _number(name, value, ok, f"in {bounds}", **kw)


def _number(name: str, value, ok: Callable[[float], bool], rule: str, *, integer: bool = False,
            none_ok: bool = False, note: str | None = None,
            error: type[Exception] = InputError):
    if value is None and none_ok:
        return value
    if (is_integer(value) if integer else is_number(value)) and ok(value):
        return value
    raise error(f"{name} must be {'an integer ' if integer else ''}{rule}"
                f"{' or null' if none_ok else ''}{f' ({note})' if note else ''}, got {value!r}")
