#!/usr/bin/env python3
"""Validate the live demand signal (dsbra.observe.demand) on the bundled cluster: does "the
block's holders cannot serve its pending maps within D" predict that a map then waited for
locality or ran off its data?

    dsbra cluster up --continuous-scheduling --locality-delay-node-ms 10000 --locality-delay-rack-ms 10000
    .venv/bin/python benchmarks/validate_demand.py --tag hot4

Workload (the demo's shape, larger): a hot file of ``--hot-blocks`` blocks at replication 1,
``--jobs`` map-only grep jobs ``--gap-s`` apart from one submitter, each reading the hot file and
one cold file of one block at ``--cold-replication`` (3: most of its maps find a free
holder at once, the signal's negatives). Every ``--poll-s`` the collector polls and then the demand poller;
each pending map's first prediction is kept: would the live-demand rule raise its block now
(dsbra.policy.demand.judge: its due maps short of what its holders serve within D by the
rule's min_shortfall)? After the jobs, each
map's outcome from the collector's records: it ran off its split's hosts, or it waited for
its container past its own allocation round trip (observe's grace); and, as a second ruler,
observe's attribution (the daemon's rule, dsbra.signals.attribution) judged it delayed for
locality. Precision and recall of "short" per map against each, the share of maps the poll saw
pending at all, the poll's requests and its CPU time, written to
``benchmarks/results/validate-demand-<tag>.json``.

Run it on a quiet machine (nothing else running): waits and free containers depend on load.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

from dsbra.bench.grepjar import cluster_grep_jar
from dsbra.bench.submitter import run_schedule
from dsbra.cluster import cluster as cl
from dsbra.cluster import state as st
from dsbra.cluster.paths import StateLayout
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.demand import DemandPoller
from dsbra.observe.window import attribute_maps, attribution_params
from dsbra.stats import precision_recall

RESULTS = Path(__file__).resolve().parent / "results"
DIR = "/validate-demand"
LINE = b"alpha beta hot gamma xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
MAP_INDEX = re.compile(r"_m_(\d+)$")


def score(predicted: list[bool], actual: list[bool]) -> dict:
    tp, precision, recall = precision_recall(predicted, actual)
    return {"maps": len(actual), "positive": sum(actual), "predicted": sum(predicted), "true_positives": tp,
            "precision": None if precision is None else round(precision, 3),
            "recall": None if recall is None else round(recall, 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tag", required=True)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--gap-s", type=float, default=3.0)
    ap.add_argument("--hot-blocks", type=int, default=4)
    ap.add_argument("--poll-s", type=float, default=2.0)
    ap.add_argument("--cold-replication", type=int, default=3)
    a = ap.parse_args()
    layout = StateLayout.at()
    env = cl.env(layout)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    client = cl.hdfs_client(env["namenode"])
    client.delete(DIR, recursive=True)
    size = env["block_size"]
    hot = f"{DIR}/hot"
    client.write(hot, data=(LINE * (a.hot_blocks * size // len(LINE) + 1))[: a.hot_blocks * size], replication=1)
    cold = [f"{DIR}/cold-{i}" for i in range(a.jobs)]
    for path in cold:
        client.write(path, data=(LINE * (size // len(LINE) + 1))[:size], replication=a.cold_replication)
    collector = Collector(ep, since_ms=int(time.time() * 1000))
    poller = DemandPoller(collector)
    first: dict[tuple[str, int], dict] = {}
    polls: list[dict] = []
    last = [0.0]

    def tick() -> None:
        if time.monotonic() - last[0] < a.poll_s:
            return
        last[0] = time.monotonic()
        collector.poll()
        cpu = time.process_time()
        poll = poller.poll()
        judged = poll.judged()
        polls.append({"at_ms": poll.at_ms, "cpu_s": time.process_time() - cpu, "requests": poll.requests,
                      "pending": len(poll.map_rows), "short_blocks": int(judged["raise"].sum())})
        for key, row in poll.map_rows.items():
            first.setdefault(key, {"at_ms": poll.at_ms, "short": bool(judged["raise"][row]),
                                   "pending": int(judged["pending"][row]),
                                   "shortfall": round(float(judged["shortfall"][row]), 3)})

    plan = [(a.gap_s * i, f"demand-{a.tag}-{i}", f"{hot},{cold[i]}", f"{DIR}/out-{i}") for i in range(a.jobs)]
    t0 = time.time()
    jobs = run_schedule(layout, cluster_grep_jar(st.load(layout.state_file)), plan, int(t0 * 1000), tick,
                        timeout_s=900, log_path=RESULTS / f"validate-demand-{a.tag}.submitter.log")
    if not all(j.ok for j in jobs):
        raise SystemExit(f"a job failed: {[(j.index, j.state, j.error) for j in jobs if not j.ok]}")
    collector.poll_until_read([j.job_id for j in jobs], timeout_s=180)
    obs = collector.take()
    params = attribution_params(collector, collector.settings())
    judged = attribute_maps(obs, collector.containers, collector.nodes(refresh=True), params,
                            int(time.time() * 1000), collector.samples, collector.skips)
    rows = []
    for j, o in enumerate(obs):
        index = int(MAP_INDEX.search(o.task_id).group(1))
        seen = first.get((o.job_id, index))
        off_node = o.node not in o.split_hosts
        rows.append({"job": o.job_id, "index": index, "path": o.path, "node": o.node, "off_node": off_node,
                     "delayed": bool(judged["delayed"][j]), "wait_s": round((o.launch_ms - o.scheduled_ms) / 1000, 2),
                     "waited": (o.launch_ms - o.scheduled_ms) / 1000 > params.grace_s,
                     "seen_pending": seen is not None, **({"predicted": seen} if seen else {})})
    seen = [r for r in rows if r["seen_pending"]]
    predicted = [r["predicted"]["short"] for r in seen]
    cpu = np.array([p["cpu_s"] for p in polls])
    doc = {
        "command": " ".join(["python", "benchmarks/validate_demand.py", *sys.argv[1:]]),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
        "delay_threshold_s": params.delay_threshold_s,
        "jobs": a.jobs, "gap_s": a.gap_s, "hot_blocks": a.hot_blocks, "poll_s": a.poll_s,
        "maps": len(rows), "seen_pending": len(seen),
        "grace_s": params.grace_s,
        # a map that waited past its own allocation round trip (grace), or ran off its data
        "short_predicts_waited_or_off_node": score(predicted, [r["off_node"] or r["waited"] for r in seen]),
        "short_predicts_off_node": score(predicted, [r["off_node"] for r in seen]),
        # observe's attribution: the daemon's M (a map that waited while room was free elsewhere)
        "short_predicts_attributed_delay_or_off_node": score(predicted, [r["off_node"] or r["delayed"] for r in seen]),
        "poll": {"count": len(polls), "cpu_ms_mean": round(1000 * float(cpu.mean()), 2) if len(cpu) else None,
                 "cpu_ms_max": round(1000 * float(cpu.max()), 2) if len(cpu) else None,
                 "requests_mean": round(float(np.mean([p["requests"] for p in polls])), 2) if polls else None},
        "maps_detail": rows, "polls": polls,
    }
    out = RESULTS / f"validate-demand-{a.tag}.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: v for k, v in doc.items() if k not in ("maps_detail", "polls")}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
