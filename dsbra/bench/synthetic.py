"""Synthetic inputs at a cluster's scale for the cost benchmarks (benchmarks/bench_policy.py,
bench_observe.py, bench_daemon.py): a policy round over millions of blocks, and the responses
captured from the real cluster for one job served for a hundred at once, so the real Collector
can be timed against them. Shapes, not measurements: the benchmarks say what each stands for."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from dsbra.observe.collector import Collector, Endpoints, JobWatch, job_id_of
from dsbra.observe.http_fixtures import Replayer, exchange_key, session_for
from dsbra.observe.splits import read_splits
from dsbra.policy.api import BlockState, RoundInput

#: the capture ScaledReplay serves, relative to the repository's root: one grep job followed
#: from submission to its final history file on the real cluster
COLLECTOR_CAPTURE = "tests/fixtures/captured/hadoop-3.4.2/collector-binary"
#: the live-demand poll's capture (what the ResourceManager's and the ApplicationMasters' client
#: calls returned) and the collector capture whose job.split and files DemandReplay's maps read
DEMAND_CAPTURE = "tests/fixtures/demand/hadoop-3.4.2/poll.json"
DEMAND_FILES_CAPTURE = "tests/fixtures/captured/hadoop-3.4.2/collector-json"
#: D, the delay threshold a fully delayed task waits out (the bundled cluster's 10 s)
DELAY_S = 10.0


def synthetic_round(n_blocks: int, n_nodes: int, seed: int = 1) -> tuple[RoundInput, BlockState]:
    """A cluster-shaped round: base replication 3, 1% of blocks already carrying 1-2 extra
    replicas, 5% read in the window, 0.1% with every task waiting the full D, 10% with
    history. Replicas of a block sit on distinct nodes. GAvg lands above the gate, so the
    round both replicates and dereplicates."""
    rng = np.random.default_rng(seed)
    extra = np.where(rng.random(n_blocks) < 0.01, rng.integers(1, 3, n_blocks), 0)
    rc = 3 + extra
    first = rng.integers(0, n_nodes, n_blocks)
    # distinct nodes: increasing offsets whose total span stays below n_nodes
    gap = (n_nodes - 1) // 5
    steps = 1 + rng.integers(0, gap, (n_blocks, 5))
    offsets = np.concatenate((np.zeros((n_blocks, 1), np.int64), np.cumsum(steps, 1)), 1)
    matrix = (first[:, None] + offsets) % n_nodes
    mask = np.arange(6)[None, :] < rc[:, None]
    replica_nodes = matrix[mask].astype(np.int32)
    indptr = np.zeros(n_blocks + 1, np.int64)
    np.cumsum(rc, out=indptr[1:])
    read = rng.random(n_blocks) < 0.05
    tasks = np.where(read, rng.geometric(0.3, n_blocks), 0).astype(np.int32)
    delayed = np.minimum((rng.random(n_blocks) * (tasks + 1)).astype(np.int32), tasks)
    delay_s = (0.5 + 0.5 * rng.random(n_blocks)) * delayed * DELAY_S
    hot = rng.random(n_blocks) < 1e-3
    delayed = np.where(hot, tasks, delayed)
    delay_s = np.where(hot, tasks * DELAY_S, delay_s)
    nonlocal_ = np.minimum((rng.random(n_blocks) * (tasks + 1)).astype(np.int32), tasks)
    ri = RoundInput(block_ids=1_073_741_825 + np.arange(n_blocks, dtype=np.int64),
                    file_index=np.arange(n_blocks, dtype=np.int32), tasks=tasks,
                    delayed_tasks=delayed, delay_s=delay_s, nonlocal_tasks=nonlocal_,
                    peak_readers=np.minimum(tasks, 8), replica_indptr=indptr,
                    replica_nodes=replica_nodes, base_replication=np.full(n_blocks, 3),
                    node_names=np.array([f"dn{j:04d}" for j in range(n_nodes)], dtype=object))
    y = np.where(rng.random(n_blocks) < 0.1, 0.2 + 0.7 * rng.random(n_blocks), 0.0)
    state = BlockState(block_ids=ri.block_ids, y=y, n=rng.integers(0, 100, n_blocks),
                       base_replication=ri.base_replication, file_index=ri.file_index,
                       idle_rounds=np.zeros(n_blocks, np.int32))
    return ri, state


class ScaledReplay(BaseAdapter):
    """The exchanges captured of one job (``fixture``: a collector capture, its manifest.json and
    expected.json) served for ``n_jobs`` jobs at once: each synthetic job gets the captured
    job's answers with its ids rewritten (same length, so the Avro binary history file stays
    valid), and the ResourceManager's running-apps listing lists all of them. Counts the
    requests it answers."""

    def __init__(self, fixture: Path, n_jobs: int):
        super().__init__()
        manifest = json.loads((fixture / "manifest.json").read_text())
        expected = json.loads((fixture / "expected.json").read_text())
        self.cluster_ts, self.captured = expected["job_ids"][0].split("_")[1:]  # ts, e.g. 0001
        self.id_re = re.compile(self.cluster_ts + r"_(\d{4})")
        self.since_ms = expected["since_ms"]
        self.end_ms = expected["window_end_ms"]
        self.clock = expected["clock"]
        self.synthetic = [f"{1000 + k:04d}" for k in range(n_jobs)]
        self.answers: dict[str, list[dict]] = {}
        for ex in manifest["exchanges"]:
            ex["content"] = (fixture / ex["body"]).read_bytes()
            self.answers.setdefault(exchange_key(ex["method"], ex["url"]), []).append(ex)
        running_key = next(k for k in self.answers if "states=RUNNING" in k or
                           '["states", "RUNNING"]' in k)
        self.running = [ex for ex in self.answers[running_key]
                        if f"_{self.captured}".encode() in ex["content"]]
        self.polls_running = len(self.running)
        self.served: dict[tuple[str, str], int] = {}
        self.running_served = 0
        self.requests = 0

    def _scaled_listing(self, ex: dict) -> bytes:
        doc = json.loads(ex["content"])
        apps = [a for a in doc["apps"]["app"] if a["id"].endswith("_" + self.captured)]
        text = json.dumps(apps[0])
        doc["apps"]["app"] = [json.loads(text.replace("_" + self.captured, "_" + s))
                              for s in self.synthetic]
        return json.dumps(doc).encode()

    def send(self, request, **kw):
        self.requests += 1
        resp = requests.Response()
        resp.request, resp.url, resp.encoding = request, request.url, "utf-8"
        url = request.url
        if "/ws/v1/cluster/apps" in url and "states=RUNNING" in url:
            i = min(self.running_served, len(self.running) - 1)
            self.running_served += 1
            ex = self.running[i] if self.running_served <= len(self.running) else None
            body = self._scaled_listing(ex) if ex else b'{"apps":null}'
            resp.status_code, resp._content = 200, body
            resp.headers = CaseInsensitiveDict({"Content-Type": "application/json"})
            return resp
        m = self.id_re.search(url)
        job = m.group(1) if m else None
        real_url = self.id_re.sub(f"{self.cluster_ts}_{self.captured}", url) if job else url
        key = exchange_key(request.method, real_url)
        options = self.answers.get(key)
        if not options:
            resp.status_code, resp._content = 404, json.dumps({"RemoteException": {
                "exception": "FileNotFoundException", "message": key}}).encode()
            resp.headers = CaseInsensitiveDict({"Content-Type": "application/json"})
            return resp
        n = self.served.get((job, key), 0)
        self.served[(job, key)] = n + 1
        ex = options[min(n, len(options) - 1)]
        body = ex["content"]
        headers = dict(ex["headers"])
        if job:
            old = f"{self.cluster_ts}_{self.captured}".encode()
            new = f"{self.cluster_ts}_{job}".encode()
            body = body.replace(old, new)
            if "Location" in headers:
                headers["Location"] = headers["Location"].replace(old.decode(), new.decode())
        resp.status_code, resp._content = ex["status"], body
        resp.headers = CaseInsensitiveDict(headers)
        return resp

    def close(self):
        pass


def replay_collector(fixture: Path, n_jobs: int) -> tuple[ScaledReplay, Collector]:
    """The real Collector over the scaled replay, on the replay's own clock."""
    adapter = ScaledReplay(fixture, n_jobs)
    ep = Endpoints.from_urls("http://10.77.0.1:8088", "http://10.77.0.1:9870",
                             "http://10.77.0.1:19888", user="root", session=session_for(adapter))
    readings = iter(adapter.clock)
    return adapter, Collector(ep, since_ms=adapter.since_ms,
                              clock=lambda: next(readings, adapter.end_ms / 1000))


