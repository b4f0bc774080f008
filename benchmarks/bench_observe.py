#!/usr/bin/env python3
"""Collector cost per poll: HTTP requests and CPU, at 100 running jobs.

    .venv/bin/python benchmarks/bench_observe.py [--jobs 100] [--repeat 5]

The 100-job scale is measured on *replayed* responses: the exchanges captured from the real
cluster in tests/fixtures/captured/hadoop-3.4.2/collector-binary (one grep job followed from
submission to its final history file) are served for N jobs at once. Each synthetic job gets
the captured job's answers with its ids rewritten (same length, so the Avro binary history
file stays valid), and the ResourceManager's running-apps listing lists all N. The collector
code is the real one, down to the ``requests`` transport. Reported per poll: requests (every
HTTP exchange, redirects included) and collector CPU (``time.process_time``), for the first
poll (N new jobs: conf, split files, history directory) and the steady polls after it, as the
median and range over ``--repeat`` runs. Results: benchmarks/results/bench_observe.json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsbra.observe.collector import Collector, Endpoints  # noqa: E402
from dsbra.observe.replay import _key, session_for  # noqa: E402

FIXTURE = ROOT / "tests/fixtures/captured/hadoop-3.4.2/collector-binary"


class ScaledReplay(BaseAdapter):
    def __init__(self, n_jobs: int):
        super().__init__()
        manifest = json.loads((FIXTURE / "manifest.json").read_text())
        expected = json.loads((FIXTURE / "expected.json").read_text())
        self.cluster_ts, self.captured = expected["job_ids"][0].split("_")[1:]  # ts, e.g. 0001
        self.id_re = re.compile(self.cluster_ts + r"_(\d{4})")
        self.since_ms = expected["since_ms"]
        self.end_ms = expected["window_end_ms"]
        self.clock = expected["clock"]
        self.synthetic = [f"{1000 + k:04d}" for k in range(n_jobs)]
        self.answers: dict[str, list[dict]] = {}
        for ex in manifest["exchanges"]:
            ex["content"] = (FIXTURE / ex["body"]).read_bytes()
            self.answers.setdefault(_key(ex["method"], ex["url"]), []).append(ex)
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
        key = _key(request.method, real_url)
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


def replay_collector(n_jobs: int) -> tuple[ScaledReplay, Collector]:
    """The real Collector over the scaled replay, on the replay's own clock."""
    adapter = ScaledReplay(n_jobs)
    ep = Endpoints.from_urls("http://10.77.0.1:8088", "http://10.77.0.1:9870",
                             "http://10.77.0.1:19888", user="root", session=session_for(adapter))
    readings = iter(adapter.clock)
    return adapter, Collector(ep, since_ms=adapter.since_ms,
                              clock=lambda: next(readings, adapter.end_ms / 1000))


def one_run(n_jobs: int) -> dict:
    adapter, c = replay_collector(n_jobs)
    c.settings()
    polls = []
    for _ in range(adapter.polls_running):
        r0, c0 = adapter.requests, time.process_time()
        c.poll()
        polls.append({"requests": adapter.requests - r0, "cpu_s": time.process_time() - c0,
                      "running_jobs": len(c.jobs)})
    return {"polls": polls, "counted_tasks": len(c.pending)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    runs = [one_run(args.jobs) for _ in range(args.repeat)]

    def stats(values):
        return {"median": round(statistics.median(values), 4), "min": round(min(values), 4),
                "max": round(max(values), 4)}

    first = [r["polls"][0] for r in runs]
    steady = [p for r in runs for p in r["polls"][1:]]
    worst = [max(p["cpu_s"] for p in r["polls"]) for r in runs]
    result = {
        "jobs": args.jobs, "repeat": args.repeat, "polls_per_run": len(runs[0]["polls"]),
        "source": "replayed captured responses (collector-binary), ids rewritten per job",
        "first_poll": {"requests": stats([p["requests"] for p in first]),
                       "cpu_s": stats([p["cpu_s"] for p in first])},
        "steady_poll": {"requests": stats([p["requests"] for p in steady]),
                        "cpu_s": stats([p["cpu_s"] for p in steady])},
        "worst_poll_cpu_s": stats(worst),
        "counted_tasks": runs[0]["counted_tasks"],
        "target": "<= 1 s collector CPU per poll at 100 running jobs",
        "command": f".venv/bin/python benchmarks/bench_observe.py --jobs {args.jobs} "
                   f"--repeat {args.repeat}",
    }
    out = ROOT / "benchmarks" / "results" / "bench_observe.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
