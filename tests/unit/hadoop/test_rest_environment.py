"""An Endpoint reads what requests takes from the environment (proxies, a CA bundle) once per
URL instead of on every request, and takes the same: NO_PROXY still bypasses, an explicit CA
bundle still wins."""

from __future__ import annotations

import requests

from dsbra.hadoop.rest import ResourceManager


def test_proxies_and_no_proxy_as_requests_reads_them(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.77.0.1")
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    rm = ResourceManager(["http://10.77.0.1:8088", "http://rm2.example:8088"])
    assert rm.session.trust_env is False
    assert rm._environment("http://10.77.0.1:8088") == {"proxies": {}}
    assert rm._environment("http://rm2.example:8088")["proxies"]["http"] == "http://proxy.example:3128"
    monkeypatch.setenv("NO_PROXY", "rm2.example")  # read once: a later change is not seen
    assert rm._environment("http://rm2.example:8088")["proxies"]["http"] == "http://proxy.example:3128"


def test_the_environments_ca_bundle_unless_one_is_set(monkeypatch):
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/site-ca.pem")
    rm = ResourceManager("https://10.77.0.1:8090")
    assert rm._environment("https://10.77.0.1:8090")["verify"] == "/etc/ssl/site-ca.pem"
    session = requests.Session()
    session.verify = "/cluster/ca.pem"  # dsbra's --ca-bundle / cluster.ca_bundle
    explicit = ResourceManager("https://10.77.0.1:8090", session=session)
    assert "verify" not in explicit._environment("https://10.77.0.1:8090")
