"""tests/ci_no_skip.py: under CI a skip is a failure naming what was missing."""

from __future__ import annotations

import pytest

SKIPPING = """
import pytest

@pytest.fixture
def engine():
    pytest.skip("no Docker engine here")

def test_in_body():
    pytest.skip("needs root")

def test_in_fixture(engine):
    pass

@pytest.mark.skipif(True, reason="no KDC")
def test_by_mark():
    pass

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False
"""


# a skip in a test's body fails it; one in its set-up (a fixture, a skipif mark) is an error
@pytest.mark.parametrize("ci, skipped, failed, errors", [("true", 0, 1, 2), ("", 3, 0, 0)])
def test_a_skip_fails_under_ci_and_stays_a_skip_elsewhere(pytester, monkeypatch, ci, skipped,
                                                          failed, errors):
    monkeypatch.setenv("CI", ci)
    pytester.makepyfile(SKIPPING)
    result = pytester.runpytest("-p", "ci_no_skip", "-rA")
    result.assert_outcomes(skipped=skipped, failed=failed, errors=errors, xfailed=1)
    if ci:
        out = result.stdout.str()
        for missing in ("needs root", "no Docker engine here", "no KDC"):
            assert f"which may not skip: Skipped: {missing}" in out or \
                f"which may not skip: {missing}" in out, out
