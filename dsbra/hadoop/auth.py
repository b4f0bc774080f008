"""How dsbra authenticates to Hadoop's web endpoints: TLS against the cluster's CA, Kerberos
(SPNEGO) from a ticket cache or a keytab. Shared by every client in :mod:`dsbra.hadoop`."""

from __future__ import annotations

import os
from pathlib import Path

import requests

from dsbra.errors import ConfigError

MUTUAL_AUTH = ("REQUIRED", "OPTIONAL", "DISABLED")  #: requests_kerberos' settings


def use_ca_bundle(session: requests.Session, ca_bundle: str) -> None:
    """Verify https against ``ca_bundle``. requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE
    override a session's ``verify`` (set on many hosts), so the environment is not consulted."""
    session.verify = ca_bundle
    session.trust_env = False


def kerberos_auth(principal: str | None = None, mutual_auth: str = "OPTIONAL"):
    """SPNEGO for the sessions of the observe endpoints (RM, JobHistoryServer, JMX)."""
    import requests_kerberos

    extra = {"principal": principal} if principal else {}
    return requests_kerberos.HTTPKerberosAuth(
        mutual_authentication=getattr(requests_kerberos, mutual_auth), **extra)


def secure_session(session: requests.Session, *, ca_bundle: str | None = None, kerberos: bool = False,
                   principal: str | None = None, mutual_auth: str = "OPTIONAL") -> None:
    """A session set for a TLS and/or Kerberized cluster: the one way every dsbra client
    (the daemon's and `dsbra observe`'s endpoints, `dsbra conf check`, the bundled cluster's own
    client, the benchmarks' reads) sets up its session."""
    if ca_bundle:
        use_ca_bundle(session, ca_bundle)
    if kerberos:
        session.auth = kerberos_auth(principal, mutual_auth)


def login_from_keytab(keytab: str, principal: str) -> None:
    """Log in as ``principal`` from ``keytab`` for the life of this process, through MIT
    krb5's client keytab: gssapi takes a ticket from the keytab into a private in-memory cache
    now, and takes a new one whenever the cache holds none valid (the ticket expired), so
    nothing has to run kinit. Every gssapi user in the process (HdfsCLI's KerberosClient,
    requests_kerberos) reads the cache and keytab from the environment set here. A keytab that
    is missing, without the principal or out of date is a ConfigError now."""
    path = Path(keytab)
    if not path.is_file() or not os.access(path, os.R_OK):
        raise ConfigError(f"cluster.keytab {keytab!r} is not a readable file")
    os.environ["KRB5_CLIENT_KTNAME"] = f"FILE:{path.resolve()}"
    os.environ["KRB5CCNAME"] = f"MEMORY:dsbra-{os.getpid()}"
    try:
        import gssapi
    except ImportError:
        raise ConfigError("cluster.keytab: needs the 'kerberos' extra "
                          "(pip install 'dsbra[kerberos]')") from None
    try:
        name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
        creds = gssapi.Credentials(name=name, usage="initiate", store={
            "client_keytab": os.environ["KRB5_CLIENT_KTNAME"], "ccache": os.environ["KRB5CCNAME"]})
        # a context toward the realm's own ticket service makes the KDC check the keytab's key
        realm = principal.rsplit("@", 1)[1] if "@" in principal else None
        target = gssapi.Name(f"krbtgt/{realm}@{realm}" if realm else "krbtgt",
                             gssapi.NameType.kerberos_principal)
        gssapi.SecurityContext(name=target, creds=creds, usage="initiate").step()
    except gssapi.exceptions.GSSError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"cluster.keytab: cannot log in as {principal} from {keytab}: {detail}") from None


def check_ticket(principal: str | None = None) -> None:
    """A ConfigError unless the Kerberos libraries are installed and hold a valid ticket."""
    try:
        import gssapi
        import hdfs.ext.kerberos  # noqa: F401 -- needs requests_kerberos
    except ImportError:
        raise ConfigError("cluster.kerberos: needs the 'kerberos' extra "
                          "(pip install 'dsbra[kerberos]')") from None
    try:
        name = gssapi.Name(principal, gssapi.NameType.kerberos_principal) if principal else None
        creds = gssapi.Credentials(name=name, usage="initiate")
        creds.lifetime  # noqa: B018 -- raises when the ticket expired
    except gssapi.exceptions.GSSError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"cluster.kerberos: no valid Kerberos ticket"
                          f"{' for ' + principal if principal else ''} (run kinit, or point "
                          f"KRB5CCNAME at a ticket cache): {detail}") from None
