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


def java_main_class(cmdline: list[bytes]) -> str | None:
    """The main class of a ``java`` command line: its first argument that is neither an option
    nor the class path after ``-cp``/``-classpath``; None for another program."""
    if not cmdline or not cmdline[0].endswith(b"java"):
        return None
    args = iter(cmdline[1:])
    for arg in args:
        if arg in (b"-cp", b"-classpath"):
            next(args, None)
        elif arg and not arg.startswith(b"-"):
            return arg.decode(errors="replace")
    return None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of ``pid`` in seconds (/proc/<pid>/stat), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuAccount:
    """The CPU seconds every Java process used while a workload ran, by main class, from /proc
    sampled by the caller: a process alive at the first sample counts from there; one that
    exits counts up to its last sample, so it may miss up to one interval of its CPU."""

    def __init__(self) -> None:
        self.start: dict[int, float] = {}
        self.last: dict[int, tuple[str, float]] = {}
        self.sampled = False

    def sample(self) -> None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid not in self.last:
                try:
                    main = java_main_class((entry / "cmdline").read_bytes().split(b"\0"))
                except OSError:
                    continue
                if main is None:
                    continue
            else:
                main = self.last[pid][0]
            cpu = cpu_seconds(pid)
            if cpu is None:
                continue
            if not self.sampled:
                self.start[pid] = cpu
            self.last[pid] = (main, cpu)
        self.sampled = True

    def alive(self, main: str) -> bool:
        """Whether a process of main class ``main`` is alive now."""
        return any(m == main and _alive(pid) for pid, (m, _) in self.last.items())

    def by_class(self) -> dict[str, list[float]]:
        """Main class -> the CPU seconds of each of its processes that used any over the account."""
        out: dict[str, list[float]] = {}
        for pid, (main, cpu) in self.last.items():
            if cpu > self.start.get(pid, 0.0):
                out.setdefault(main, []).append(cpu - self.start.get(pid, 0.0))
        return out
