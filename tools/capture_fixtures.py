#!/usr/bin/env python3
"""Capture real Hadoop REST exchanges from the bundled cluster as unit-test fixtures.

    .venv/bin/python tools/capture_fixtures.py [--out tests/fixtures/captured/hadoop-3.4.2]
    # Hadoop 3.5.0 (Jersey 2): dsbra cluster up --hadoop-version 3.5.0, then
    .venv/bin/python tools/capture_fixtures.py --out tests/fixtures/captured/hadoop-3.5.0

Scenarios (each a directory of ``manifest.json`` + bodies, see ``dsbra.observe.http_fixtures``):

* ``collector-binary``: a grep job over inputs chosen here (three one-block files and one
  three-block file), default binary .jhist, split files preserved; a real ``Collector``
  polls it every second from submission until its history file is read, then builds the
  ``dsbra plan`` input; every HTTP exchange is recorded. ``expected.json`` holds what the
  collector produced live (the replay must reproduce it) and the inputs' ground truth.
* ``collector-json``: the same with ``mapreduce.jobhistory.jhist.format=json``.
* ``endpoints``: one call of every client method, plus error replies (a missing path's
  RemoteException, the AM proxy after the job ended).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dsbra.cluster.jobs import grep_lines, submit_spaced
from dsbra.errors import HadoopError
from dsbra.observe.urls import resolve_urls
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.http_fixtures import Recorder, session_for
from dsbra.observe.window import build_window

ROOT = Path(__file__).resolve().parents[1]


def make_inputs(client, base: str, block_size: int) -> list[str]:
    """Three one-block files and one file of three blocks (split offsets 0, B, 2B)."""
    client.delete(base, recursive=True)
    client.makedirs(base)
    paths = []
    small = grep_lines(2000, 1)
    for i in range(3):
        p = f"{base}/small-{i}"
        client.write(p, small, overwrite=True)
        paths.append(p)
    line = grep_lines(2000, 2)
    big = (line * (2 * block_size // len(line) + 2))[: 2 * block_size + block_size // 2]
    p = f"{base}/big-0"
    client.write(p, big, overwrite=True)
    paths.append(p)
    return paths


def ground_truth(ep: Endpoints, paths: list[str]) -> dict:
    truth = {}
    for p in paths:
        lb = ep.hdfs.block_locations(p)
        truth[p] = [{"block_id": f"blk_{b['block']['blockId']}", "start": b["startOffset"],
                     "hosts": sorted(loc["hostName"] for loc in b["locations"])}
                    for b in lb["locatedBlocks"]]
    return truth


def run_collector_scenario(urls, out: Path, name: str, base: str, extra_conf: dict) -> None:
    from hdfs import InsecureClient

    client = InsecureClient(urls["webhdfs"].split("/webhdfs")[0], user="root")
    client.delete(base, recursive=True)
    paths = make_inputs(client, base + "/in", 8 * 1024 * 1024)
    recorder = Recorder()
    ep = Endpoints.from_urls(urls["rm"], urls["webhdfs"], urls["jhs"], user="root",
                             session=session_for(recorder))
    start = int(time.time() * 1000)
    clock_readings: list[float] = []

    def clock() -> float:  # recorded, so the replay sees the same clock as the live run
        clock_readings.append(time.time())
        return clock_readings[-1]

    collector = Collector(ep, since_ms=start - 1000, clock=clock)
    collector.settings()
    conf = {"mapreduce.task.files.preserve.filepattern": "job_.*", **extra_conf}
    polls = 0

    def tick(_runs) -> None:
        nonlocal polls
        collector.poll()
        polls += 1

    [run] = submit_spaced([["grep", base + "/in", base + "/out", "XYZ"]], 0, tick,
                          interval_s=1.0, conf=conf)
    result = run.wait(timeout=60)
    # until both jobs' final history files are read
    polls += collector.poll_until_read(result.job_ids, timeout_s=60, interval_s=1.0)
    obs = collector.take()
    end = int(time.time() * 1000)
    doc = build_window(collector, obs, window_start_ms=start - 1000, window_end_ms=end).document()
    truth = ground_truth(ep, paths)
    n = recorder.save(out / name, note=f"collector over grep job(s) {result.job_ids} with "
                      f"{extra_conf or 'default'} conf; {polls} polls; captured by "
                      f"tools/capture_fixtures.py")
    expected = {"job_ids": result.job_ids, "inputs": paths, "truth": truth,
                "since_ms": start - 1000, "window_end_ms": end, "polls": polls,
                "clock": clock_readings,
                "observations": [o.__dict__ for o in obs], "round": doc}
    (out / name / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(f"{name}: {n} exchanges, {polls} polls, {len(obs)} map tasks, jobs {result.job_ids}")


def run_endpoints_scenario(urls, out: Path, job_id: str, app_id: str, path: str) -> None:
    recorder = Recorder()
    ep = Endpoints.from_urls(urls["rm"], urls["webhdfs"], urls["jhs"], user="root",
                             session=session_for(recorder))
    calls = [lambda: ep.rm.cluster_info(), lambda: ep.rm.metrics(), lambda: ep.rm.nodes(),
             lambda: ep.rm.apps(), lambda: ep.rm.apps(states="RUNNING"),
             lambda: ep.rm.get_json("/ws/v1/cluster/scheduler"),
             lambda: ep.jhs.jobs(), lambda: ep.jhs.job(job_id), lambda: ep.jhs.tasks(job_id),
             lambda: ep.jhs.conf(job_id),
             lambda: ep.hdfs.file_status(path), lambda: ep.hdfs.list_status(path.rsplit("/", 1)[0]),
             lambda: ep.hdfs.block_locations(path),
             lambda: ep.hdfs.file_status("/dsbra-fixtures/no-such-file"),
             lambda: ep.am.tasks(app_id, job_id),
             lambda: ep.jmx.namenode_health(),
             lambda: ep.jhs.job("job_0_0")]
    for call in calls:
        try:
            call()
        except HadoopError as exc:
            print(f"  (error captured: {exc})")
    n = recorder.save(out / "endpoints", note=f"one call per client method (job {job_id}); "
                      "captured by tools/capture_fixtures.py")
    print(f"endpoints: {n} exchanges")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "tests/fixtures/captured/hadoop-3.4.2")
    ap.add_argument("--base", default="/dsbra-fixtures")
    args = ap.parse_args()
    urls = resolve_urls(None, None, None)
    args.out.mkdir(parents=True, exist_ok=True)
    run_collector_scenario(urls, args.out, "collector-binary", args.base + "/binary", {})
    run_collector_scenario(urls, args.out, "collector-json", args.base + "/json",
                           {"mapreduce.jobhistory.jhist.format": "json"})
    expected = json.loads((args.out / "collector-binary" / "expected.json").read_text())
    job_id = expected["job_ids"][0]
    run_endpoints_scenario(urls, args.out, job_id, "application_" + job_id[4:],
                           expected["inputs"][-1])


if __name__ == "__main__":
    main()
