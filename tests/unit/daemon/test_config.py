"""Config validation: every bad key or value is one line naming it, a non-zero exit via the CLI."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from dsbra.daemon.config import DAEMON_RAILS, load_config
from dsbra.errors import ConfigError


def test_defaults_are_a_safe_dry_run_on_localhost():
    cfg = load_config(None, env={})
    assert cfg.mode == "dry-run" and not cfg.apply
    assert cfg.interval_s == 60 and cfg.http.host == "127.0.0.1"
    assert cfg.policy.profile is None  # the policy engine's default profile, whatever it is
    assert cfg.cluster.lock_path == "/system/dsbra.id"  # one acting daemon per cluster
    assert cfg.rails == DAEMON_RAILS  # the policy's own maximum, 10 files, 20 replicas a round
    assert (DAEMON_RAILS.max_replication, DAEMON_RAILS.max_files_per_round,
            DAEMON_RAILS.max_replicas_per_round) == (None, 10, 20)


def test_yaml_then_environment_then_overrides(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("mode: dry-run\ninterval_s: 30\nrails:\n  max_files_per_round: 3\n"
                    "policy:\n  params:\n    max_replication: 4\n")
    cfg = load_config(path, env={"DSBRA_INTERVAL_S": "45", "DSBRA_HTTP__PORT": "9999",
                                 "DSBRA_RM_URL": "http://x:1"}, overrides={"mode": "apply"})
    assert cfg.apply and cfg.interval_s == 45 and cfg.http.port == 9999
    assert cfg.rails.max_files_per_round == 3 and cfg.policy.params == {"max_replication": 4}
    # a section given in part keeps the daemon's own defaults for the rest
    assert cfg.rails == dataclasses.replace(DAEMON_RAILS, max_files_per_round=3)


@pytest.mark.parametrize("section, policy", [
    ("policy:\n  profile: adaptive-20s\n", ("dsbra", "adaptive-20s")),
    ("policy:\n  name: dare\n  params:\n    p: 0.5\n", ("dare", None)),
])
def test_a_named_profile_or_a_baseline_loads(tmp_path, section, policy):
    path = tmp_path / "d.yaml"
    path.write_text("interval_s: 20\n" + section)
    cfg = load_config(path, env={})
    assert (cfg.policy.name, cfg.policy.profile) == policy


@pytest.mark.parametrize("text, env, needle", [
    ("mode: yes-please\n", {}, "mode must be one of dry-run, apply, got 'yes-please'"),
    ("intervl_s: 5\n", {}, "unknown key intervl_s"),
    ("rails:\n  max_files: 3\n", {}, "unknown key rails.max_files"),
    ("http:\n  port: 70000\n", {}, "http.port must be in [0, 65535]"),
    ("interval_s: -3\n", {}, "interval_s must be a non-negative number"),
    ("policy:\n  profile: nope\n", {}, "policy.profile must be one of"),
    ("policy:\n  params:\n    bogus: 1\n", {}, "unknown key policy.params.bogus"),
    ("policy:\n  params:\n    max_replication: 0\n", {}, "max_replication"),
    ("policy:\n  params:\n    co_read_share: 2\n", {}, "co_read_share must be in (0, 1]"),
    ("policy:\n  name: hdfs\n", {}, "policy.name must be one of dsbra, scarlett, dare"),
    ("policy:\n  name: dare\n  profile: calibrated\n", {}, "policy.name dare takes none"),
    ("policy:\n  name: scarlett\n  params:\n    alpha: 1\n", {}, "has no parameter alpha"),
    ("", {"DSBRA_POLICY__NAME": "dare", "DSBRA_POLICY__PARAMS": "{p: 2}"}, "p must be in [0, 1]"),
    ("cluster:\n  rm: ftp://x\n", {}, "cluster.rm must be an http(s) URL"),
    ("cluster:\n  webhdfs: [http://a:9870, b:9870]\n", {}, "cluster.webhdfs must be an http(s) URL or several, got 'b:9870'"),
    ("cluster:\n  rm: []\n", {}, "cluster.rm must be a URL or a list of URLs"),
    ("cluster:\n  jhs: [http://a, http://b]\n", {}, "cluster.jhs must be a string or null"),
    ("cluster:\n  lock_path: system/dsbra.id\n", {}, "cluster.lock_path must be an absolute HDFS path"),
    ("rails:\n  protected: /a\n", {}, "rails.protected must be a list of strings"),
    ("rails:\n  min_replication: 0\n", {}, "config: rails.min_replication must be >= 1, got 0"),
    ("rails:\n  min_replication: 3\n  max_replication: 2\n", {},
     "config: rails.max_replication must be >= min_replication (3), got 2"),
    ("", {"DSBRA_HTTP__PORT": "abc"}, "http.port must be a non-negative integer, got 'abc'"),
    ("", {"DSBRA_NOPE": "1"}, "unknown key nope"),
    ("placement:\n  lead_s: -1\n", {}, "placement.lead_s must be a non-negative number"),
    ("placement:\n  heat_uri: x\n", {}, "unknown key placement.heat_uri"),
    ("[1, 2\n", {}, "is not valid YAML"),
    ("- a\n", {}, "the top level must be a mapping"),
])
def test_bad_config_is_one_line_naming_it(tmp_path, text, env, needle):
    path = tmp_path / "d.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env=env)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_several_urls_per_service_as_a_list_or_comma_separated(tmp_path):
    """An HA cluster's NameNodes and ResourceManagers: a YAML list, or one string (what an
    environment override or `dsbra cluster env` gives), both kept comma-joined."""
    path = tmp_path / "d.yaml"
    path.write_text("cluster:\n  webhdfs: [http://nn1:9870, http://nn2:9870]\n")
    cfg = load_config(path, env={"DSBRA_CLUSTER__RM": "http://rm1:8088,http://rm2:8088"})
    assert cfg.cluster.webhdfs == "http://nn1:9870,http://nn2:9870"
    assert cfg.cluster.rm == "http://rm1:8088,http://rm2:8088"


def test_missing_config_file():
    with pytest.raises(ConfigError, match="No such file"):
        load_config("/nonexistent/dsbra.yaml", env={})


@pytest.mark.parametrize("cmd", [["run", "--once"], ["status"], ["pause"], ["resume"]])
def test_cli_exits_non_zero_with_one_line(tmp_path, cmd):
    path = tmp_path / "d.yaml"
    path.write_text("mode: sideways\n")
    proc = subprocess.run([sys.executable, "-m", "dsbra", *cmd, "--config", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "dsbra: error: config: mode must be one of dry-run, apply, got 'sideways'"]


def test_status_without_a_daemon_is_a_clear_error(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(f"state_dir: {tmp_path / 'st'}\n")
    proc = subprocess.run([sys.executable, "-m", "dsbra", "status", "--config", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no daemon status in" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_pause_resume_flag(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(f"state_dir: {tmp_path / 'st'}\n")
    run = lambda c: subprocess.run([sys.executable, "-m", "dsbra", c, "--config", str(path)],  # noqa: E731
                                   capture_output=True, text=True, timeout=60)
    assert run("pause").returncode == 0 and (tmp_path / "st" / "paused").exists()
    assert run("resume").returncode == 0 and not (tmp_path / "st" / "paused").exists()


def test_the_keytab_comes_from_the_environment_and_needs_the_principal():
    env = {"DSBRA_CLUSTER__KERBEROS": "true", "DSBRA_CLUSTER__KERBEROS_PRINCIPAL": "dsbra@R",
           "DSBRA_CLUSTER__KEYTAB": "/etc/dsbra/dsbra.keytab"}
    assert load_config(None, env=env).cluster.keytab == "/etc/dsbra/dsbra.keytab"
    with pytest.raises(ConfigError, match="cluster.keytab needs cluster.kerberos: true"):
        load_config(None, env={"DSBRA_CLUSTER__KEYTAB": "/etc/dsbra/dsbra.keytab"})


def test_the_spark_section(tmp_path):
    """Spark is read by default (nothing to say on a cluster without it); its History Server,
    audit log and idle threshold come from YAML or the environment, checked at start."""
    from dsbra.daemon.config import bundled_spark_section

    cfg = load_config(None, env={})
    assert cfg.spark.enabled and cfg.spark.history is None and cfg.spark.min_idle_s == 0.5
    path = tmp_path / "c.yaml"
    path.write_text("spark:\n  history: http://nn:18080\n  audit_log: /var/log/hdfs-audit.log\n")
    cfg = load_config(path, env={"DSBRA_SPARK__MIN_IDLE_S": "1"})
    assert (cfg.spark.history, cfg.spark.audit_log, cfg.spark.min_idle_s) == (
        "http://nn:18080", "/var/log/hdfs-audit.log", 1.0)
    for text, needle in (("spark:\n  history: nn:18080\n", "spark.history must be an http\\(s\\) URL"),
                         ("spark:\n  min_idle_s: -1\n", "spark.min_idle_s"),
                         ("spark:\n  audit: x\n", "unknown key spark.audit")):
        path.write_text(text)
        with pytest.raises(ConfigError, match=needle):
            load_config(path, env={})
    env = {"spark_history": "http://10.77.0.1:18080",
           "audit_logs": {"namenode": "/s/logs/namenode-audit.log"}}
    assert bundled_spark_section(env) == {"history": "http://10.77.0.1:18080",
                                          "audit_log": "/s/logs/namenode-audit.log"}
    assert bundled_spark_section({"spark_history": None}) == {"enabled": False}
