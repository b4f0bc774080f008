"""The daemon's read-only HTTP endpoint: / (the status page, daemon/page.py), /metrics,
/healthz, /status, /heat (the placement plugin's heat document); localhost by default."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

log = logging.getLogger(__name__)


def serve(daemon, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            if path in ("/", "/index.html"):
                try:
                    body = daemon.page().encode()
                except Exception:  # noqa: BLE001 -- a page that fails must not take the daemon down
                    log.exception("status page failed")
                    self._reply(500, b"the status page failed; see the daemon's log\n", "text/plain")
                    return
                self._reply(200, body, "text/html; charset=utf-8")
            elif path == "/metrics":
                self._reply(200, generate_latest(daemon.metrics.registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = daemon.status.get("state") in ("starting", "running", "paused")
                self._reply(200 if ok else 503, b"ok\n" if ok else b"stopped\n", "text/plain")
            elif path == "/heat":
                heat = daemon.heat
                if heat is None:
                    self._reply(404, b"no round decided yet\n", "text/plain")
                else:
                    self._reply(200, json.dumps(heat).encode(), "application/json")
            elif path == "/status":
                self._reply(200, json.dumps(daemon.status, default=str).encode(),
                            "application/json")
            else:
                self._reply(404, b"not found\n", "text/plain")

        def _reply(self, code, body, ctype):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            log.debug("http " + fmt, *args)

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        from dsbra.errors import ConfigError

        raise ConfigError(f"config: http: cannot listen on {host}:{port}: {exc.strerror}") from None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="dsbra-http", daemon=True).start()
    log.info("http listening on %s:%d", host, server.server_address[1])
    return server
