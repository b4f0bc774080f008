"""dsbra on a Kerberized TLS cluster (`dsbra cluster up --kerberos --tls`, issue 23): real
daemons logged in from keytabs of the cluster's own KDC, SPNEGO and https on every web
endpoint, SASL on block transfer, grep jobs with delegation tokens.

On test_secure_ha.py's cluster (the same Kerberos and TLS set-up, with HA; one bring-up for
both modules, in the second slot), with test_daemon.py's hot and cold files. First the
refusals: a missing keytab, an out-of-date one, a wrong principal and an untrusted certificate
each stop `dsbra run --apply` in one line with nothing changed in HDFS. Then `dsbra conf check`
and `dsbra observe` through SPNEGO and the CA. The daemon's own run on a Kerberized cluster,
raising hot files with tickets shorter than its run, is test_secure_ha.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsbra.cluster import cluster as cl
from dsbra.cluster import security as sec
from dsbra.daemon.config import bundled_cluster_section
from harness import BASE, HOT, HOT_PROFILE, SECURE_HA_SPEC, WINDOW_S, Daemon, replication

pytestmark = [pytest.mark.cluster, pytest.mark.secure]

#: the bundled secure cluster's hadoop.http.authentication.token.validity: how long a SPNEGO
#: login's cookie lasts, so the daemon logs in again every minute, with the ticket it has then
COOKIE_VALIDITY_S = 60


@pytest.fixture(scope="module")
def secure_cluster(secure_ha_cluster):
    """conftest's secure_ha_cluster as (layout, env, HDFS client, the active NameNode's and RM's
    URLs)."""
    layout, env, client, session = secure_ha_cluster
    active = {"namenode": SECURE_HA_SPEC.namenode_urls[cl.active_namenode(SECURE_HA_SPEC, session)],
              "rm": SECURE_HA_SPEC.rm_urls[cl.active_rm(SECURE_HA_SPEC, session)]}
    return layout, env, client, active


def _daemon(tmp_path, env, name: str, **cluster) -> Daemon:
    cfg = {"mode": "apply", "interval_s": WINDOW_S, "poll_s": 3, "state_dir": str(tmp_path / name),
           "cluster": bundled_cluster_section(env) | cluster,
           "http": {"enabled": False}, "policy": HOT_PROFILE}
    return Daemon.configure(tmp_path, name, cfg, _daemon_env(env))


def _daemon_env(env) -> dict[str, str]:
    """The daemon's environment: the realm's krb5.conf, and no ticket cache of anyone else's."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("KRB5")}
    return {**out, "KRB5_CONFIG": env["kerberos"]["krb5_conf"]}


def _run_once(daemon: Daemon) -> subprocess.CompletedProcess:
    return daemon.once("--apply")


def _refused_in_one_line(proc: subprocess.CompletedProcess, *expected: str) -> None:
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("dsbra: error:")]
    assert len(lines) == 1, proc.stderr[-2000:]
    for text in expected:
        assert text in lines[0], lines[0]


def _stale_keytab(layout, tmp_path) -> str:
    """A keytab whose key the KDC no longer has: written, then the principal's key changed."""
    keytab = tmp_path / "stale.keytab"
    principal = f"stale@{sec.REALM}"
    sec.kadmin(sec.security_paths(layout), f"addprinc -randkey {principal}",
               f"ktadd -k {keytab} {principal}", f"cpw -randkey {principal}")
    return str(keytab)


def _foreign_ca(tmp_path) -> str:
    pem = tmp_path / "foreign-ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout",
                    str(tmp_path / "foreign-ca.key"), "-out", str(pem), "-subj", "/CN=not the cluster's CA"],
                   check=True, capture_output=True)
    return str(pem)


@pytest.mark.parametrize("case", ["missing keytab", "stale keytab", "wrong principal", "untrusted certificate"])
def test_a_bad_credential_is_a_one_line_refusal_and_changes_nothing(secure_cluster, tmp_path, case):
    layout, env, client, _ = secure_cluster
    if case == "missing keytab":
        cluster, expected = {"keytab": str(tmp_path / "none.keytab")}, ["is not a readable file"]
    elif case == "stale keytab":
        cluster = {"keytab": _stale_keytab(layout, tmp_path), "kerberos_principal": f"stale@{sec.REALM}"}
        expected = [f"cannot log in as stale@{sec.REALM}", "Decrypt integrity check failed"]
    elif case == "wrong principal":
        cluster, expected = {"kerberos_principal": f"nobody@{sec.REALM}"}, [f"cannot log in as nobody@{sec.REALM}"]
    else:
        cluster, expected = {"ca_bundle": _foreign_ca(tmp_path)}, ["TLS verification of the NameNode failed"]
    daemon = _daemon(tmp_path, env, "bad", **cluster)
    _refused_in_one_line(_run_once(daemon), *expected)
    assert replication(client) == BASE
    assert not (daemon.state / "journal.jsonl").exists()


