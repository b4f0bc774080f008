"""Run by test_kerberos_kdc.py in a fresh process (KRB5_CONFIG, KRB5_KTNAME and KRB5CCNAME are
read when the Kerberos library starts): a NameNode stand-in that accepts only SPNEGO, checked
with gssapi against its keytab, replaying replies captured from the bundled cluster; then the
daemon, with ``cluster.kerberos: true``, connects to it with the ticket in KRB5CCNAME.

    python spnego_server.py STATE_DIR PRINCIPAL MUTUAL_AUTH   -> one JSON line on stdout
"""

from __future__ import annotations

import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import gssapi

from test_secure import FILE, _captured, start_server, write_reply

from dsbra.daemon.config import load_config
from dsbra.daemon.service import Daemon
from dsbra.errors import DsbraError


def _query(query) -> frozenset:
    """A query without ``user.name``: SPNEGO names the user, the captured insecure calls did not."""
    pairs = parse_qsl(query) if isinstance(query, str) else query
    return frozenset((k, v) for k, v in pairs if k != "user.name")


def serve(replies: dict, seen: list) -> ThreadingHTTPServer:
    server_creds = gssapi.Credentials(usage="accept")  # HTTP/localhost from KRB5_KTNAME

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 -- http.server's name
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Negotiate "):
                write_reply(self, 401, "text/plain", b"", (("WWW-Authenticate", "Negotiate"),))
                return
            ctx = gssapi.SecurityContext(creds=server_creds, usage="accept")
            answer = ctx.step(base64.b64decode(auth.split(" ", 1)[1]))
            seen.append(str(ctx.initiator_name))
            url = urlsplit(self.path)
            mutual = (("WWW-Authenticate", "Negotiate " + base64.b64encode(answer).decode()),
                      ) if answer else ()
            write_reply(self, *replies.get((url.path, _query(url.query)),
                                           (404, "text/plain", b"not captured")), mutual)

        def log_message(self, *args):
            pass

    return start_server(Handler)


def main() -> None:
    state_dir, principal, mutual = sys.argv[1:4]
    seen: list[str] = []
    server = serve({(p, _query(q)): r for (p, q), r in _captured().items()}, seen)
    url = f"http://localhost:{server.server_address[1]}"
    out: dict = {}
    try:
        cfg = load_config(None, env={}, overrides={
            "state_dir": state_dir, "cluster": {
                "rm": url, "webhdfs": url, "jhs": url, "kerberos": True,
                "kerberos_principal": principal, "kerberos_mutual_auth": mutual}})
        daemon = Daemon(cfg)
        daemon.connect()
        out["replication"] = daemon.actor.replication(FILE)
        out["live_datanodes"] = daemon.ep.jmx.namenode_health()["num_live"]
    except DsbraError as exc:
        out["error"] = str(exc)
    out["initiators"] = sorted(set(seen))
    server.shutdown()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
