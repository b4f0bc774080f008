"""SIGHUP and SIGTERM on a real `dsbra run` process.

No cluster: the URLs point at a closed localhost port, so every round is a logged skip (which
is what the daemon must do when the cluster is unreachable) and the loop keeps turning.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write(path: Path, cfg: dict) -> None:
    path.write_text(yaml.safe_dump(cfg))


def _wait_for(log: Path, text: str, proc, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{text!r} not logged:\n{log.read_text()}"
        time.sleep(0.1)


def test_sighup_reloads_keeps_a_good_config_on_a_bad_one_and_sigterm_stops(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}"
    cfg = {"mode": "dry-run", "interval_s": 1, "poll_s": 1, "state_dir": str(tmp_path / "st"),
           "cluster": {"rm": url, "webhdfs": url, "jhs": url, "user": "root"},
           "http": {"enabled": False}}
    config, log = tmp_path / "dsbra.yaml", tmp_path / "daemon.log"
    _write(config, cfg)
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "dsbra", "run", "--config", str(config)],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        _wait_for(log, "round=1 skipped: ", proc)
        # a good new config is taken at the next round
        _write(config, {**cfg, "mode": "apply", "interval_s": 2})
        proc.send_signal(signal.SIGHUP)
        _wait_for(log, "reloaded config mode=apply interval_s=2.0", proc)
        # a bad one is refused with its one-line reason; the daemon keeps the running one
        _write(config, {**cfg, "intervall_s": 3})
        proc.send_signal(signal.SIGHUP)
        _wait_for(log, "reload refused, keeping the running config: config: unknown key "
                  "intervall_s", proc)
        # state_dir is not reloadable
        _write(config, {**cfg, "state_dir": str(tmp_path / "other")})
        proc.send_signal(signal.SIGHUP)
        _wait_for(log, "reload refused: state_dir and cluster need a restart", proc)
        last = max(int(n) for n in re.findall(r"round=(\d+) skipped: ", log.read_text()))
        _wait_for(log, f"round={last + 1} skipped: ", proc)  # still turning
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
    text = log.read_text()
    assert "stop rounds=" in text and "Traceback" not in text
    status = (tmp_path / "st" / "status.json").read_text()
    assert '"state": "stopped"' in status and '"mode": "apply"' in status
    assert not (tmp_path / "other").exists()
