#!/usr/bin/env python3
"""``systemctl`` and ``journalctl`` for the README guide's test (test_guide.py), on a machine
whose PID 1 is not systemd: the few commands the guide runs, on the unit file it copied.

What it stands in for is the init system, not dsbra: the unit's ``ExecStart`` runs as written
(its absolute paths under GUIDE_ROOT, as the test puts the guide's), in the background, its
output the "journal". Not modelled: ``User=`` (it runs as the caller) and the sandboxing
directives (tests/unit/test_deploy.py has systemd-analyze verify them). Environment:
GUIDE_ROOT (the fake host's root), GUIDE_SYSTEMD (where it keeps the pid and the journal).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

#: the host's absolute paths the guide writes or a unit names (/opt/dsbra, /etc/dsbra,
#: /var/lib/dsbra, /etc/systemd/system, /etc/prometheus): under the fake host's root
HOST_PATHS = re.compile(r"(?<![\w/.])/(opt|etc|var)/")


def under(root: Path, text: str) -> str:
    """``text`` with each of its host paths moved under ``root``."""
    return HOST_PATHS.sub(lambda m: f"{root}/{m[1]}/", text)


ROOT = Path(os.environ.get("GUIDE_ROOT", "/nonexistent"))
RUN = Path(os.environ.get("GUIDE_SYSTEMD", "/nonexistent"))
UNITS = ROOT / "etc" / "systemd" / "system"


def unit(name: str) -> dict[str, str]:
    path = UNITS / f"{name}.service"
    if not path.is_file():
        sys.exit(f"Unit {name}.service not found.")
    return dict(line.split("=", 1) for line in path.read_text().splitlines()
                if "=" in line and not line.startswith(("#", ";")))


def pid(name: str) -> int | None:
    path = RUN / f"{name}.pid"
    if not path.exists():
        return None
    p = int(path.read_text())
    try:
        os.kill(p, 0)
    except ProcessLookupError:
        return None
    return p


def start(name: str) -> None:
    """Run the unit's ExecStart; for Type=notify, return once it sent READY=1 (exit 1 if it
    ended first or sent nothing within TimeoutStartSec), as systemctl start does."""
    if pid(name):
        return
    spec = unit(name)
    argv = shlex.split(under(ROOT, spec["ExecStart"]))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    address = f"@dsbra-guide-{os.getpid()}"
    notify.bind("\0" + address[1:])
    env = dict(os.environ, NOTIFY_SOCKET=address)
    with (RUN / f"{name}.journal").open("a") as journal:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=journal, stderr=journal,
                                start_new_session=True, env=env)
    (RUN / f"{name}.pid").write_text(str(proc.pid))
    if spec.get("Type", "simple") != "notify":
        return
    deadline = time.monotonic() + float(spec.get("TimeoutStartSec", "90"))
    notify.settimeout(0.5)
    while time.monotonic() < deadline:
        try:
            if b"READY=1" in notify.recv(4096).split(b"\n"):
                return
        except socket.timeout:
            pass
        if proc.poll() is not None:
            sys.exit(f"Job for {name}.service failed: it exited with {proc.returncode} before "
                     f"it was ready (journalctl -u {name})")
    sys.exit(f"Job for {name}.service failed: not ready within its TimeoutStartSec")


def stop(name: str) -> None:
    """SIGTERM (the unit's KillSignal), then wait up to its TimeoutStopSec."""
    p = pid(name)
    if p is None:
        return
    os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + float(unit(name).get("TimeoutStopSec", "90"))
    while pid(name) and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid(name):
        sys.exit(f"{name}.service did not stop within its TimeoutStopSec")
    (RUN / f"{name}.pid").unlink()


def systemctl(args: list[str]) -> None:
    if args == ["daemon-reload"]:
        return
    *verbs, name = args
    if verbs == ["enable", "--now"] or verbs == ["start"]:
        start(name)
    elif verbs == ["restart"]:
        stop(name)
        start(name)
    elif verbs == ["disable", "--now"] or verbs == ["stop"]:
        stop(name)
    else:
        sys.exit(f"systemd stand-in: systemctl {' '.join(args)} is not one the guide runs")


def journalctl(args: list[str]) -> None:
    if len(args) != 4 or args[0] != "-u" or args[2] != "-n":
        sys.exit(f"systemd stand-in: journalctl {' '.join(args)} is not one the guide runs")
    journal = RUN / f"{args[1]}.journal"
    lines = journal.read_text().splitlines() if journal.exists() else []
    print("\n".join(lines[-int(args[3]):]))


if __name__ == "__main__":
    RUN.mkdir(parents=True, exist_ok=True)
    {"systemctl": systemctl, "journalctl": journalctl}[Path(sys.argv[0]).name](sys.argv[1:])
