"""Names, addresses and ports of the test clusters.

Network namespaces, bridges and the master's ports are machine-wide, so two test sessions from
two clones (CI and a developer, say) would fight over them. DSBRA_TEST_SLOT=N (0-9, default 0)
shifts every test cluster of a session to names, a subnet and ports of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

_raw = os.environ.get("DSBRA_TEST_SLOT", "0")
if not (_raw.isdigit() and int(_raw) <= 9):
    raise SystemExit(f"DSBRA_TEST_SLOT must be a digit 0-9, got {_raw!r}")
SLOT = int(_raw)
_SUFFIX = str(SLOT) if SLOT else ""


def _net(name: str, index: int) -> dict:
    return {"prefix": f"{name}{_SUFFIX}", "subnet": f"10.{77 + index + 10 * SLOT}.0.0/24",
            "port_offset": 3000 * SLOT + 1000 * index}


MAIN = _net("dsbra", 0)      # the session's cluster, shared by most tests
SECOND = _net("dsbrat", 1)   # a cluster with its own configuration, one test at a time
THIRD = _net("dsbrap", 2)    # never started: names for `up` that must fail cleanly

SECOND_LOCK = Path(f"/tmp/dsbra-test-second-cluster{_SUFFIX}.lock")
SECOND_LAST = Path(f"/tmp/dsbra-test-second-cluster{_SUFFIX}.state-dir")


def cli_args(net: dict) -> list[str]:
    """The `dsbra cluster up` flags that put a cluster on `net`."""
    return ["--prefix", net["prefix"], "--subnet", net["subnet"], "--port-offset", str(net["port_offset"])]
