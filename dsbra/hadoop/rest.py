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

import orjson
import requests

from dsbra.errors import HadoopError
from dsbra.hadoop import shapes

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0


def innermost_cause(exc: BaseException) -> str:
    """The root cause's text, on one line (urllib3 wraps it in two layers of retries)."""
    while exc.args and isinstance(exc.args[0], BaseException):
        exc = exc.args[0]
    if getattr(exc, "reason", None) is not None and isinstance(exc.reason, BaseException):
        return innermost_cause(exc.reason)
    return " ".join(str(exc).split())[:300]


def decode_json(body: bytes) -> Any:
    """A reply's JSON: orjson (2.6x json's speed on the collector's captured replies), else
    the standard library for what orjson refuses and Java's JSON writers emit, such as a JMX
    bean's NaN. ValueError when it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


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


def split_urls(urls: str | list[str] | tuple[str, ...]) -> list[str]:
    """One URL, several comma-separated, or a list -> the URLs, without trailing slashes."""
    parts = urls.split(",") if isinstance(urls, str) else list(urls)
    return [u.strip().rstrip("/") for u in parts if u and u.strip()]


def standby_exception(resp: requests.Response) -> bool:
    """An error reply whose RemoteException is a ``StandbyException``."""
    return resp.status_code >= 400 and remote_exception(resp.content)[0] == "StandbyException"


def standby_rm(resp: requests.Response) -> bool:
    """Whether ``resp`` came from a standby ResourceManager: a StandbyException; a redirect to
    nowhere (a standby that knows no active RM answers 307 without a Location, "Can not find
    any active RM"); or ``/ws/v1/cluster/info`` with haState other than ACTIVE (a standby RM
    answers that page itself and redirects the others to the active RM, which
    :meth:`Endpoint._get` follows)."""
    if standby_exception(resp) or (300 <= resp.status_code < 400 and "Location" not in resp.headers):
        return True
    if resp.status_code != 200 or not resp.url.split("?")[0].endswith("/ws/v1/cluster/info"):
        return False
    try:
        info = resp.json().get("clusterInfo")
    except (ValueError, AttributeError):
        return False
    return isinstance(info, dict) and info.get("haState") not in (None, "ACTIVE")


class NotActive(Exception):
    """What a :meth:`Failover.follow` attempt raises when the URL it tried is a standby or did
    not answer: ``failure`` says how; ``to`` is the URL a standby pointed at, if it did."""

    def __init__(self, failure: HadoopError, to: str | None = None):
        super().__init__(str(failure))
        self.failure, self.to = failure, to


class Failover:
    """Following an HA pair, the one rule every dsbra client keeps (the REST endpoints below,
    and through :func:`dsbra.hadoop.hdfs.make_client` the HdfsCLI clients that change HDFS):
    requests go to the URL that answered last as active; a standby, or one that does not
    answer, passes the request to the next URL, so a failover costs one retried request, not a
    failed round. Only when none answers as active does the request fail."""

    service = "Hadoop"

    def __init__(self, base_url: str | list[str], *, service: str | None = None):
        if service:
            self.service = service
        self.urls = split_urls(base_url or "")
        bad = [u for u in self.urls if "://" not in u]
        if not self.urls or bad:
            raise HadoopError(f"{self.service} URL {(bad or [base_url])[0]!r} is not an http(s) URL")
        self._current = 0

    @property
    def base_url(self) -> str:
        """The URL requests go to now: the one that last answered as active."""
        return self.urls[self._current]

    def fail_over(self, to: str | None = None) -> None:
        """Send the next requests to ``to`` (one of the URLs), else to the next URL."""
        self._current = self.urls.index(to) if to in self.urls else (self._current + 1) % len(self.urls)
        log.info("failover service=%s to=%s", self.service.replace(" ", "_"), self.base_url)

    def follow(self, attempt, what: str | None = None):
        """``attempt(url)`` on the current URL, and on the next ones while it raises
        :class:`NotActive`; with one URL its failure is the error, else one naming every URL
        (after ``what``, the request, when given)."""
        failure: HadoopError | None = None
        for _ in range(len(self.urls)):
            try:
                return attempt(self.base_url)
            except NotActive as exc:
                failure = exc.failure
                if len(self.urls) == 1:
                    raise failure from exc.__cause__
                self.fail_over(exc.to)
        raise HadoopError(f"{what + ': ' if what else ''}no active one among "
                          f"{', '.join(self.urls)} (last: {failure})",
                          exception=failure.exception, status=failure.status)


class Endpoint(Failover):
    """One service at one or several base URLs (the NameNodes or ResourceManagers of an HA
    cluster, followed as :class:`Failover` says) plus a session; ``get_json``/``get_bytes``
    with uniform error handling."""

    def __init__(self, base_url: str | list[str], *, session: requests.Session | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, stats: RequestStats | None = None):
        super().__init__(base_url)
        self.session = session or requests.Session()
        # requests reads the proxies and the CA bundle from the environment again on every
        # request, scanning all of os.environ several times: 40% of a poll's CPU at 100 running
        # jobs (benchmarks/bench_daemon.py). Read once per URL instead (_environment).
        self.session.trust_env = False
        self._environments: dict[str, dict] = {}
        self.timeout_s = timeout_s
        self.stats = stats or RequestStats()

    def _environment(self, base: str) -> dict:
        """What requests would take from the environment for ``base`` (HTTP(S)_PROXY with
        NO_PROXY, REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE), as request arguments, read once. A
        redirect (WebHDFS to a DataNode) keeps its first URL's proxies."""
        if base not in self._environments:
            ca = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            self._environments[base] = {"proxies": requests.utils.get_environ_proxies(base),
                                        **({"ca": ca} if ca else {})}
        env = self._environments[base]
        kw = {"proxies": env["proxies"]}
        if "ca" in env and self.session.verify is True:  # an explicit CA bundle wins, as in requests
            kw["verify"] = env["ca"]
        return kw

    def _standby(self, resp: requests.Response) -> bool:
        """Whether ``resp`` came from a standby: a ``StandbyException`` (what a standby
        NameNode's WebHDFS answers, HTTP 403)."""
        return standby_exception(resp)

    def _sibling(self, location: str | None) -> str | None:
        """The one of our URLs a redirect to ``location`` points at (a standby RM redirects
        to the active one), else None."""
        return next((u for u in self.urls if location and u != self.base_url
                     and location.startswith(u + "/")), None)

    def _get(self, path: str, params: dict | None, kind: str, *, redirects: bool = True,
             headers: dict | None = None) -> requests.Response:
        def attempt(base: str) -> requests.Response:
            t0 = time.perf_counter()
            try:
                resp = self.session.get(base + path, params=params, timeout=self.timeout_s,
                                        allow_redirects=redirects, headers=headers, **self._environment(base))
            except requests.Timeout as exc:
                raise NotActive(HadoopError(f"{self.service} at {base} timed out on {path}")) from exc
            except requests.exceptions.SSLError as exc:
                if "CERTIFICATE_VERIFY_FAILED" in str(exc):  # a configuration error: no failover
                    raise HadoopError(f"{self.service} at {base}: TLS verification failed (the "
                                      "CA bundle, cluster.ca_bundle or --ca-bundle, must name the "
                                      "CA that signed its certificate)") from exc
                # the handshake itself broke (a peer closing it under load): the next URL, or
                # the next round, may pass
                raise NotActive(HadoopError(f"{self.service} at {base}: TLS error: "
                                            f"{innermost_cause(exc)}")) from exc
            except requests.RequestException as exc:
                raise NotActive(HadoopError(f"cannot reach {self.service} at {base}: "
                                            f"{type(exc).__name__}")) from exc
            self.stats.add(kind, len(resp.content), time.perf_counter() - t0)
            if len(self.urls) > 1:
                # followed a standby's redirect: the active one answered; ask it from now on
                landed = next((self._sibling(r.headers.get("Location")) for r in resp.history
                               if self._sibling(r.headers.get("Location"))), None)
                if landed:
                    self.fail_over(landed)
                sibling = self._sibling(resp.headers.get("Location")) if resp.is_redirect else None
                if sibling or self._standby(resp):
                    raise NotActive(HadoopError(f"{self.service} at {base} is a standby",
                                                status=resp.status_code,
                                                exception="StandbyException"), to=sibling)
            if resp.status_code >= 400 or (not redirects and 300 <= resp.status_code < 400):
                exc_name, message = remote_exception(resp.content)
                detail = f"{exc_name}: {message}" if exc_name else f"HTTP {resp.status_code}"
                raise HadoopError(f"{self.service} {path}: {detail}", exception=exc_name,
                                  status=resp.status_code)
            return resp

        return self.follow(attempt, f"{self.service} {path}")

    def get_json(self, path: str, params: dict | None = None, *, kind: str = "json",
                 redirects: bool = True) -> Any:
        resp = self._get(path, params, kind, redirects=redirects,
                         headers={"Accept": "application/json"})
        try:
            return decode_json(resp.content)
        except ValueError as exc:
            raise HadoopError(f"{self.service} {path}: reply is not JSON "
                              f"({resp.headers.get('Content-Type', '?')})",
                              status=resp.status_code) from exc

    def get_bytes(self, path: str, params: dict | None = None, *, kind: str = "bytes") -> bytes:
        return self._get(path, params, kind).content

    def set_log_level(self, logger: str, level: str) -> None:
        """``logger`` at ``level`` until the daemon restarts, through its ``/logLevel`` servlet
        (every Hadoop daemon's web server has one): how a benchmark records a scheduler's
        DEBUG lines without restarting the ResourceManager."""
        reply = self.get_bytes("/logLevel", {"log": logger, "level": level}, kind="logLevel")
        if level.encode() not in reply:
            raise HadoopError(f"{self.service}: could not set {logger} to {level}: "
                              f"{reply[:300].decode(errors='replace')}")


