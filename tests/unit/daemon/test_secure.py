"""TLS (a CA bundle, https) and Kerberos (SPNEGO) options, with the real libraries.

TLS: a real https server on localhost with a certificate signed by a CA made here by openssl,
serving replies captured from the bundled cluster (GETFILESTATUS, the NameNode's JMX beans).
The daemon's clients verify it against the CA bundle, and refuse it without.
Kerberos: HdfsCLI's KerberosClient with the configured principal and mutual authentication,
on requests_kerberos and gssapi; without a ticket, one line at start.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml

from dsbra.daemon.config import load_config
from dsbra.daemon import service
from dsbra.daemon.service import Daemon
from dsbra.errors import ConfigError, HadoopError
from dsbra.hadoop.auth import kerberos_auth
from dsbra.hadoop.hdfs import HdfsActor, kerberos_client, make_client
from dsbra.hadoop.rest import ResourceManager

CAPTURE = Path(__file__).resolve().parents[2] / "fixtures" / "captured" / "hadoop-3.4.2" / \
    "collector-binary"
FILE = "/dsbra-fixtures/binary/in/small-0"


def _captured() -> dict:
    """(path, query) -> (status, content type, body) of the capture's NameNode exchanges."""
    manifest = json.loads((CAPTURE / "manifest.json").read_text())
    out = {}
    for ex in manifest["exchanges"]:
        url = urlsplit(ex["url"])
        if url.port != 9870:
            continue
        key = (url.path, frozenset(parse_qsl(url.query)))
        out.setdefault(key, (ex["status"], ex["headers"].get("Content-Type", "application/json"),
                             (CAPTURE / ex["body"]).read_bytes()))
    return out


