"""No silent skip under CI: a pytest plugin (tests/conftest.py loads it).

A test that cannot find what it needs (root, a Docker engine, a tool) skips on a developer's
machine, but under ``CI`` (set by ``.ci/run``) that skip is a failure naming what was missing,
so a green CI run has checked everything it lists. An expected failure (xfail) is left alone.
"""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which may not skip: {reason}"