class ResourceManager(Endpoint):
    """``/ws/v1/cluster/*`` and ``/conf`` of the YARN ResourceManager."""

    service = "ResourceManager"

    def _standby(self, resp: requests.Response) -> bool:
        return standby_rm(resp)

    def cluster_info(self) -> dict:
        return shapes.single(self.get_json("/ws/v1/cluster/info", kind="rm.info"), "clusterInfo")

    def metrics(self) -> dict:
        return shapes.single(self.get_json("/ws/v1/cluster/metrics", kind="rm.metrics"),
                             "clusterMetrics")

    def nodes(self) -> list[dict]:
        return shapes.items(self.get_json("/ws/v1/cluster/nodes", kind="rm.nodes"),
                            "nodes", "node")

    def apps(self, *, states: str | None = None, finished_since_ms: int | None = None,
             app_type: str = "MAPREDUCE", with_asks: bool = False) -> list[dict]:
        """Applications; their outstanding resource requests (``resourceRequests``, which can
        be large) only ``with_asks``."""
        params: dict[str, Any] = {"applicationTypes": app_type}
        if not with_asks:
            params["deSelects"] = "resourceRequests"
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

    def _standby(self, resp: requests.Response) -> bool:
        return standby_rm(resp)  # the AM is reached through the RM's proxy

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
    """``{"conf": {"path": ..., "property": [{name, value, source}]}}`` -> dict. A job's conf
    has about a thousand properties and the collector reads one per new job: the common case
    (a string value) skips the conversion call."""
    conf = doc.get("conf") if isinstance(doc, dict) else None
    if not isinstance(conf, dict):
        raise HadoopError("malformed job conf reply: no 'conf' object")
    out: dict[str, str] = {}
    for p in shapes.as_list(conf.get("property")):
        if isinstance(p, dict):
            name, value = p.get("name"), p.get("value")
            if isinstance(name, str):
                out[name] = value if isinstance(value, str) else shapes.as_str(value, "") or ""
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