def write_reply(handler: BaseHTTPRequestHandler, status: int, ctype: str, body: bytes,
                headers: tuple = ()) -> None:
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def start_server(handler: type, tls: ssl.SSLContext | None = None) -> ThreadingHTTPServer:
    """``handler`` served on a free loopback port in a daemon thread (https with ``tls``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A CA, a localhost certificate it signed, and an https server replaying the capture."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "1", "-subj", "/CN=dsbra test CA", "-addext",
             "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
             cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "nn.key", "-out", "nn.csr",
             "-subj", "/CN=localhost", cwd=d)
    (d / "ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "nn.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "nn.pem", "-days", "1", "-extfile", "ext", cwd=d)
    replies = _captured()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 -- http.server's name
            url = urlsplit(self.path)
            reply = replies.get((url.path, frozenset(parse_qsl(url.query))))
            write_reply(self, *(reply or (404, "text/plain", b"not captured")))

        def log_message(self, *args):
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "nn.pem", d / "nn.key")
    server = start_server(Handler, ctx)
    yield {"url": f"https://localhost:{server.server_address[1]}", "ca": str(d / "ca.pem")}
    server.shutdown()


def _captured_replication() -> int:
    status = _captured()[("/webhdfs/v1" + FILE,
                          frozenset({("op", "GETFILESTATUS"), ("user.name", "root")}))]
    return json.loads(status[2])["FileStatus"]["replication"]


def test_webhdfs_over_https_verifies_against_the_ca_bundle(tls):
    actor = HdfsActor(make_client(tls["url"], user="root", ca_bundle=tls["ca"]))
    assert actor.replication(FILE) == _captured_replication()


def test_https_without_the_ca_bundle_is_a_one_line_tls_error(tls):
    actor = HdfsActor(make_client(tls["url"], user="root"))
    with pytest.raises(HadoopError) as err:
        actor.replication(FILE)
    assert "TLS verification of the NameNode failed" in str(err.value)
    assert "\n" not in str(err.value)


def test_the_daemon_uses_the_ca_bundle_for_every_endpoint(tls, tmp_path):
    cfg = load_config(None, env={}, overrides={
        "state_dir": str(tmp_path), "cluster": {"rm": tls["url"], "webhdfs": tls["url"],
                                                "jhs": tls["url"], "user": "root",
                                                "ca_bundle": tls["ca"]}})
    daemon = Daemon(cfg)
    daemon.connect()
    health = daemon.ep.jmx.namenode_health()  # JMX over https, through the observe sessions
    assert health["num_live"] >= 1 and health["safe_mode"] is False
    assert daemon.actor.replication(FILE) == _captured_replication()
    assert all(e.session.verify == tls["ca"] for e in (daemon.ep.rm, daemon.ep.hdfs,
                                                       daemon.ep.jhs))
    # one way of following the NameNodes: the acting client's is the read endpoint's
    assert daemon.actor.client.namenodes is daemon.ep.hdfs


def test_a_missing_ca_bundle_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cluster.ca_bundle .* is not a file"):
        load_config(None, env={}, overrides={"cluster": {"ca_bundle": str(tmp_path / "no.pem")}})


def test_kerberos_client_has_the_configured_principal_and_mutual_auth():
    import requests
    import requests_kerberos
    from hdfs.ext.kerberos import KerberosClient

    client = kerberos_client("https://nn.example.com:9871", "dsbra/nn.example.com@EXAMPLE.COM",
                             "REQUIRED", requests.Session(), 10.0)
    assert isinstance(client, KerberosClient)
    auth = client._session.auth
    assert isinstance(auth, requests_kerberos.HTTPKerberosAuth)
    assert auth.principal == "dsbra/nn.example.com@EXAMPLE.COM"
    assert auth.mutual_authentication == requests_kerberos.REQUIRED
    observe = kerberos_auth(None, "DISABLED")
    assert observe.principal is None and observe.mutual_authentication == requests_kerberos.DISABLED


def test_kerberos_mutual_auth_is_validated():
    with pytest.raises(ConfigError, match="cluster.kerberos_mutual_auth must be one of"):
        load_config(None, env={}, overrides={"cluster": {"kerberos_mutual_auth": "SOMETIMES"}})


def test_kerberos_without_a_ticket_is_a_one_line_error_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-ticket'}")
    config = tmp_path / "dsbra.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "st"), "http": {"enabled": False},
        "cluster": {"rm": "http://127.0.0.1:1", "webhdfs": "http://127.0.0.1:1",
                    "jhs": "http://127.0.0.1:1", "kerberos": True,
                    "kerberos_principal": "dsbra@EXAMPLE.COM"}}))
    proc = subprocess.run([sys.executable, "-m", "dsbra", "run", "--config", str(config),
                           "--once"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "cluster.kerberos: no valid Kerberos ticket for dsbra@EXAMPLE.COM" in lines[0]
    assert "kinit" in lines[0]


@pytest.fixture
def plain_http_port():
    """A port whose server answers in plain HTTP whatever it is sent: a client speaking https
    to it sees its handshake broken (as when a DataNode closes one under load). Yields
    (port, the connections it answered so far)."""
    listener = socket.create_server(("127.0.0.1", 0))
    answered = []

    def answer_in_plain_http():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed at teardown
                return
            answered.append(conn)
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer_in_plain_http, daemon=True).start()
    yield listener.getsockname()[1], answered
    listener.close()


def test_a_broken_handshake_is_a_tls_error_naming_the_peer_not_a_verification_failure(plain_http_port):
    """A one-line error with no exception name, so the round retries; only a certificate the
    CA bundle does not verify is the configuration error above."""
    port, _ = plain_http_port
    actor = HdfsActor(make_client(f"https://127.0.0.1:{port}", user="root"))
    with pytest.raises(HadoopError) as err:
        actor.replication(FILE)
    assert str(err.value).startswith(f"WebHDFS GETFILESTATUS {FILE}: TLS error with 127.0.0.1:{port}: ")
    assert "WRONG_VERSION_NUMBER" in str(err.value) and "\n" not in str(err.value)
    assert err.value.exception is None


def test_a_broken_handshake_with_a_rest_endpoint_is_no_verification_failure(plain_http_port):
    """The REST clients (ResourceManager, JobHistoryServer, JMX, WebHDFS reads) tell the two
    apart too; with an HA pair the broken one is passed for the next."""
    port, _ = plain_http_port
    rm = ResourceManager(f"https://127.0.0.1:{port}")
    with pytest.raises(HadoopError) as err:
        rm.get_json("/ws/v1/cluster/info")
    assert str(err.value).startswith(f"ResourceManager at https://127.0.0.1:{port}: TLS error: ")
    assert "WRONG_VERSION_NUMBER" in str(err.value) and "\n" not in str(err.value)
    assert "verification" not in str(err.value)


def _apply_daemon(tmp_path, url: str, **cluster) -> Daemon:
    """An apply-mode daemon whose WebHDFS actor talks to ``url``, before its first round."""
    cfg = load_config(None, env={}, overrides={"mode": "apply", "state_dir": str(tmp_path),
                                               "cluster": {"webhdfs": url, "user": "root"}})
    daemon = Daemon(cfg)
    daemon.actor = HdfsActor(make_client(url, user="root", **cluster))
    return daemon


def test_the_cluster_lock_at_start_is_tried_again_after_a_broken_handshake(
        plain_http_port, tmp_path, monkeypatch, caplog):
    """A NameNode that could not be asked (here: every handshake broken) is asked again a few
    seconds later, three times in all, before the daemon starts without the lock."""
    port, answered = plain_http_port
    monkeypatch.setattr(service, "START_LOCK_RETRY_S", 0.01)
    caplog.set_level("INFO", logger="dsbra.daemon")
    _apply_daemon(tmp_path, f"https://127.0.0.1:{port}")._take_cluster_lock_at_start()
    lines = [r.getMessage() for r in caplog.records]
    attempts = [m.split(" failed")[0] for m in lines if m.startswith("cluster lock: attempt")]
    assert attempts == ["cluster lock: attempt 1 of 3", "cluster lock: attempt 2 of 3"]
    warnings = [m for m in lines if "start without the cluster lock" in m]
    assert len(warnings) == 1 and "TLS error with" in warnings[0]
    assert len(answered) == service.START_LOCK_ATTEMPTS


def test_a_refused_tls_verification_at_start_is_not_tried_again(tls, tmp_path, monkeypatch,
                                                                 caplog):
    """A certificate the CA bundle does not verify is a configuration error: asking again
    changes nothing, so the daemon starts without the lock at once (and says why)."""
    monkeypatch.setattr(service, "START_LOCK_RETRY_S", 0.01)
    caplog.set_level("INFO", logger="dsbra.daemon")
    _apply_daemon(tmp_path, tls["url"])._take_cluster_lock_at_start()
    lines = [r.getMessage() for r in caplog.records]
    assert not [m for m in lines if "cluster lock: attempt" in m]
    warnings = [m for m in lines if "start without the cluster lock" in m]
    assert len(warnings) == 1 and "TLS verification of the NameNode failed" in warnings[0]
