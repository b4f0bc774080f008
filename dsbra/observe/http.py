"""One small ``requests.Session`` client per Hadoop REST protocol.

Every failure (refused connection, timeout, HTTP error, a body that is not the JSON promised)
becomes a :class:`dsbra.errors.HadoopError`; when the server sent a ``RemoteException`` body
its Java exception name is kept in ``.exception`` (e.g. ``SafeModeException``,
``FileNotFoundException``) so callers can branch on it, in the style of mtth/hdfs.

Each client counts its requests and response bytes (``stats``): the benchmark and the
collector's "requests grow with new work, not with history" target read them.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import requests

from dsbra.errors import HadoopError
from dsbra.observe import shapes

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0


@dataclass
class RequestStats:
    requests: int = 0
    bytes: int = 0
    seconds: float = 0.0
    by_kind: dict[str, int] = field(default_factory=dict)
    #: seconds and bytes per kind: what one source of evidence costs (app activities, say)
    seconds_by_kind: dict[str, float] = field(default_factory=dict)
    bytes_by_kind: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, nbytes: int, seconds: float) -> None:
        self.requests += 1
        self.bytes += nbytes
        self.seconds += seconds
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        self.seconds_by_kind[kind] = self.seconds_by_kind.get(kind, 0.0) + seconds
        self.bytes_by_kind[kind] = self.bytes_by_kind.get(kind, 0) + nbytes


def remote_exception(body: bytes | str) -> tuple[str | None, str | None]:
    """(Java exception simple name, message) from a ``{"RemoteException": {...}}`` body."""
    try:
        doc = json.loads(body)
    except (ValueError, TypeError):
        return None, None
    if not isinstance(doc, dict) or not isinstance(doc.get("RemoteException"), dict):
        return None, None
    rex = doc["RemoteException"]
    name = shapes.as_str(rex.get("exception")) or shapes.as_str(rex.get("javaClassName"))
    if name and "." in name:
        name = name.rsplit(".", 1)[1]
    return name, shapes.as_str(rex.get("message"))


class Endpoint:
    """A base URL plus a session; ``get_json``/``get_bytes`` with uniform error handling."""

    service = "Hadoop"

    def __init__(self, base_url: str, *, session: requests.Session | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, stats: RequestStats | None = None):
        if not base_url or "://" not in base_url:
            raise HadoopError(f"{self.service} URL {base_url!r} is not an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self.session = session or requests.Session()
        self.timeout_s = timeout_s
        self.stats = stats or RequestStats()

    def _get(self, path: str, params: dict | None, kind: str, *, redirects: bool = True,
             headers: dict | None = None) -> requests.Response:
        url = self.base_url + path
        t0 = time.perf_counter()
        try:
            resp = self.session.get(url, params=params, timeout=self.timeout_s,
                                    allow_redirects=redirects, headers=headers)
        except requests.Timeout as exc:
            raise HadoopError(f"{self.service} at {self.base_url} timed out on {path}") from exc
        except requests.exceptions.SSLError as exc:
            raise HadoopError(f"{self.service} at {self.base_url}: TLS verification failed (the CA "
                              "bundle, cluster.ca_bundle or --ca-bundle, must name the CA that "
                              "signed its certificate)") from exc
        except requests.RequestException as exc:
            raise HadoopError(f"cannot reach {self.service} at {self.base_url}: "
                              f"{type(exc).__name__}") from exc
        self.stats.add(kind, len(resp.content), time.perf_counter() - t0)
        if resp.status_code >= 400 or (not redirects and 300 <= resp.status_code < 400):
            exc_name, message = remote_exception(resp.content)
            detail = f"{exc_name}: {message}" if exc_name else f"HTTP {resp.status_code}"
            raise HadoopError(f"{self.service} {path}: {detail}", exception=exc_name,
                              status=resp.status_code)
        return resp

    def get_json(self, path: str, params: dict | None = None, *, kind: str = "json",
                 redirects: bool = True) -> Any:
        resp = self._get(path, params, kind, redirects=redirects,
                         headers={"Accept": "application/json"})
        try:
            return resp.json()
        except ValueError as exc:
            raise HadoopError(f"{self.service} {path}: reply is not JSON "
                              f"({resp.headers.get('Content-Type', '?')})",
                              status=resp.status_code) from exc

    def get_bytes(self, path: str, params: dict | None = None, *, kind: str = "bytes") -> bytes:
        return self._get(path, params, kind).content


class ResourceManager(Endpoint):
    """``/ws/v1/cluster/*`` and ``/conf`` of the YARN ResourceManager."""

    service = "ResourceManager"

    def cluster_info(self) -> dict:
        return shapes.single(self.get_json("/ws/v1/cluster/info", kind="rm.info"), "clusterInfo")

    def metrics(self) -> dict:
        return shapes.single(self.get_json("/ws/v1/cluster/metrics", kind="rm.metrics"),
                             "clusterMetrics")

    def nodes(self) -> list[dict]:
        return shapes.items(self.get_json("/ws/v1/cluster/nodes", kind="rm.nodes"),
                            "nodes", "node")

    def apps(self, *, states: str | None = None, finished_since_ms: int | None = None,
             app_type: str = "MAPREDUCE") -> list[dict]:
        """Applications, without their pending resource requests (they can be large)."""
        params: dict[str, Any] = {"applicationTypes": app_type, "deSelects": "resourceRequests"}
        if states:
            params["states"] = states
        if finished_since_ms is not None:
            params["finishedTimeBegin"] = int(finished_since_ms)
        return shapes.items(self.get_json("/ws/v1/cluster/apps", params, kind="rm.apps"),
                            "apps", "app")

    def app_activities(self, app_id: str, record_s: float) -> Any:
        """The Capacity Scheduler's recent allocation attempts for ``app_id``, and recording
        kept on for ``record_s`` more seconds (dsbra.observe.activities)."""
        return self.get_json(f"/ws/v1/cluster/scheduler/app-activities/{app_id}",
                             {"actions": "refresh,get", "maxTime": f"{record_s:g}"},
                             kind="rm.app-activities")

    def conf(self) -> dict[str, str]:
        """The RM's effective configuration (``/conf``), as key -> value."""
        resp = self._get("/conf", {"format": "json"}, "rm.conf",
                         headers={"Accept": "application/json"})
        return parse_conf(resp.content)


def parse_conf(body: bytes) -> dict[str, str]:
    """``/conf`` (JSON ``{"properties": [{key, value}]}``, or the XML form) -> dict."""
    text = body.lstrip()
    if text.startswith(b"{"):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise HadoopError("ResourceManager /conf: malformed JSON") from exc
        props = doc.get("properties") if isinstance(doc, dict) else None
        out: dict[str, str] = {}
        for p in shapes.as_list(props):
            if isinstance(p, dict) and isinstance(p.get("key"), str):
                out[p["key"]] = shapes.as_str(p.get("value"), "") or ""
        return out
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise HadoopError("/conf: reply is neither JSON nor XML") from exc
    return {p.findtext("name"): p.findtext("value") or ""
            for p in root.iter("property") if p.findtext("name")}


class AppMaster(Endpoint):
    """The MapReduce AM's ``/ws/v1/mapreduce`` API, reached through the RM's web proxy.

    Redirects are not followed: once the AM is gone the proxy redirects to the history
    server's HTML page, which we treat as "the job is finished, read its history file".
    """

    service = "MapReduce AppMaster"

    def _job_path(self, app_id: str, job_id: str) -> str:
        return f"/proxy/{app_id}/ws/v1/mapreduce/jobs/{job_id}"

    def jobs(self, app_id: str) -> list[dict]:
        return shapes.items(self.get_json(f"/proxy/{app_id}/ws/v1/mapreduce/jobs",
                                          kind="am.jobs", redirects=False), "jobs", "job")

    def tasks(self, app_id: str, job_id: str, task_type: str = "m") -> list[dict]:
        doc = self.get_json(self._job_path(app_id, job_id) + "/tasks", {"type": task_type},
                            kind="am.tasks", redirects=False)
        return shapes.items(doc, "tasks", "task")

    def attempts(self, app_id: str, job_id: str, task_id: str) -> list[dict]:
        doc = self.get_json(self._job_path(app_id, job_id) + f"/tasks/{task_id}/attempts",
                            kind="am.attempts", redirects=False)
        return shapes.items(doc, "taskAttempts", "taskAttempt")

    def conf(self, app_id: str, job_id: str) -> dict[str, str]:
        doc = self.get_json(self._job_path(app_id, job_id) + "/conf", kind="am.conf",
                            redirects=False)
        return job_conf_properties(doc)


def job_conf_properties(doc: Any) -> dict[str, str]:
    """``{"conf": {"path": ..., "property": [{name, value, source}]}}`` -> dict."""
    conf = doc.get("conf") if isinstance(doc, dict) else None
    if not isinstance(conf, dict):
        raise HadoopError("malformed job conf reply: no 'conf' object")
    out: dict[str, str] = {}
    for p in shapes.as_list(conf.get("property")):
        if isinstance(p, dict) and isinstance(p.get("name"), str):
            out[p["name"]] = shapes.as_str(p.get("value"), "") or ""
    return out


class JobHistory(Endpoint):
    """The MapReduce JobHistoryServer's ``/ws/v1/history/mapreduce`` API."""

    service = "JobHistoryServer"

    def jobs(self, *, finished_since_ms: int | None = None) -> list[dict]:
        params = {}
        if finished_since_ms is not None:
            params["finishedTimeBegin"] = int(finished_since_ms)
        return shapes.items(self.get_json("/ws/v1/history/mapreduce/jobs", params,
                                          kind="jhs.jobs"), "jobs", "job")

    def job(self, job_id: str) -> dict:
        return shapes.single(self.get_json(f"/ws/v1/history/mapreduce/jobs/{job_id}",
                                           kind="jhs.job"), "job")

    def conf(self, job_id: str) -> dict[str, str]:
        return job_conf_properties(self.get_json(f"/ws/v1/history/mapreduce/jobs/{job_id}/conf",
                                                 kind="jhs.conf"))

    def tasks(self, job_id: str, task_type: str = "m") -> list[dict]:
        doc = self.get_json(f"/ws/v1/history/mapreduce/jobs/{job_id}/tasks", {"type": task_type},
                            kind="jhs.tasks")
        return shapes.items(doc, "tasks", "task")


class WebHdfs(Endpoint):
    """The NameNode's WebHDFS (``/webhdfs/v1``), read side."""

    service = "WebHDFS"

    def __init__(self, base_url: str, *, user: str | None = None, **kw):
        super().__init__(base_url, **kw)
        self.user = user or os.environ.get("DSBRA_HDFS_USER") or getpass.getuser()

    def _op(self, path: str, op: str, **params) -> dict:
        if not path.startswith("/"):
            raise HadoopError(f"WebHDFS path {path!r} is not absolute")
        return {"op": op, "user.name": self.user, **params}

    def _url(self, path: str) -> str:
        return "/webhdfs/v1" + quote(path)

    def list_status(self, path: str) -> list[dict]:
        doc = self.get_json(self._url(path), self._op(path, "LISTSTATUS"), kind="hdfs.list")
        statuses = doc.get("FileStatuses") if isinstance(doc, dict) else None
        if not isinstance(statuses, dict):
            raise HadoopError(f"WebHDFS LISTSTATUS {path}: malformed reply")
        return [s for s in shapes.as_list(statuses.get("FileStatus")) if isinstance(s, dict)]

    def file_status(self, path: str) -> dict:
        doc = self.get_json(self._url(path), self._op(path, "GETFILESTATUS"), kind="hdfs.stat")
        return shapes.single(doc, "FileStatus", what=f"GETFILESTATUS {path}")

    def open(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        params = self._op(path, "OPEN", offset=offset)
        if length is not None:
            params["length"] = length
        return self.get_bytes(self._url(path), params, kind="hdfs.open")

    def block_locations(self, path: str) -> dict:
        """``GET_BLOCK_LOCATIONS``: the LocatedBlocks of a file, with block ids."""
        doc = self.get_json(self._url(path),
                            self._op(path, "GET_BLOCK_LOCATIONS", offset=0, length=2**62),
                            kind="hdfs.blocks")
        return shapes.single(doc, "LocatedBlocks", what=f"GET_BLOCK_LOCATIONS {path}")


class Jmx(Endpoint):
    """A daemon's ``/jmx`` servlet."""

    service = "JMX"

    def beans(self, query: str) -> list[dict]:
        doc = self.get_json("/jmx", {"qry": query}, kind="jmx")
        return shapes.items({"b": {"bean": doc.get("beans") if isinstance(doc, dict) else None}},
                            "b", "bean", what=f"/jmx?qry={query}")

    def bean(self, query: str) -> dict:
        beans = self.beans(query)
        if not beans:
            raise HadoopError(f"JMX bean {query} not found at {self.base_url}")
        return beans[0]

    def namenode_health(self) -> dict:
        """Safe mode, live/dead DataNodes, missing and under-replicated block counts, bytes stored."""
        info = self.bean("Hadoop:service=NameNode,name=NameNodeInfo")
        state = self.bean("Hadoop:service=NameNode,name=FSNamesystemState")
        fsn = self.bean("Hadoop:service=NameNode,name=FSNamesystem")
        live = info.get("LiveNodes")
        try:
            live_nodes = json.loads(live) if isinstance(live, str) else (live or {})
        except ValueError:
            live_nodes = {}
        safemode = info.get("Safemode")
        return {
            "safe_mode": bool(safemode) if not isinstance(safemode, str) else bool(safemode.strip()),
            "live_datanodes": sorted(k.rsplit(":", 1)[0] for k in live_nodes)
            if isinstance(live_nodes, dict) else [],
            "num_live": shapes.as_int(state.get("NumLiveDataNodes"), 0),
            "num_dead": shapes.as_int(state.get("NumDeadDataNodes"), 0),
            "missing_blocks": shapes.as_int(fsn.get("MissingBlocks"), 0),
            "under_replicated_blocks": shapes.as_int(
                fsn.get("UnderReplicatedBlocks", fsn.get("LowRedundancyBlocks")), 0),
            "capacity_used_bytes": shapes.as_int(state.get("CapacityUsed"), 0),
        }