class SparkApi(Endpoint):
    """Spark's monitoring REST API (``/api/v1``) of one kind of server: the Spark History
    Server (finished applications, and running ones whose event log it has read), or a running
    application's driver through the ResourceManager's web proxy (``/proxy/<app id>``, the
    only way in: the driver's UI on YARN redirects every other client to the proxy)."""

    service = "Spark REST API"

    def __init__(self, base_url: str | list[str], *, through_proxy: bool = False, **kw):
        super().__init__(base_url, **kw)
        self.through_proxy = through_proxy
        #: app id -> its last attempt's id ("" when it has none): a cluster-mode application
        #: (its driver in the ApplicationMaster) answers only under /applications/<app>/<attempt>
        self._attempts: dict[str, str] = {}
        if through_proxy:
            self.service = "Spark REST API (ResourceManager proxy)"

    @classmethod
    def history(cls, url: str, **kw) -> "SparkApi":
        return cls(url, **kw)

    @classmethod
    def proxy(cls, rm_urls: str | list[str], **kw) -> "SparkApi":
        return cls(rm_urls, through_proxy=True, **kw)

    def _standby(self, resp: requests.Response) -> bool:
        return self.through_proxy and standby_rm(resp)

    def _app_json(self, app_id: str, suffix: str, kind: str, params: dict | None = None):
        """``/applications/<app>[/<attempt>]<suffix>``: a cluster-mode application (its driver
        in the ApplicationMaster) answers only under its attempt, learnt on the first 404."""
        quoted = quote(app_id, safe="")
        root = (f"/proxy/{quoted}" if self.through_proxy else "") + f"/api/v1/applications/{quoted}"
        attempt = self._attempts.get(app_id)
        try:
            return self.get_json(f"{root}/{attempt}{suffix}" if attempt else root + suffix, params, kind=kind)
        except HadoopError as exc:
            if exc.status != 404 or attempt is not None:
                raise
        info = self.get_json(root, kind="spark.application")
        attempts = info.get("attempts") if isinstance(info, dict) else None
        last = attempts[-1] if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict) else {}
        if not last.get("attemptId"):
            raise HadoopError(f"{self.service} {root}{suffix}: HTTP 404", status=404)
        self._attempts[app_id] = quote(str(last["attemptId"]), safe="")
        return self.get_json(f"{root}/{self._attempts[app_id]}{suffix}", params, kind=kind)

    def applications(self, *, status: str | None = None, min_end_ms: int | None = None) -> list[dict]:
        """The server's applications (History Server; ``status``: completed or running)."""
        params: dict[str, Any] = {}
        if status:
            params["status"] = status
        if min_end_ms is not None:
            params["minEndDate"] = str(int(min_end_ms))
        reply = self.get_json("/api/v1/applications", params, kind="spark.applications")
        return reply if isinstance(reply, list) else []

    def stages(self, app_id: str) -> list[dict]:
        """Every stage attempt with its tasks (``details=true``: ``tasks`` keyed by task id)."""
        reply = self._app_json(app_id, "/stages", "spark.stages", {"details": "true"})
        return reply if isinstance(reply, list) else []

    def jobs(self, app_id: str) -> list[dict]:
        """The application's jobs: ``jobId``, ``jobGroup``, ``stageIds``, ``submissionTime``,
        ``completionTime``, ``status``."""
        reply = self._app_json(app_id, "/jobs", "spark.jobs")
        return reply if isinstance(reply, list) else []

    def executors(self, app_id: str) -> list[dict]:
        """Every executor the application had, removed ones too (``allexecutors``)."""
        reply = self._app_json(app_id, "/allexecutors", "spark.executors")
        return reply if isinstance(reply, list) else []

    def environment(self, app_id: str) -> dict:
        """The application's Spark properties (``sparkProperties`` as [key, value] pairs)."""
        reply = self._app_json(app_id, "/environment", "spark.environment")
        return reply if isinstance(reply, dict) else {}


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

    def _active_namesystem(self) -> dict:
        """The FSNamesystem bean of the active NameNode: a standby answers JMX too (tag.HAState
        standby), with counts it has not caught up on, so with several URLs it is passed over."""
        def attempt(_url: str) -> dict:  # self.bean asks the current URL itself
            fsn = self.bean("Hadoop:service=NameNode,name=FSNamesystem")
            if len(self.urls) > 1 and fsn.get("tag.HAState", "active") != "active":
                raise NotActive(HadoopError(f"{self.service} at {self.base_url} is a standby",
                                            exception="StandbyException"))
            return fsn

        return self.follow(attempt, f"{self.service} FSNamesystem")

    def namenode_health(self) -> dict:
        """Safe mode, live/dead DataNodes, missing and under-replicated block counts, bytes stored."""
        fsn = self._active_namesystem()
        info = self.bean("Hadoop:service=NameNode,name=NameNodeInfo")
        state = self.bean("Hadoop:service=NameNode,name=FSNamesystemState")
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
