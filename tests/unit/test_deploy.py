"""deploy/: the systemd unit passes `systemd-analyze verify`, and the example config loads."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsbra.daemon.config import load_config

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "dsbra.service"
DSBRA = "/opt/dsbra/venv/bin/dsbra"  # the unit's ExecStart: the wheel's venv of docs/daemon.md


def _exec_start(text: str) -> str:
    (line,) = [l for l in text.splitlines() if l.startswith("ExecStart=")]
    return line.removeprefix("ExecStart=")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze not installed (Debian: apt-get install systemd)")
def test_unit_verifies(tmp_path):
    """verify checks the unit's syntax, its settings and that ExecStart's binary is executable:
    the copy runs this venv's dsbra (an executable that exists here) in place of the documented
    path, the one change."""
    text = UNIT.read_text()
    assert _exec_start(text).split()[0] == DSBRA
    dsbra = Path(sys.executable).with_name("dsbra")
    if not dsbra.exists():
        pytest.skip(f"no dsbra script beside {sys.executable} (the project is not installed there)")
    unit = tmp_path / "dsbra.service"
    unit.write_text(text.replace(DSBRA, str(dsbra)))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_unit_runs_what_the_config_and_docs_say():
    text = UNIT.read_text()
    argv = _exec_start(text).split()
    assert argv[1:] == ["run", "--config", "/etc/dsbra/dsbra.yaml"]
    assert "StateDirectory=dsbra" in text and "ReadWritePaths=/var/lib/dsbra" in text
    cfg = load_config(str(ROOT / "deploy" / "dsbra.yaml"), env={})
    assert str(cfg.state_dir) == "/var/lib/dsbra"  # the one writable path of ProtectSystem=strict


def test_kerberized_ha_example_loads(tmp_path):
    """deploy/dsbra-kerberized-ha.yaml: several https URLs per service, a keytab login and a CA
    bundle in one config (the bundle must exist: an env override points it at a file here)."""
    bundle = tmp_path / "ca.pem"
    bundle.write_text("not read by load_config\n")
    cfg = load_config(str(ROOT / "deploy" / "dsbra-kerberized-ha.yaml"),
                      env={"DSBRA_CLUSTER__CA_BUNDLE": str(bundle)})
    c = cfg.cluster
    assert c.kerberos and c.keytab and c.kerberos_principal.endswith("@EXAMPLE.ORG")
    assert str(c.ca_bundle) == str(bundle)
    # the lists are kept comma-joined, the form the REST clients split (and env overrides take)
    assert c.webhdfs == "https://nn1.example.org:9871,https://nn2.example.org:9871"
    assert c.rm == "https://rm1.example.org:8090,https://rm2.example.org:8090"
