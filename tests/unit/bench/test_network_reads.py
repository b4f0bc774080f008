"""The session dsbra.bench.network reads a cluster with (the timed reads themselves run in
tests/integration/test_bench_network.py and, over https, test_tls_cluster.py)."""

from __future__ import annotations

import pytest

from dsbra.bench.network import reads_session
from dsbra.errors import InputError


def test_a_tls_cluster_is_read_through_its_ca_only():
    session = reads_session({"ca_bundle": "/state/security/ca.pem", "kerberos": None})
    assert session.verify == "/state/security/ca.pem"
    assert session.trust_env is False  # REQUESTS_CA_BUNDLE cannot swap the CA


def test_a_plain_cluster_keeps_requests_defaults():
    session = reads_session({"ca_bundle": None, "kerberos": None})
    assert session.verify is True and session.auth is None


def test_a_kerberos_cluster_is_refused_in_one_line():
    with pytest.raises(InputError, match="without --kerberos"):
        reads_session({"ca_bundle": None, "kerberos": {"realm": "DSBRA.TEST"}})
