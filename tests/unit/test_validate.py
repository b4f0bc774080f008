"""dsbra.validate: one wording per kind of rule, the caller's error type, the value back."""

from __future__ import annotations

import math

import pytest

from dsbra.errors import ConfigError, InputError
from dsbra.validate import above, at_least, at_most, in_range, one_of


@pytest.mark.parametrize("check, message", [
    (lambda: one_of("--scheduler", "lifo", ("fair", "fifo")),
     "--scheduler must be one of fair, fifo, got 'lifo'"),
    (lambda: one_of("co_read_placement", "x", ("near", "away"), none_ok=True),
     "co_read_placement must be one of near, away or null, got 'x'"),
    (lambda: at_least("copy-streams", -1, 0, integer=True, note="0: free"),
     "copy-streams must be an integer >= 0 (0: free), got -1"),
    (lambda: at_least("nodes", 2.0, 1, integer=True), "nodes must be an integer >= 1, got 2.0"),
    (lambda: at_least("min_reads", True, 1, integer=True), "min_reads must be an integer >= 1, got True"),
    (lambda: above("interval-s", 0, 0), "interval-s must be > 0, got 0"),
    (lambda: above("step", math.inf, 0), "step must be > 0, got inf"),
    (lambda: above("replicas_per_read", "many", 0, none_ok=True),
     "replicas_per_read must be > 0 or null, got 'many'"),
    (lambda: at_most("hot_window", 9, 8), "hot_window must be <= 8, got 9"),
    (lambda: in_range("--workers", 33, 1, 32), "--workers must be in [1, 32], got 33"),
    (lambda: in_range("share", 0, 0, 1, open_low=True), "share must be in (0, 1], got 0"),
    (lambda: in_range("x", math.nan, 0, 1), "x must be in [0, 1], got nan"),
])
def test_each_rule_has_one_wording(check, message):
    with pytest.raises(InputError) as info:
        check()
    assert str(info.value) == message and type(info.value) is InputError


def test_a_value_that_passes_comes_back_and_the_error_is_the_callers():
    assert one_of("mode", "apply", ("dry-run", "apply")) == "apply"
    assert one_of("profile", None, ("a",), none_ok=True) is None
    assert in_range("holdout", 1, 0, 1) == 1 and at_least("n", 10**400, 1, integer=True)
    assert above("budget", None, 0, none_ok=True) is None
    with pytest.raises(ConfigError, match=r"^config: mode must be one of"):
        one_of("config: mode", "x", ("dry-run", "apply"), error=ConfigError)