def test_the_web_endpoints_refuse_anonymous_and_plain_http(secure_cluster):
    import requests

    from dsbra.hadoop.auth import kerberos_auth

    _, env, _, active = secure_cluster
    for url in (f"{active['namenode']}/jmx", f"{active['rm']}/ws/v1/cluster/info",
                f"{env['jhs']}/ws/v1/history/info", f"{active['namenode']}/webhdfs/v1/?op=GETFILESTATUS"):
        assert requests.get(url, verify=env["ca_bundle"], timeout=10).status_code == 401, url
        # with SPNEGO it answers, and the login's cookie expires within COOKIE_VALIDITY_S
        session = requests.Session()
        session.auth = kerberos_auth(sec.client_principal())
        assert session.get(url, verify=env["ca_bundle"], timeout=10).status_code == 200, url
        cookie = dict(part.split("=", 1) for part in session.cookies["hadoop.auth"].strip('"').split("&"))
        assert 0 < int(cookie["e"]) / 1000 - time.time() <= COOKIE_VALIDITY_S, (url, cookie)
    with pytest.raises(requests.ConnectionError):
        requests.get(active["namenode"].replace("https://", "http://") + "/jmx", timeout=10)


def _security_flags(env) -> list[str]:
    krb = env["kerberos"]
    return ["--ca-bundle", env["ca_bundle"], "--kerberos", "--principal", krb["principal"],
            "--keytab", krb["keytab"]]


def test_conf_check_and_observe_work_through_spnego_and_the_ca(secure_cluster):
    _, env, _, active = secure_cluster
    check = subprocess.run([sys.executable, "-m", "dsbra", "conf", "check", "--rm", active["rm"], "--nn",
                            active["namenode"], "--rendered", env["conf_dir"], *_security_flags(env)],
                           capture_output=True, text=True, timeout=120, env=_daemon_env(env))
    assert check.returncode == 0 and "no difference from the live cluster" in check.stdout, \
        check.stdout + check.stderr[-2000:]
    observe = subprocess.run([sys.executable, "-m", "dsbra", "observe", "--history", "--window-s", "600",
                              "--rm", env["rm"], "--webhdfs", env["namenode"], "--jhs", env["jhs"],
                              *_security_flags(env)],
                             capture_output=True, text=True, timeout=120, env=_daemon_env(env))
    assert observe.returncode == 0, observe.stderr[-2000:]
    doc = json.loads(observe.stdout)
    assert sorted(doc["live_nodes"]) == sorted(w["host"] for w in env["workers"]), observe.stdout[:2000]


def test_spark_runs_on_delegation_tokens_and_its_history_takes_spnego(secure_ha_cluster):
    """--spark on the Kerberized https HA cluster: the spark-submit wrapper logs in as the
    cluster's client and a PySpark grep runs on the delegation tokens it took; the History
    Server, logged in as its own principal, reads the event log and answers SPNEGO only; the
    Spark collector reads every task through SPNEGO and the CA, each with the file the audit log
    of the active NameNode gives it."""
    import requests

    from dsbra.hadoop.auth import secure_session
    from dsbra.hadoop.rest import ResourceManager, SparkApi
    from dsbra.observe import spark as sp

    layout, env, client, cluster_session = secure_ha_cluster
    assert requests.get(f"{env['spark_history']}/api/v1/version", timeout=10).status_code == 401
    session = requests.Session()
    secure_session(session, ca_bundle=env["ca_bundle"], kerberos=True, principal=sec.client_principal())
    active_nn = {"nn1": "namenode", "nn2": "namenode2"}[cl.active_namenode(SECURE_HA_SPEC, cluster_session)]
    collector = sp.SparkCollector(ResourceManager(list(SECURE_HA_SPEC.rm_urls.values()), session=session),
                                  SparkApi.proxy(list(SECURE_HA_SPEC.rm_urls.values()), session=session),
                                  SparkApi.history(env["spark_history"], session=session),
                                  sp.AuditTail.at_end(env["audit_logs"][active_nn]))
    grep = Path(__file__).resolve().parents[2] / "dsbra" / "bench" / "spark" / "grep.py"
    proc = subprocess.run([env["spark_submit"], "--conf", "spark.executor.instances=2", str(grep), "hot",
                           env["fs"] + HOT[0]], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "job 0 matches" in proc.stdout, proc.stdout
    app = next(w.strip(",.") for w in proc.stderr.split() if w.startswith("application_"))
    deadline = time.monotonic() + 120
    while app not in collector.done_apps:
        assert time.monotonic() < deadline, "the History Server never gave the application through SPNEGO"
        collector.poll()
        time.sleep(2)
    obs = [o for o in collector.take() if o.job_id == app]
    assert obs and all(o.path == HOT[0] and o.node for o in obs), obs
