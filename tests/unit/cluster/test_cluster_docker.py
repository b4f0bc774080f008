"""hadoop-docker's compose file and build cache key (dsbra.cluster.docker); no engine needed."""

from __future__ import annotations

import yaml

from dsbra.cluster.docker import DEFAULT_SUBNET, compose_document, inputs_key, render_compose
from dsbra.cluster.paths import project_root
from dsbra.cluster.spec import ClusterSpec
from dsbra.daemon.config import load_config


def test_committed_compose_file_is_the_rendered_default():
    committed = (project_root() / "hadoop-docker" / "compose.yaml").read_text()
    assert committed == render_compose(), "regenerate it: dsbra docker compose > hadoop-docker/compose.yaml"


def test_hosts_have_the_netns_cluster_addresses_and_are_named_by_them():
    doc = yaml.safe_load(render_compose(workers=6, subnet="172.29.5.0/24"))
    spec = ClusterSpec(workers=6, subnet="172.29.5.0/24")
    services = doc["services"]
    assert services["namenode"]["networks"]["dsbra"]["ipv4_address"] == spec.master == "172.29.5.1"
    assert services["namenode"]["hostname"] == spec.master
    for w in spec.worker_list:
        assert services[w.name]["networks"]["dsbra"]["ipv4_address"] == services[w.name]["hostname"] == w.host
        assert services[w.name]["command"][:2] == ["worker", str(w.index)]
    for name in ("resourcemanager", "historyserver", "dsbra"):  # the master's network namespace
        assert services[name]["network_mode"] == "service:namenode"
    [ipam] = doc["networks"]["dsbra"]["ipam"]["config"]
    assert ipam == {"subnet": "172.29.5.0/24", "gateway": "172.29.5.254"}
    assert {w.rack for w in spec.worker_list} == {"/rack1", "/rack2"}


def test_default_subnet_stays_clear_of_the_netns_clusters():
    assert DEFAULT_SUBNET.startswith("172.29.")


def _image_env() -> dict[str, str]:
    """The ENV of hadoop-docker/Dockerfile, which the sidecar's daemon sees too."""
    text = (project_root() / "hadoop-docker" / "Dockerfile").read_text().replace("\\\n", " ")
    words = [w for line in text.splitlines() if line.startswith("ENV ") for w in line.split()[1:]]
    return dict(w.split("=", 1) for w in words)


def test_daemon_sidecar_environment_is_a_valid_dry_run_config():
    env = compose_document()["services"]["dsbra"]["environment"]
    assert {"DSBRA_HADOOP_DIR", "DSBRA_PLACEMENT_DIR"} <= set(_image_env())
    cfg = load_config(None, env=_image_env() | env)
    assert cfg.mode == "dry-run"
    assert cfg.cluster.rm == "http://172.29.0.1:8088"
    assert cfg.cluster.webhdfs == "http://172.29.0.1:9870"
    assert cfg.http.host == "0.0.0.0"
    assert "dsbra" not in compose_document(daemon=False)["services"]


def test_inputs_key_follows_every_staged_file(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "Dockerfile").write_text("FROM dsbra-base:bookworm\n")
    key = inputs_key(tmp_path, "sha256:base")
    assert inputs_key(tmp_path, "sha256:base") == key
    assert inputs_key(tmp_path, "sha256:other") != key
    (tmp_path / "src" / "a.py").write_text("x = 2\n")
    assert inputs_key(tmp_path, "sha256:base") != key
