"""The cluster's URLs from its Hadoop client configuration, as Hadoop's clients find them: the
HA files are the client conf of the bundled cluster in `--ha` mode (tests/fixtures/ha), the
single-server ones rendered from conf-templates/ for a default cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsbra.cluster.confdir import HostPaths, render_host
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ConfigError
from dsbra.observe.urls import resolve_urls
from dsbra.observe.hadoop_conf import cluster_urls, namenode_urls, read_site, rm_urls

HA = Path(__file__).resolve().parents[2] / "fixtures" / "ha" / "hadoop-3.4.2"
URLS = json.loads((HA / "urls.json").read_text())


def test_ha_conf_names_both_namenodes_and_both_resourcemanagers():
    urls = cluster_urls(HA / "conf")
    assert urls["webhdfs"] == f"{URLS['nn1']},{URLS['nn2']}"
    assert urls["rm"] == f"{URLS['rm1']},{URLS['rm2']}"
    assert urls["jhs"].startswith("http://")


@pytest.fixture
def single_conf(tmp_path):
    spec = ClusterSpec()
    paths = HostPaths(conf=str(tmp_path), data="/d", tmp="/t", lib="/l")
    for name, text in render_host(spec, "client", paths, "/usr/lib/jvm/java-17").items():
        (tmp_path / name).write_text(text)
    return spec, tmp_path


def test_a_cluster_without_ha_gives_one_url_each(single_conf):
    spec, conf = single_conf
    assert cluster_urls(conf) == {"webhdfs": spec.urls["namenode"], "rm": spec.urls["rm"],
                                  "jhs": spec.urls["jhs"]}


def test_https_policy_picks_the_https_addresses():
    site = read_site(HA / "conf" / "hdfs-site.xml") | {"dfs.http.policy": "HTTPS_ONLY",
                                                       "dfs.namenode.https-address.dsbra.nn1": "h1:9871",
                                                       "dfs.namenode.https-address.dsbra.nn2": "h2:9871"}
    assert namenode_urls(site) == ["https://h1:9871", "https://h2:9871"]


def test_an_rm_known_by_host_name_only_gets_the_default_web_port():
    site = {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "a,b",
            "yarn.resourcemanager.hostname.a": "ra", "yarn.resourcemanager.hostname.b": "rb"}
    assert rm_urls(site) == ["http://ra:8088", "http://rb:8088"]


def test_a_nameservice_without_its_addresses_is_one_line_naming_the_key():
    site = {"dfs.nameservices": "ns", "dfs.ha.namenodes.ns": "nn1,nn2",
            "dfs.namenode.http-address.ns.nn1": "h:9870"}
    with pytest.raises(ConfigError, match="dfs.namenode.http-address.ns.nn2"):
        namenode_urls(site)


def test_resolve_urls_reads_hadoop_conf_dir_after_flags_and_environment(monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(HA / "conf"))
    monkeypatch.delenv("DSBRA_RM_URL", raising=False)
    monkeypatch.delenv("DSBRA_WEBHDFS_URL", raising=False)
    monkeypatch.delenv("DSBRA_JHS_URL", raising=False)
    urls = resolve_urls("http://given:8088", None, None)
    assert urls["rm"] == "http://given:8088"
    assert urls["webhdfs"] == f"{URLS['nn1']},{URLS['nn2']}"
