"""The secure cluster's own Kerberos realm and TLS material (`dsbra cluster up --kerberos --tls`).

Kerberos: an MIT KDC (krb5kdc from Debian's krb5-kdc) with a database made by kdb5_util and
principals and keytabs made by kadmin.local: per host its services (nn, rm, jhs on the master,
where an --ha cluster's second NameNode, second RM and ZKFCs use them too; dn, nm and with
--ha nn for a JournalNode on a worker) and HTTP (SPNEGO), each in that host's keytab; ``dsbra`` (the daemon's
keytab) and the local user (the cluster's own client: job submission, test data). Each host's
name is its IP address and there is no DNS, so every principal names the address
(nn/10.77.0.1@DSBRA.CLUSTER), no config says _HOST, and krb5.conf turns off canonicalisation
(rdns, dns_canonicalize_hostname) and maps each address to the realm. The KDC listens in the
root namespace; workers reach it at the master's address.

TLS: openssl makes a CA and one server certificate naming every host's address (subjectAltName
IP entries, which Java's and Python's hostname checks both read); keytool puts them into
PKCS12 key and trust stores for Hadoop's ssl-server.xml and ssl-client.xml. Python clients
verify against the CA's PEM file (``ca_bundle``).

Everything lives in <state dir>/security and is made anew at each `up`.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from dsbra.cluster.paths import StateLayout
from dsbra.cluster.processes import terminate
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ClusterError

REALM = "DSBRA.CLUSTER"
#: the KDC's port before --port-offset (TCP and UDP, on every root-namespace address)
KDC_PORT = 10088
#: the dsbra daemon's principal; its keytab is <state dir>/security/keytabs/dsbra.keytab
DSBRA_PRINCIPAL = f"dsbra@{REALM}"
#: enctypes both MIT krb5 and Java 17 take
ENCTYPES = "aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal"
KERBEROS_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")
TLS_TOOLS = ("openssl", "keytool")
CERT_DAYS = 30


@dataclass(frozen=True)
class SecurityPaths:
    root: Path

    @property
    def kdc_dir(self) -> Path:
        return self.root / "kdc"

    @property
    def krb5_conf(self) -> Path:
        return self.root / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        return self.kdc_dir / "kdc.conf"

    @property
    def kdc_pid_file(self) -> Path:
        return self.kdc_dir / "krb5kdc.pid"

    def keytab(self, host: str) -> Path:
        """host: 'master', a worker name ('w1'), 'dsbra' or 'client'."""
        return self.root / "keytabs" / f"{host}.keytab"

    @property
    def client_ccache(self) -> Path:
        """The cluster client's ticket cache (Java reads FILE caches only)."""
        return self.root / "client.ccache"

    @property
    def tls_dir(self) -> Path:
        return self.root / "tls"

    @property
    def ca_pem(self) -> Path:
        return self.tls_dir / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.tls_dir / "keystore.p12"

    @property
    def truststore(self) -> Path:
        return self.tls_dir / "truststore.p12"

    @property
    def store_password_file(self) -> Path:
        return self.tls_dir / "store-password"


def security_paths(layout: StateLayout) -> SecurityPaths:
    return SecurityPaths(layout.root / "security")


def client_principal() -> str:
    """The cluster's own client (job submission, `dsbra cluster` readiness checks): the local
    user, so HDFS and YARN see the same user name as on the plain cluster."""
    return f"{getpass.getuser()}@{REALM}"


def kdc_port(spec: ClusterSpec) -> int:
    return KDC_PORT + spec.port_offset


def host_principals(spec: ClusterSpec) -> dict[str, list[str]]:
    """Keytab name -> the principals it holds."""
    m = spec.master
    # --spark: the Spark History Server's own principal (dsbra.cluster.spark.HISTORY_SERVICE)
    services = ("nn", "rm", "jhs", "HTTP") + (("spark",) if spec.spark else ())
    out = {"master": [f"{svc}/{m}@{REALM}" for svc in services]}
    journal_hosts = {w.host for w in spec.journal_nodes}
    for w in spec.worker_list:
        # a JournalNode runs as the NameNodes' service name (as production's hdfs/<host> for
        # both): it serves edits to a requestor whose short name is its own, and the JournalNode
        # sees a NameNode's SPNEGO login by its short name (nn), not its full principal
        services = ("dn", "nm", "HTTP") + (("nn",) if w.host in journal_hosts else ())
        out[w.name] = [f"{svc}/{w.host}@{REALM}" for svc in services]
    out["dsbra"] = [DSBRA_PRINCIPAL]
    out["client"] = [client_principal()]
    return out


