"""WebHDFS through the ``hdfs`` package (HdfsCLI): the calls that change HDFS (the daemon's
replication changes, its cluster lock) and the reads they need, every failure a HadoopError.

HdfsCLI's ``HdfsError`` carries the Java exception name in ``.exception``; we keep it, so the
daemon can tell ``SafeModeException`` from ``FileNotFoundException`` from a refused connection.
Kerberos (SPNEGO) goes through ``hdfs.ext.kerberos.KerberosClient`` (needs the ``kerberos``
extra); TLS through a CA bundle given to the session's ``verify`` (:mod:`dsbra.hadoop.auth`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

import requests

from dsbra.errors import HadoopError
from dsbra.hadoop.auth import check_ticket, use_ca_bundle
from dsbra.hadoop.rest import innermost_cause, split_urls


#: HadoopError.exception of a call the NameNode's TLS or SPNEGO refused: a configuration error
ACCESS_REFUSED = "AccessRefused"


#: how HdfsCLI takes an HA pair's NameNodes: one string, the URLs joined by this
HDFSCLI_URL_SEPARATOR = ";"


def make_client(namenodes: str | Iterable[str], *, user: str | None = None,
                session: requests.Session | None = None, kerberos: bool = False,
                principal: str | None = None, mutual_auth: str = "OPTIONAL",
                ca_bundle: str | None = None, timeout_s: float | None = 10.0):
    """An HdfsCLI client for the NameNode web URLs ``namenodes`` (http or https; a list, or
    comma-separated as `dsbra cluster env` and the daemon's ``cluster.webhdfs`` give them):
    HdfsCLI passes a standby's StandbyException, or an unreachable NameNode, to the next URL
    and stays on the one that answered, as :class:`dsbra.hadoop.rest.Endpoint` does for the
    reads. ``session``: one already set up for the cluster (TLS, SPNEGO), else a new one;
    ``ca_bundle`` verifies https against that CA; with ``kerberos``, a ``KerberosClient`` (SPNEGO as ``principal``, default:
    the ticket cache's), after checking that a ticket is there, so a missing one is an error at
    start, not in every round."""
    import hdfs

    url = HDFSCLI_URL_SEPARATOR.join(split_urls(namenodes))
    session = session or requests.Session()
    if ca_bundle:
        use_ca_bundle(session, ca_bundle)
    if kerberos:
        check_ticket(principal)
        return kerberos_client(url, principal, mutual_auth, session, timeout_s)
    return hdfs.InsecureClient(url, user=user, session=session, timeout=timeout_s)


def kerberos_client(url: str, principal: str | None, mutual_auth: str,
                    session: requests.Session, timeout_s: float | None):
    """HdfsCLI's ``KerberosClient``: SPNEGO on ``session`` (mutual authentication as given)."""
    from hdfs.ext.kerberos import KerberosClient

    extra = {"principal": principal} if principal else {}
    return KerberosClient(url, mutual_auth=mutual_auth, session=session, timeout=timeout_s,
                          **extra)


def _peer(exc: requests.RequestException) -> str:
    """host:port of the request that failed (a DataNode, after a NameNode's redirect)."""
    url = urlsplit(exc.request.url) if exc.request is not None else None
    return url.netloc if url else "the NameNode"


class HdfsActor:
    """The two WebHDFS calls acting needs: read a file's status, set its replication."""

    def __init__(self, client):
        self.client = client

    def _call(self, what: str, fn, *args, **kw):
        from hdfs.util import HdfsError

        try:
            return fn(*args, **kw)
        except HdfsError as exc:
            name = getattr(exc, "exception", None)
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if name is None and text.startswith("Authentication failure"):  # HdfsCLI on a 401
                raise HadoopError(f"WebHDFS {what}: the NameNode refused the authentication "
                                  "(HTTP 401)", exception=ACCESS_REFUSED) from None
            raise HadoopError(f"WebHDFS {what}: {name + ': ' if name else ''}{text}",
                              exception=name) from None
        except requests.exceptions.SSLError as exc:
            if "CERTIFICATE_VERIFY_FAILED" in str(exc):
                raise HadoopError(f"WebHDFS {what}: TLS verification of the NameNode failed "
                                  "(cluster.ca_bundle names the CA that signed its certificate)",
                                  exception=ACCESS_REFUSED) from None
            # the handshake itself broke (a peer closing it under load, a DataNode a CREATE was
            # redirected to): not a configuration error, the next try may pass
            raise HadoopError(f"WebHDFS {what}: TLS error with {_peer(exc)}: "
                              f"{innermost_cause(exc)}") from None
        except requests.RequestException as exc:
            if type(exc).__name__ in ("KerberosExchangeError", "MutualAuthenticationError"):
                detail = " ".join(str(exc).split())[:300]
                raise HadoopError(f"WebHDFS {what}: SPNEGO with the NameNode failed: {detail}",
                                  exception=ACCESS_REFUSED) from None
            raise HadoopError(f"WebHDFS {what}: cannot reach the NameNode "
                              f"({type(exc).__name__})") from None

    def status(self, path: str) -> dict:
        """GETFILESTATUS (``replication``, ``length``, ``type``...)."""
        return self._call(f"GETFILESTATUS {path}", self.client.status, path)

    def replication(self, path: str) -> int:
        return int(self.status(path).get("replication", 0))

    def set_replication(self, path: str, replication: int) -> None:
        """SETREPLICATION; the NameNode schedules the copies (or the removal) itself."""
        self._call(f"SETREPLICATION {path}={replication}", self.client.set_replication, path,
                   replication)

    def create_new(self, path: str, text: str) -> bool:
        """CREATE without overwrite (atomic in the NameNode); False when the file exists."""
        try:
            self._call(f"CREATE {path}", self.client.write, path, data=text, overwrite=False,
                       encoding="utf-8")
        except HadoopError as exc:
            if exc.exception in ("FileAlreadyExistsException", "AlreadyBeingCreatedException"):
                return False
            raise
        return True

    def read_text(self, path: str) -> str:
        def read():
            with self.client.read(path, encoding="utf-8") as reader:
                return reader.read()
        return self._call(f"OPEN {path}", read)

    def delete(self, path: str) -> None:
        self._call(f"DELETE {path}", self.client.delete, path)

    def touch(self, path: str) -> None:
        """SETTIMES: the file's modification time to now."""
        self._call(f"SETTIMES {path}", self.client.set_times, path,
                   modification_time=int(time.time() * 1000))

    def live_replicas(self, path: str) -> list[int]:
        """Replicas the NameNode reports now, per block of the file (GET_BLOCK_LOCATIONS)."""
        from hdfs.client import _to_error

        def get():
            # HdfsCLI has no call for this op; like its own calls, a standby or an unreachable
            # NameNode passes to the next of its URLs
            hosts = list(self.client._urls)  # HdfsCLI's own order: the one that answered last first
            for host in hosts:
                url = host.rstrip("/") + "/webhdfs/v1" + quote(path)
                try:
                    resp = self.client._request("GET", url, params={
                        "op": "GET_BLOCK_LOCATIONS", "offset": 0, "length": 2**62})
                except requests.ConnectionError:
                    if host == hosts[-1]:
                        raise
                    continue
                if resp.ok:
                    return resp.json()
                error = _to_error(resp)
                if error.exception != "StandbyException" or host == hosts[-1]:
                    raise error
        doc = self._call(f"GET_BLOCK_LOCATIONS {path}", get)
        blocks = (doc.get("LocatedBlocks") or {}).get("locatedBlocks") or []
        return [len(b.get("locations") or []) for b in blocks]
