"""Record real Hadoop HTTP exchanges, and replay them later through ``requests``.

``Recorder`` is a transport adapter that forwards to the real network and keeps every
exchange; ``save`` writes them as a fixture directory (``manifest.json`` + one body file per
exchange). ``Replayer`` serves a fixture directory back, matching method, path and query
(ignoring parameters whose value depends on the clock, such as ``finishedTimeBegin``), so
unit tests and the benchmark run the real client code on responses a real cluster sent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from requests.structures import CaseInsensitiveDict

#: query parameters ignored when matching (their values come from the clock or the user)
VOLATILE = {"finishedTimeBegin", "user.name", "startedTimeBegin"}


def exchange_key(method: str, url: str) -> str:
    """The key a request is matched to its recorded answers by: method, path and the query
    without its volatile parameters."""
    parts = urlsplit(url)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                   if k not in VOLATILE)
    return json.dumps([method.upper(), parts.path, query])


class Recorder(HTTPAdapter):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.exchanges: list[dict] = []

    def send(self, request, **kw):
        resp = super().send(request, **kw)
        body = resp.content  # read now so the fixture has it
        self.exchanges.append({"method": request.method, "url": request.url,
                               "status": resp.status_code,
                               "headers": {k: v for k, v in resp.headers.items()
                                           if k.lower() in ("content-type", "location")},
                               "body": body, "at": time.time()})
        return resp

    def save(self, directory: Path, note: str) -> int:
        directory.mkdir(parents=True, exist_ok=True)
        entries = []
        for i, ex in enumerate(self.exchanges):
            name = f"{i:04d}.body"
            (directory / name).write_bytes(ex["body"])
            entries.append({k: ex[k] for k in ("method", "url", "status", "headers", "at")}
                           | {"body": name})
        (directory / "manifest.json").write_text(json.dumps(
            {"note": note, "exchanges": entries}, indent=1) + "\n")
        return len(entries)


class Replayer(BaseAdapter):
    """Serve recorded exchanges; a request seen several times is answered in recorded order,
    the last answer repeating. An unknown request is a 404 with a RemoteException body naming
    it (as a real server would answer an unknown path), and is counted in ``misses``."""

    def __init__(self, directory: Path):
        super().__init__()
        self.directory = Path(directory)
        manifest = json.loads((self.directory / "manifest.json").read_text())
        self.answers: dict[str, list[dict]] = {}
        for ex in manifest["exchanges"]:
            self.answers.setdefault(exchange_key(ex["method"], ex["url"]), []).append(ex)
        self.served: dict[str, int] = {}
        self.misses: list[str] = []
        self._bodies: dict[str, bytes] = {}

    def body(self, name: str) -> bytes:
        if name not in self._bodies:
            self._bodies[name] = (self.directory / name).read_bytes()
        return self._bodies[name]

    def send(self, request, **kw):
        key = exchange_key(request.method, request.url)
        options = self.answers.get(key)
        resp = requests.Response()
        resp.request = request
        resp.url = request.url
        if not options:
            self.misses.append(key)
            resp.status_code = 404
            resp.headers = CaseInsensitiveDict({"Content-Type": "application/json"})
            resp._content = json.dumps({"RemoteException": {
                "exception": "NotCapturedException", "message": f"not in fixture: {key}"}}).encode()
            return resp
        n = self.served.get(key, 0)
        self.served[key] = n + 1
        ex = options[min(n, len(options) - 1)]
        resp.status_code = ex["status"]
        resp.headers = CaseInsensitiveDict(ex["headers"])
        resp._content = self.body(ex["body"])
        resp.encoding = "utf-8"
        return resp

    def close(self):
        pass


def session_for(adapter) -> requests.Session:
    s = requests.Session()
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s
