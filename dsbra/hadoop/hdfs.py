"""WebHDFS through the ``hdfs`` package (HdfsCLI): the calls that change HDFS (the daemon's
replication changes, its cluster lock) and the reads they need, every failure a HadoopError.

HdfsCLI's ``HdfsError`` carries the Java exception name in ``.exception``; we keep it, so the
daemon can tell ``SafeModeException`` from ``FileNotFoundException`` from a refused connection.
Kerberos (SPNEGO) goes through ``hdfs.ext.kerberos.KerberosClient`` (needs the ``kerberos``
extra); TLS through a CA bundle given to the session's ``verify`` (:mod:`dsbra.hadoop.auth`).
"""

from __future__ import annotations

import functools
import time
import types
from collections import deque
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

import requests

from dsbra.errors import HadoopError
from dsbra.hadoop.auth import check_ticket, secure_session
from dsbra.hadoop.rest import Failover, NotActive, innermost_cause, standby_exception


#: HadoopError.exception of a call the NameNode's TLS or SPNEGO refused: a configuration error
ACCESS_REFUSED = "AccessRefused"


def make_client(namenodes: str | Iterable[str] | Failover, *, user: str | None = None,
                session: requests.Session | None = None, kerberos: bool = False,
                principal: str | None = None, mutual_auth: str = "OPTIONAL",
                ca_bundle: str | None = None, timeout_s: float | None = 10.0):
    """An HdfsCLI client for the NameNode web URLs ``namenodes`` (http or https; a list, or
    comma-separated as `dsbra cluster env` and the daemon's ``cluster.webhdfs`` give them, or
    the :class:`Failover` of a read endpoint, whose choice of NameNode it then shares). Its
    requests to a NameNode follow the HA pair by :meth:`Failover.follow`, the rule of every
    dsbra client; HdfsCLI itself sees one URL. ``session``: one already set up for the cluster
    (TLS, SPNEGO), else a new one; ``ca_bundle`` verifies https against that CA; with
    ``kerberos``, HdfsCLI's ``KerberosClient`` (SPNEGO as ``principal``, default: the ticket
    cache's), after checking that a ticket is there, so a missing one is an error at start,
    not in every round."""
    import hdfs

    session = session or requests.Session()
    secure_session(session, ca_bundle=ca_bundle)  # SPNEGO: KerberosClient installs its own auth
    if kerberos:
        check_ticket(principal)
        return kerberos_client(namenodes, principal, mutual_auth, session, timeout_s)
    return _following(hdfs.InsecureClient)(_namenodes(namenodes), user=user, session=session,
                                           timeout=timeout_s)


def kerberos_client(namenodes: str | Iterable[str] | Failover, principal: str | None,
                    mutual_auth: str, session: requests.Session, timeout_s: float | None):
    """HdfsCLI's ``KerberosClient``, following the NameNodes as :func:`make_client`'s do:
    SPNEGO on ``session`` (mutual authentication as given)."""
    from hdfs.ext.kerberos import KerberosClient

    extra = {"principal": principal} if principal else {}
    return _following(KerberosClient)(_namenodes(namenodes), mutual_auth=mutual_auth,
                                      session=session, timeout=timeout_s, **extra)


def _namenodes(namenodes: str | Iterable[str] | Failover) -> Failover:
    return namenodes if isinstance(namenodes, Failover) else Failover(namenodes, service="WebHDFS")


class _FollowsNameNodes:
    """Mixed into an HdfsCLI client class: each request to a NameNode goes through
    ``namenodes.follow`` to the one that answered last; a request to a DataNode (where a
    NameNode redirected CREATE or OPEN) goes as it is. HdfsCLI's own loop over its URLs sees
    only the current one, so it never fails over by itself."""

    def __init__(self, namenodes: Failover, **kw):
        self.namenodes = namenodes
        super().__init__(namenodes.base_url, **kw)

    @property
    def _urls(self) -> deque:
        return deque([self.namenodes.base_url])

    @_urls.setter
    def _urls(self, _value) -> None:
        """HdfsCLI's constructor sets its rotating list; the Failover holds that state."""

    def _request(self, method, url, **kw):
        nodes = self.namenodes
        base = next((u for u in nodes.urls if url.startswith(u + "/")), None)
        if base is None:
            return super()._request(method, url, **kw)
        rest = url[len(base):]
        send = super()._request

        def attempt(namenode: str):
            try:
                resp = send(method, namenode + rest, **kw)
            except requests.exceptions.SSLError as exc:
                if "CERTIFICATE_VERIFY_FAILED" in str(exc):  # a configuration error: no failover
                    raise
                raise NotActive(HadoopError(f"TLS error with {_peer(exc)}: "
                                            f"{innermost_cause(exc)}")) from exc
            except (requests.ConnectionError, requests.Timeout) as exc:
                raise NotActive(HadoopError(f"cannot reach the NameNode at {namenode} "
                                            f"({type(exc).__name__})")) from exc
            if len(nodes.urls) > 1 and standby_exception(resp):
                raise NotActive(HadoopError(f"{namenode} is a standby", status=resp.status_code,
                                            exception="StandbyException"))
            return resp

        return nodes.follow(attempt)  # HdfsActor._call names the operation


@functools.cache
def _following(client_class: type) -> type:
    """``client_class`` with :class:`_FollowsNameNodes` mixed in (one class per base)."""
    return types.new_class(f"Following{client_class.__name__}", (_FollowsNameNodes, client_class))


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
        except HadoopError as exc:  # from Failover.follow: no NameNode answered as active
            raise HadoopError(f"WebHDFS {what}: {exc}", exception=exc.exception,
                              status=exc.status) from None
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
            # HdfsCLI has no call for this op; its request follows the NameNodes as its calls do
            url = self.client.namenodes.base_url + "/webhdfs/v1" + quote(path)
            resp = self.client._request("GET", url, params={
                "op": "GET_BLOCK_LOCATIONS", "offset": 0, "length": 2**62})
            if not resp.ok:
                raise _to_error(resp)
            return resp.json()
        doc = self._call(f"GET_BLOCK_LOCATIONS {path}", get)
        blocks = (doc.get("LocatedBlocks") or {}).get("locatedBlocks") or []
        return [len(b.get("locations") or []) for b in blocks]
