"""The README's "On your cluster", run as written against the bundled cluster (issue 70), so
the page cannot drift from the product.

The test reads the section's bash blocks in order, step by step, and runs each with bash in a
copy of the checkout, from the wheel the guide builds in a fresh venv. What it changes, and
nothing else:
- the example URLs become the daemon tests' cluster's (harness.DAEMON_SPEC: D = 10 s, the hot
  files at replication 1);
- the host's paths (/opt/dsbra, /etc/dsbra, /var/lib/dsbra, /etc/systemd/system,
  /etc/prometheus) go under a fake root, so the host is left alone;
- `systemctl` and `journalctl` are systemd_stand_in.py: this machine's PID 1 is not systemd. It
  runs the unit's ExecStart as written and waits for its READY=1 (Type=notify);
- the service's environment carries the drop-in a test cluster needs (`systemctl edit dsbra`):
  20 s rounds, the daemon tests' profile (harness.HOT_PROFILE), the status page on a free port.

Between the steps the hot workload runs (harness.HotWorkload) until the dry run would raise a
hot file and, once applied, has raised it; the uninstall then leaves every file at its base.
About 5 minutes on 2 cores: the wheel and its venv about 1.5, the rest waiting for rounds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import textwrap
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
import requests

from dsbra.cluster.paths import project_root, stage_sources, staged_build_env
from harness import BASE, DATA, HOT, HOT_PROFILE, WINDOW_S, WOULD_RAISE, HotWorkload
from systemd_stand_in import under

pytestmark = pytest.mark.cluster

SECTION = "## On your cluster"
STEP = re.compile(r"^(\d+)\. \*\*(.+?)\*\*")
#: the guide's example URLs, and the `dsbra cluster env` key of each
URLS = {"http://resourcemanager:8088": "rm", "http://namenode:9870": "namenode",
        "http://historyserver:19888": "jhs"}
#: the steps the test knows what to check after, by their bold title in the README
STEPS = ["Install", "The smallest config", "Check the cluster", "Dry run", "Watch it", "Apply",
         "Pause and resume", "Uninstall"]
#: how long a replay of the hot workload may take to make the daemon decide (rounds of 20 s)
DECIDE_S = 300


@dataclass
class Block:
    step: str
    code: str


def guide(readme: str) -> list[Block]:
    """The section's bash blocks in order, each with the step it belongs to."""
    start = readme.index(SECTION) + len(SECTION)
    end = readme.find("\n## ", start)
    lines = readme[start:end if end >= 0 else None].splitlines()
    blocks, step, i = [], None, 0
    while i < len(lines):
        if m := STEP.match(lines[i]):
            step = m[2]
        elif lines[i].strip() == "```bash":
            j = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == "```")
            blocks.append(Block(step, textwrap.dedent("\n".join(lines[i + 1:j]))))
            i = j
        i += 1
    return blocks


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Host:
    """The fake NameNode host: its root, the checkout, the shell's environment."""

    root: Path
    checkout: Path
    env: dict
    cluster: dict

    def run(self, block: Block, timeout: float = 300) -> str:
        code = under(self.root, block.code)
        for url, key in URLS.items():
            code = code.replace(url, self.cluster[key])
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=self.checkout,
                              env=self.env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, (block.step, code, done.stdout[-3000:], done.stderr[-3000:])
        return done.stdout + done.stderr

    @property
    def journal(self) -> str:
        """The stand-in's journal of the dsbra unit: the daemon's log."""
        path = self.root / "run" / "systemd" / "dsbra.journal"
        return path.read_text() if path.exists() else ""

    def decisions(self) -> list[dict]:
        path = self.root / "var" / "lib" / "dsbra" / "journal.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def until(self, pred, what: str, timeout_s: float = DECIDE_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not pred():
            assert time.monotonic() < deadline, (what, self.journal[-4000:])
            time.sleep(2)


