"""What operators watch the daemon with: the Prometheus alert rules (deploy/prometheus) pass
`promtool check rules` (Debian's prometheus package), and every metric they and the Grafana
dashboard (deploy/grafana) name is one a running daemon's /metrics exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

from dsbra.daemon.config import load_config
from dsbra.daemon.service import Daemon

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "deploy" / "prometheus" / "dsbra-rules.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dsbra.json"
STATE = ROOT / "tests" / "fixtures" / "page" / "daemon-holdout"
METRIC = re.compile(r"\bdsbra_[a-z_]+")


def test_the_alert_rules_pass_promtool():
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: `make ui-deps` installs Debian's prometheus package"
    done = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout


def _dashboard_exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def test_every_metric_the_rules_and_the_dashboard_name_is_exported(tmp_path):
    """A daemon after a round of the recorded state dir (its last round's decisions), its
    /metrics read through its own HTTP server."""
    from dsbra.act.journal import Journal
    from dsbra.daemon.http import serve

    state = tmp_path / "state"
    shutil.copytree(STATE, state)
    cfg = tmp_path / "dsbra.yaml"
    cfg.write_text(f"state_dir: {state}\ncluster: {{rm: http://rm:8088, webhdfs: http://nn:9870}}\n")
    daemon = Daemon(load_config(str(cfg)))
    info = json.loads((state / "status.json").read_text())["last_round"]
    daemon.metrics.observe_round(info | {"refusals": []}, Journal.open(state / "journal.jsonl"))
    daemon.metrics.refusals.labels(reason="safe-mode").inc()
    server = serve(daemon, "127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/metrics") as r:
            exported = set(METRIC.findall(r.read().decode()))
    finally:
        server.shutdown()
    named = set(METRIC.findall(RULES.read_text())) | {
        m for expr in _dashboard_exprs() for m in METRIC.findall(expr)}
    assert named and named <= exported, sorted(named - exported)
    # the dashboard has a panel for each thing issue 46 lists
    titles = {p["title"] for p in json.loads(DASHBOARD.read_text())["panels"]}
    assert {"Rounds per minute", "Round duration", "Decisions by rule", "Files above base",
            "Bytes above base", "Refusals by reason", "Open changes", "Observed delay pressure",
            "Experiment: files per group, switchback arm, guard"} <= titles
