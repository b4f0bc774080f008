"""Kerberos against a real KDC: MIT krb5kdc from Debian, a realm made here, a user ticket from
kinit, and a SPNEGO NameNode stand-in that checks the daemon's tokens with its keytab.

What is real: the KDC, the tickets, gssapi on both sides, the daemon's clients (HdfsCLI's
KerberosClient for WebHDFS, requests_kerberos for JMX). What is not: the NameNode, which is a
replay of replies captured from the bundled cluster (spnego_server.py); a Kerberized Hadoop
cluster is not built here.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_secure import _captured_replication

HERE = Path(__file__).resolve().parent
REALM = "DSBRA.TEST"
USER = f"dsbra@{REALM}"
PASSWORD = "dsbra-test-password"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def kdc(tmp_path_factory):
    """A running KDC for REALM with the user and HTTP/localhost (keytab); yields the env."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"MIT Kerberos not installed ({', '.join(missing)}; make setup installs it)")
    d = tmp_path_factory.mktemp("kdc")
    port = _free_port()
    (d / "krb5.conf").write_text(f"""[libdefaults]
  default_realm = {REALM}
  dns_lookup_kdc = false
  dns_lookup_realm = false
  dns_canonicalize_hostname = false
  rdns = false
  udp_preference_limit = 1
[realms]
  {REALM} = {{
    kdc = 127.0.0.1:{port}
  }}
[domain_realm]
  localhost = {REALM}
""")
    (d / "kdc.conf").write_text(f"""[kdcdefaults]
  kdc_ports = {port}
  kdc_tcp_ports = {port}
[realms]
  {REALM} = {{
    database_name = {d}/principal
    key_stash_file = {d}/stash
    acl_file = {d}/kadm5.acl
    max_life = 1h
  }}
[logging]
  kdc = FILE:{d}/kdc.log
""")
    (d / "kadm5.acl").write_text("")
    env = {**os.environ, "KRB5_CONFIG": str(d / "krb5.conf"),
           "KRB5_KDC_PROFILE": str(d / "kdc.conf"), "KRB5CCNAME": f"FILE:{d}/ccache",
           "KRB5_KTNAME": f"FILE:{d}/http.keytab"}

    def run(*args, stdin=None):
        subprocess.run(args, env=env, input=stdin, check=True, capture_output=True, text=True,
                       timeout=60)

    run("kdb5_util", "create", "-s", "-r", REALM, "-P", "master-test-password")
    run("kadmin.local", "-r", REALM, "-q", f"addprinc -pw {PASSWORD} {USER}")
    run("kadmin.local", "-r", REALM, "-q", "addprinc -randkey HTTP/localhost")
    run("kadmin.local", "-r", REALM, "-q", f"ktadd -k {d}/http.keytab HTTP/localhost")
    proc = subprocess.Popen(["krb5kdc", "-n", "-r", REALM], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError((d / "kdc.log").read_text() if (d / "kdc.log").exists()
                                       else "krb5kdc did not start") from None
                time.sleep(0.2)
        run("kinit", USER, stdin=PASSWORD + "\n")
        yield {"env": env, "dir": d}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _daemon_against_spnego(kdc, state_dir: Path, mutual: str, env=None) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / "spnego_server.py"), str(state_dir), USER,
                           mutual], env={**(env or kdc["env"]), "PYTHONPATH": str(HERE)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mutual", ["REQUIRED", "OPTIONAL"])
def test_the_daemon_authenticates_with_a_ticket_from_a_real_kdc(kdc, tmp_path, mutual):
    out = _daemon_against_spnego(kdc, tmp_path, mutual)
    assert "error" not in out, out["error"]
    # WebHDFS (HdfsCLI's KerberosClient) and JMX (requests_kerberos) got through SPNEGO; with
    # REQUIRED the client also checked the server's token
    assert out["replication"] == _captured_replication()
    assert out["live_datanodes"] >= 1
    assert out["initiators"] == [USER]  # the stand-in saw the user's principal, nothing else


def test_without_the_ticket_the_daemon_stops_with_one_line(kdc, tmp_path):
    env = {**kdc["env"], "KRB5CCNAME": f"FILE:{tmp_path / 'empty-ccache'}"}
    out = _daemon_against_spnego(kdc, tmp_path, "REQUIRED", env=env)
    assert out["initiators"] == []  # refused before any request
    assert out["error"].startswith(f"cluster.kerberos: no valid Kerberos ticket for {USER}")
    assert "\n" not in out["error"]


LOGIN_ACROSS_EXPIRY = """
import sys, time
import gssapi
from dsbra.hadoop.auth import login_from_keytab
keytab, principal, wait_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
login_from_keytab(keytab, principal)
name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
first = gssapi.Credentials(name=name, usage="initiate").lifetime
time.sleep(wait_s)
later = gssapi.Credentials(name=name, usage="initiate")
ctx = gssapi.SecurityContext(name=gssapi.Name("HTTP@localhost", gssapi.NameType.hostbased_service),
                             creds=later, usage="initiate")
ctx.step()
print(first, later.lifetime)
"""


def test_a_keytab_login_outlives_its_tickets(kdc, tmp_path):
    """login_from_keytab with tickets of 4 s: 6 s later gssapi took a new one from the keytab by
    itself (no kinit) and a SPNEGO token for HTTP/localhost comes out of it."""
    keytab, principal = tmp_path / "daemon.keytab", f"daemon@{REALM}"
    env = {k: v for k, v in kdc["env"].items() if k != "KRB5CCNAME"}
    for query in (f'addprinc -randkey -maxlife "4 seconds" {principal}', f"ktadd -k {keytab} {principal}"):
        subprocess.run(["kadmin.local", "-r", REALM, "-q", query], env=env, check=True, capture_output=True)
    proc = subprocess.run([sys.executable, "-c", LOGIN_ACROSS_EXPIRY, str(keytab), principal, "6"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    first, later = map(int, proc.stdout.split())
    assert 0 < first <= 4 and 0 < later <= 4


def test_a_keytab_without_the_principal_is_one_line(kdc, tmp_path):
    env = {k: v for k, v in kdc["env"].items() if k != "KRB5CCNAME"}
    proc = subprocess.run([sys.executable, "-c", LOGIN_ACROSS_EXPIRY,
                           str(kdc["dir"] / "http.keytab"), f"nobody@{REALM}", "0"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert f"cluster.keytab: cannot log in as nobody@{REALM}" in proc.stderr.splitlines()[-1]