class DemandReplay(BaseAdapter):
    """The live-demand poll's capture served for ``n_jobs`` running jobs at once: each a copy of
    one of the two captured jobs (alternately) with its ids rewritten, the running-apps listing
    (with the asks), the nodes and each job's task list in the ResourceManager's and the
    ApplicationMaster's JSON envelopes; every other request (the NameNode's files, the RM's
    conf) answered from the collector capture whose splits the maps read (:meth:`splits`).
    Counts the requests it answers itself."""

    def __init__(self, root: Path, n_jobs: int):
        super().__init__()
        poll = json.loads((root / DEMAND_CAPTURE).read_text())
        self.capture = root / DEMAND_FILES_CAPTURE
        self.files = Replayer(self.capture)
        self.apps, self.tasks = [], {}
        for k in range(n_jobs):
            template = poll["apps"][k % len(poll["apps"])]
            old = template["id"][len("application_"):]
            new = f"{old.split('_')[0]}_{1000 + k:04d}"
            app = json.loads(json.dumps(template).replace(old, new))
            self.apps.append(app)
            self.tasks[app["id"]] = json.dumps({"tasks": {"task": poll["tasks"][template["id"]]}}
                                               ).replace(old, new).encode()
        self.listing = json.dumps({"apps": {"app": self.apps}}).encode()
        self.nodes = json.dumps({"nodes": {"node": poll["nodes"]}}).encode()
        self.requests = 0

    def splits(self) -> list:
        """The captured job's splits (job.splitmetainfo and job.split), every job's here."""
        manifest = json.loads((self.capture / "manifest.json").read_text())

        def body(name: str) -> bytes:
            return next((self.capture / ex["body"]).read_bytes() for ex in manifest["exchanges"]
                        if urlsplit(ex["url"]).path.endswith("/" + name) and ex["status"] == 200)

        return read_splits(body("job.splitmetainfo"), body("job.split"))

    def send(self, request, **kw):
        parts = urlsplit(request.url)
        body = None
        if parts.path == "/ws/v1/cluster/apps" and "RUNNING" in parts.query:
            body = self.listing
        elif parts.path == "/ws/v1/cluster/nodes":
            body = self.nodes
        elif parts.path.startswith("/proxy/") and parts.path.endswith("/tasks"):
            body = self.tasks.get(parts.path.split("/")[2])
        if body is None:
            return self.files.send(request, **kw)
        self.requests += 1
        resp = requests.Response()
        resp.request, resp.url, resp.encoding = request, request.url, "utf-8"
        resp.status_code, resp._content = 200, body
        resp.headers = CaseInsensitiveDict({"Content-Type": "application/json"})
        return resp

    def close(self):
        pass


