"""The read-only endpoint on a real localhost socket: /metrics, /healthz, /status, /heat."""

from __future__ import annotations

import json

import requests

from dsbra.daemon.config import load_config
from dsbra.daemon.http import serve
from dsbra.daemon.service import Daemon


def test_endpoints(tmp_path):
    cfg = load_config(None, env={}, overrides={"state_dir": str(tmp_path)})
    daemon = Daemon(cfg)
    daemon.metrics.refusals.labels(reason="safe-mode").inc()
    daemon.status.update(state="running", last_round={"refusals": ["safe-mode: x"]})
    server = serve(daemon, "127.0.0.1", 0)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        metrics = requests.get(base + "/metrics", timeout=5).text
        assert 'dsbra_refusals_total{reason="safe-mode"} 1.0' in metrics
        assert "dsbra_rounds_total 0.0" in metrics
        assert all(not line.startswith("dsbra_") or "block" not in line.split("{")[0]
                   or line.startswith("dsbra_round_blocks") for line in metrics.splitlines())
        assert requests.get(base + "/healthz", timeout=5).status_code == 200
        status = json.loads(requests.get(base + "/status", timeout=5).text)
        assert status["last_round"]["refusals"] == ["safe-mode: x"]
        assert requests.get(base + "/nope", timeout=5).status_code == 404
        assert requests.get(base + "/heat", timeout=5).status_code == 404  # no round yet
        daemon.heat = {"format": "dsbra-heat", "version": 1, "nodes": {"10.0.0.1": 0.5}}
        assert requests.get(base + "/heat", timeout=5).json() == daemon.heat
        daemon.status["state"] = "stopped"
        assert requests.get(base + "/healthz", timeout=5).status_code == 503
    finally:
        server.shutdown()


def test_second_instance_on_the_same_state_dir_is_refused(tmp_path):
    import pytest

    from dsbra.errors import SafetyError

    cfg = load_config(None, env={}, overrides={"state_dir": str(tmp_path)})
    first = Daemon(cfg)
    first.acquire_lock()
    with pytest.raises(SafetyError, match="one instance per cluster"):
        Daemon(cfg).acquire_lock()