def check_tools(spec: ClusterSpec) -> None:
    needed = (KERBEROS_TOOLS if spec.kerberos else ()) + (TLS_TOOLS if spec.tls else ())
    missing = [t for t in needed if shutil.which(t) is None]
    if missing:
        raise ClusterError(f"--kerberos/--tls need {', '.join(missing)}: apt-get install -y krb5-kdc "
                           "krb5-admin-server krb5-user openssl (keytool comes with the JDK)")


def krb5_conf_text(spec: ClusterSpec) -> str:
    hosts = [spec.master] + [w.host for w in spec.worker_list]
    mapping = "\n".join(f"  {h} = {REALM}" for h in hosts)
    return f"""# rendered by dsbra for the bundled cluster's realm; do not edit
[libdefaults]
  default_realm = {REALM}
  dns_lookup_kdc = false
  dns_lookup_realm = false
  dns_canonicalize_hostname = false
  rdns = false
  udp_preference_limit = 1
  forwardable = true
[realms]
  {REALM} = {{
    kdc = {spec.master}:{kdc_port(spec)}
  }}
[domain_realm]
{mapping}
"""


def _run(args: list[str], env: dict | None = None, stdin: str | None = None, what: str = "") -> str:
    proc = subprocess.run(args, env=env, input=stdin, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        detail = " ".join((proc.stderr or proc.stdout).split())[:300]
        raise ClusterError(f"{what or args[0]} failed: {detail}")
    return proc.stdout


def kdc_env(paths: SecurityPaths) -> dict[str, str]:
    return {**os.environ, "KRB5_CONFIG": str(paths.krb5_conf), "KRB5_KDC_PROFILE": str(paths.kdc_conf)}


def kadmin(paths: SecurityPaths, *queries: str) -> str:
    """kadmin.local queries against the cluster's KDC database (one process for all)."""
    return _run(["kadmin.local", "-r", REALM], env=kdc_env(paths), stdin="\n".join(queries) + "\n",
                what="kadmin.local")


def make_realm(spec: ClusterSpec, paths: SecurityPaths) -> None:
    """The KDC's database, every principal with a random key, and the keytabs."""
    paths.kdc_dir.mkdir(parents=True, exist_ok=True)
    (paths.root / "keytabs").mkdir(parents=True, exist_ok=True)
    paths.krb5_conf.write_text(krb5_conf_text(spec))
    paths.kdc_conf.write_text(f"""[kdcdefaults]
  kdc_ports = {kdc_port(spec)}
  kdc_tcp_ports = {kdc_port(spec)}
[realms]
  {REALM} = {{
    database_name = {paths.kdc_dir}/principal
    key_stash_file = {paths.kdc_dir}/stash
    acl_file = {paths.kdc_dir}/kadm5.acl
    supported_enctypes = {ENCTYPES}
    max_life = 24h
    max_renewable_life = 7d
  }}
[logging]
  kdc = FILE:{paths.kdc_dir}/kdc.log
""")
    (paths.kdc_dir / "kadm5.acl").write_text("")
    _run(["kdb5_util", "create", "-s", "-r", REALM, "-P", secrets.token_hex(16)], env=kdc_env(paths),
         what="kdb5_util create")
    queries = []
    for keytab, principals in host_principals(spec).items():
        for principal in principals:
            queries.append(f"addprinc -randkey {principal}")
        queries.append(f"ktadd -k {paths.keytab(keytab)} {' '.join(principals)}")
    kadmin(paths, *queries)
    missing = [name for name in host_principals(spec) if not paths.keytab(name).is_file()]
    if missing:
        raise ClusterError(f"kadmin.local made no keytab for {', '.join(missing)}; see {paths.kdc_dir}")


def start_kdc(spec: ClusterSpec, paths: SecurityPaths, cwd: Path) -> int:
    """krb5kdc in the foreground of its own session; returns its pid once it takes connections."""
    log = paths.kdc_dir / "krb5kdc.out"
    with open(log, "ab") as out:
        proc = subprocess.Popen(["krb5kdc", "-n", "-r", REALM, "-P", str(paths.kdc_pid_file)],
                                env=kdc_env(paths), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection((spec.master, kdc_port(spec)), timeout=1).close()
            return proc.pid
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise ClusterError(f"krb5kdc did not start; see {paths.kdc_dir / 'kdc.log'} and {log}") from None
            time.sleep(0.1)


def is_our_kdc(pid: int, paths: SecurityPaths) -> bool:
    """True if pid is the krb5kdc started for this state dir (its pid file names the dir)."""
    try:
        return str(paths.kdc_pid_file).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def client_login(paths: SecurityPaths) -> None:
    """A ticket for the cluster's client in its FILE cache (the job clients' JVMs read it)."""
    env = {**kdc_env(paths), "KRB5CCNAME": str(paths.client_ccache)}
    _run(["kinit", "-kt", str(paths.keytab("client")), client_principal()], env=env,
         what="kinit of the cluster client")


def client_env(paths: SecurityPaths) -> dict[str, str]:
    """What a process needs to act as the cluster's client with the libraries of MIT krb5:
    gssapi takes a fresh ticket from the client keytab whenever the cache has none valid."""
    return {"KRB5_CONFIG": str(paths.krb5_conf), "KRB5CCNAME": str(paths.client_ccache),
            "KRB5_CLIENT_KTNAME": str(paths.keytab("client"))}


def client_login_env(paths: SecurityPaths) -> dict[str, str]:
    """A fresh ticket for the cluster's client, and :func:`client_env` to use it: what a client
    JVM (a job, haadmin) is started with."""
    client_login(paths)
    return client_env(paths)


@contextlib.contextmanager
def client_environment(paths: SecurityPaths):
    """:func:`client_env` set in this process (gssapi reads it from the environment), then
    put back as it was."""
    env = client_env(paths)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def make_tls(spec: ClusterSpec, paths: SecurityPaths) -> None:
    """A CA, one certificate for every host's address signed by it, and the Java stores."""
    d = paths.tls_dir
    d.mkdir(parents=True, exist_ok=True)
    password = secrets.token_hex(16)
    paths.store_password_file.write_text(password)
    paths.store_password_file.chmod(0o600)
    _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(CERT_DAYS),
          "-keyout", str(d / "ca.key"), "-out", str(paths.ca_pem), "-subj", "/CN=dsbra cluster CA",
          "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign"], what="openssl (the CA)")
    _run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "host.key"),
          "-out", str(d / "host.csr"), "-subj", f"/CN={spec.master}"], what="openssl (the request)")
    ips = [spec.master] + [w.host for w in spec.worker_list]
    (d / "host.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\nsubjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n"
        f"subjectAltName={','.join('IP:' + ip for ip in ips)}\n")
    _run(["openssl", "x509", "-req", "-in", str(d / "host.csr"), "-CA", str(paths.ca_pem),
          "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", str(CERT_DAYS),
          "-extfile", str(d / "host.ext"), "-out", str(d / "host.pem")], what="openssl (signing)")
    _run(["openssl", "pkcs12", "-export", "-in", str(d / "host.pem"), "-inkey", str(d / "host.key"),
          "-certfile", str(paths.ca_pem), "-name", "host", "-out", str(paths.keystore),
          "-passout", f"pass:{password}"], what="openssl pkcs12 (the key store)")
    _run(["keytool", "-importcert", "-noprompt", "-alias", "dsbra-ca", "-file", str(paths.ca_pem),
          "-keystore", str(paths.truststore), "-storetype", "PKCS12", "-storepass", password],
         what="keytool (the trust store)")