def fake_host(tmp_path: Path, cluster: dict) -> Host:
    root = tmp_path / "host"
    for d in ("etc/systemd/system", "etc/prometheus", "run/systemd"):
        (root / d).mkdir(parents=True)
    bin_dir = root / "usr" / "local" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("systemctl", "journalctl"):  # the stand-in tells them apart by its name
        (bin_dir / name).symlink_to(Path(__file__).with_name("systemd_stand_in.py"))
    checkout = tmp_path / "checkout"
    stage_sources(checkout)
    shutil.copytree(project_root() / "deploy", checkout / "deploy")
    venv_bin = str(project_root() / ".venv" / "bin")
    path = [str(bin_dir)] + [p for p in os.environ["PATH"].split(":") if p and p != venv_bin]
    env = {k: v for k, v in staged_build_env().items()
           if not k.startswith("DSBRA_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    params = HOT_PROFILE["params"]
    env |= {"PATH": ":".join(path), "GUIDE_ROOT": str(root),
            "GUIDE_SYSTEMD": str(root / "run" / "systemd"),
            # the unit's drop-in for a test cluster
            "DSBRA_INTERVAL_S": str(WINDOW_S), "DSBRA_POLL_S": "3",
            "DSBRA_HTTP__PORT": str(free_port()), "DSBRA_POLICY__PROFILE": HOT_PROFILE["profile"],
            **{f"DSBRA_POLICY__PARAMS__{k.upper()}": str(v) for k, v in params.items()}}
    return Host(root, checkout, env, cluster)


def test_the_guide_runs_as_written(daemon_cluster, tmp_path):
    layout, cluster, client = daemon_cluster
    blocks = guide((project_root() / "README.md").read_text())
    assert [b.step for b in blocks] == STEPS, [b.step for b in blocks]
    host = fake_host(tmp_path, cluster)
    run = {b.step: b for b in blocks}
    page = f"http://127.0.0.1:{host.env['DSBRA_HTTP__PORT']}/"

    out = host.run(run["Install"], timeout=900)
    assert f"dsbra, version {version('dsbra')}" in out, out
    host.run(run["The smallest config"])
    out = host.run(run["Check the cluster"])
    assert "delay scheduling on, a map waits up to D = 10 s" in out, out
    assert "ready: dsbra can act on this cluster" in out, out

    workload = HotWorkload(layout, HOT, cluster["rm"])
    try:
        out = host.run(run["Dry run"])
        # systemctl returned once the daemon was ready: its status answers at once
        assert "state running, mode dry-run, rounds 0" in out, out
        assert "scheduler FairScheduler: delay scheduling on, D 10.0 s" in out, out
        assert "start mode=dry-run" in out, out  # journalctl's lines
        host.until(lambda: any(m[1] in HOT and int(m[3]) > int(m[2])
                               for m in WOULD_RAISE.finditer(host.journal)),
                   "the dry run would raise a hot file")
        shown = requests.get(page, timeout=10)
        assert shown.status_code == 200 and "dry run" in shown.text, shown.text[:2000]
        assert client.status(HOT[0])["replication"] == 1 and client.status(HOT[1])["replication"] == 1

        out = host.run(run["Watch it"])
        assert "SUCCESS" in out, out

        host.run(run["Apply"], timeout=400)
        host.until(lambda: any(r["op"] == "sent" for r in host.decisions()),
                   "the applied daemon raised a hot file")
    finally:
        workload.close()
    raised = {r["path"] for r in host.decisions() if r["op"] == "intent" and r["target"] > r["before"]}
    assert raised and raised <= set(HOT), host.decisions()
    assert any(client.status(p)["replication"] > BASE[p] for p in raised)

    out = host.run(run["Pause and resume"])
    assert "paused: " in out and "resumed: " in out, out

    out = host.run(run["Uninstall"], timeout=900)
    assert f"{len(raised)} of {len(raised)} file(s) set back to their base" in out, out
    assert "at base" in out, out
    # HDFS as it was: every file at its base, the raised ones' extra replicas gone, the lock freed
    assert {p: client.status(p)["replication"] for p in DATA} == BASE
    for p in raised:
        located = requests.get(f"{cluster['namenode']}/webhdfs/v1{p}", timeout=10, params={
            "op": "GET_BLOCK_LOCATIONS", "user.name": "root"}).json()
        assert all(len(b["locations"]) == BASE[p]
                   for b in located["LocatedBlocks"]["locatedBlocks"]), located
    assert client.status("/system/dsbra.id", strict=False) is None
    assert not any((host.root / d).exists() for d in ("opt/dsbra", "etc/dsbra", "var/lib/dsbra",
                                                       "etc/systemd/system/dsbra.service"))
