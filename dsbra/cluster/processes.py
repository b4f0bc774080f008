"""The cluster's OS processes: which are ours, their memory, and stopping them (daemons, containers, the KDC).

Below both the daemons' command lines and the security set-up, which stop processes too.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def is_ours(pid: int, name: str, state_root: Path) -> bool:
    """True if pid is alive and is the daemon `name` of the cluster in state_root."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":  # a zombie is dead
            return False
    except (OSError, IndexError):
        return False
    return f"-Ddsbra.daemon={name}".encode() in cmdline and f"-Ddsbra.state={state_root}".encode() in cmdline


def state_processes(state_root: Path) -> list[int]:
    """Every live process started by this cluster: daemons, and containers (cwd under data/)."""
    marker = f"-Ddsbra.state={state_root}".encode()
    root = str(state_root / "data")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
                continue
            cwd = os.readlink(entry / "cwd")
            if cwd == root or cwd.startswith(root + "/"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def rss_bytes(pids: list[int]) -> int:
    """The resident memory of ``pids`` summed (VmRSS), in bytes; a process gone meanwhile counts 0."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def terminate(pids: list[int], timeout: float = 15.0) -> list[int]:
    """SIGTERM each process group, wait, then SIGKILL what is left. Returns the pids killed hard."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if _alive(pid)]
    for pid in alive:
        _signal(pid, signal.SIGKILL)
    end = time.monotonic() + 5
    while time.monotonic() < end and any(_alive(p) for p in alive):
        time.sleep(0.1)
    return alive


def kill(pids: list[int], timeout: float = 10.0) -> None:
    """SIGKILL each process group (kill -9: no shutdown hook runs) and wait until they are gone."""
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)


def _signal(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