def fast_poll_daemon(root: Path, state_dir: Path, n_jobs: int):
    """A dry-run daemon with the fast poll on (dsbra.daemon.fastpoll), connected to
    :class:`DemandReplay` for ``n_jobs`` jobs whose splits its collector has read: call its
    ``_fast_poll()`` as its window does. Returns (daemon, adapter)."""
    from dsbra.act.journal import Journal
    from dsbra.daemon.config import load_config
    from dsbra.daemon.service import Daemon
    from dsbra.experiment.assignment import Assignments
    from dsbra.observe.demand import DemandPoller

    adapter = DemandReplay(root, n_jobs)
    daemon = Daemon(load_config(None, env={"DSBRA_DEMAND__ENABLED": "true"},
                                overrides={"state_dir": str(state_dir)}))
    daemon.dir.mkdir(parents=True, exist_ok=True)
    daemon.ep = Endpoints.from_urls("http://10.77.0.1:8088", "http://10.77.0.1:9870",
                                    "http://10.77.0.1:19888", user="root",
                                    session=session_for(adapter))
    daemon.collector = Collector(daemon.ep, since_ms=0)
    daemon.collector.settings()
    splits = adapter.splits()
    for app in adapter.apps:
        job = job_id_of(app["id"])
        daemon.collector.jobs[job] = JobWatch(job, app["id"], "root", splits=splits)
    daemon.demand_poller = DemandPoller(daemon.collector)
    daemon.journal = Journal.open(daemon.dir / "journal.jsonl")
    daemon.assignments = Assignments.open(daemon.dir / "assignments.jsonl")
    daemon.actor = None  # a dry run sends nothing
    daemon.start_fast_round()
    return daemon, adapter