def prepare(spec: ClusterSpec, layout: StateLayout, data: dict, save) -> None:
    """Everything --kerberos/--tls needs before the daemons start: certificates, the realm, a
    running KDC (recorded in ``data['kdc']`` before anything else can fail) and the client's
    ticket."""
    paths = security_paths(layout)
    shutil.rmtree(paths.root, ignore_errors=True)
    paths.root.mkdir(parents=True)
    paths.root.chmod(0o700)
    if spec.tls:
        make_tls(spec, paths)
    if spec.kerberos:
        make_realm(spec, paths)
        data["kdc"] = {"pid": start_kdc(spec, paths, cwd=paths.kdc_dir), "log": str(paths.kdc_dir / "kdc.log")}
        save()
        client_login(paths)


def stop_kdc(layout: StateLayout, data: dict) -> None:
    kdc = data.get("kdc")
    if not kdc:
        return
    paths = security_paths(layout)
    if is_our_kdc(kdc["pid"], paths):
        terminate([kdc["pid"]], timeout=5.0)


def store_password(layout: StateLayout) -> str:
    return security_paths(layout).store_password_file.read_text().strip()


def client_session(spec: ClusterSpec, layout: StateLayout):
    """A requests session for the cluster's web endpoints: the cluster's CA with --tls, SPNEGO
    as the cluster's client with --kerberos (use it inside :func:`client_environment`)."""
    import requests

    from dsbra.hadoop.auth import secure_session

    session = requests.Session()
    secure_session(session, ca_bundle=str(security_paths(layout).ca_pem) if spec.tls else None,
                   kerberos=spec.kerberos, principal=client_principal() if spec.kerberos else None)
    return session
