#!/usr/bin/env python3
"""Validate the Spark collector's "delayed for locality" and wait against the drivers' own logs.

    dsbra cluster up --spark
    .venv/bin/python benchmarks/validate_spark_waits.py --tag hot1
    .venv/bin/python benchmarks/validate_spark_waits.py --recompute benchmarks/results/spark-waits-hot1.raw.json.gz

Workload on the running bundled cluster: ``--hot-files`` files of eight blocks with one replica
(all on one worker each) and as many of four with three; ``--apps`` long-running PySpark applications
(dsbra/bench/spark/grep.py, ``--executors`` one-core executors each, held, client mode),
started ``--gap-s`` apart, each running ``--jobs`` grep jobs in turn, each job reading a hot
file and every other one a cold file too, drawn with a fixed seed; each driver's TaskSetManager at DEBUG into its own
log (one task set at a time per application, so its level lines are unambiguous). A SparkCollector polls while they run
(the ResourceManager, the drivers through its proxy, the History Server once they ended, the
NameNode's audit log), as the daemon's does. Then each task is judged twice: by the
collector's rule (dsbra.observe.spark.attribute, from what Spark's REST API reports) and by
the ground truth of its driver's locality levels (dsbra.bench.spark_truth), at several
``min_idle_s``; precision and recall of "delayed for locality" and the summed wait's error are
written to ``benchmarks/results/spark-waits-<tag>.json`` (the record to recompute from beside
it, ``.raw.json.gz``).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

from dsbra.bench import spark_truth as truth
from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout
from dsbra.hadoop.rest import ResourceManager, SparkApi, WebHdfs
from dsbra.hadoop.spark_conf import DEFAULT_WAIT, spark_time_ms
from dsbra.observe import spark as sp
from dsbra.observe.collector import MapObservation
from dsbra.observe.window import attribute_spark, map_to_blocks, read_files

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GREP = ROOT / "dsbra" / "bench" / "spark" / "grep.py"
MIN_IDLE_S = (0.25, 0.5, 1.0)
BASE = "/validate-spark"


def make_inputs(client, n: int, block_size: int) -> tuple[list[str], list[str]]:
    client.delete(BASE, recursive=True)
    client.makedirs(BASE)
    line = b"alpha beta gamma delta hot cold xxxxxxxxxxxxxxxxxxxx\n"
    hot, cold = [f"{BASE}/hot-{i}" for i in range(n)], [f"{BASE}/cold-{i}" for i in range(n)]
    for paths, blocks, replication in ((hot, 8, 1), (cold, 4, 3)):
        body = (line * (blocks * block_size // len(line) + 1))[: blocks * block_size]
        for path in paths:
            client.write(path, data=body, overwrite=True, replication=replication)
    return hot, cold


def run(args) -> dict:
    env = cl.env(StateLayout.at())
    if not env.get("spark_submit"):
        raise SystemExit("the bundled cluster runs without Spark; start it with: dsbra cluster up --spark")
    client = cl.hdfs_client(env["namenode"])
    hot, cold = make_inputs(client, args.hot_files, env["block_size"])
    rnd = random.Random(args.seed)
    # every job reads a hot file, every other one a cold file too
    picks = [[",".join(env["fs"] + p for p in [rnd.choice(hot)] + [rnd.choice(cold)] * (j % 2))
              for j in range(args.jobs)] for _ in range(args.apps)]
    rm = ResourceManager(env["rm"])
    collector = sp.SparkCollector(rm, SparkApi.proxy(env["rm"]), SparkApi.history(env["spark_history"]),
                                  sp.AuditTail.at_end(env["audit_logs"]["namenode"]))
    logs = Path(tempfile.mkdtemp(prefix="dsbra-spark-waits-"))
    procs = []
    t_next = time.monotonic()
    for i, jobs in enumerate(picks):
        while time.monotonic() < t_next:
            collector.poll()
            time.sleep(min(1.0, max(0.0, t_next - time.monotonic())))
        err = open(logs / f"driver-{i}.log", "wb")
        procs.append((subprocess.Popen(
            [env["spark_submit"], "--conf", f"spark.executor.instances={args.executors}",
             "--driver-java-options", "-Ddsbra.spark.locality.log=debug",
             str(GREP), "--gap-s", str(args.job_gap_s), "hot", *jobs],
            stdout=subprocess.DEVNULL, stderr=err), err))
        t_next += args.gap_s
    while any(p.poll() is None for p, _ in procs):
        collector.poll()
        time.sleep(2)
    failed = sum(p.returncode != 0 for p, _ in procs)
    for _, err in procs:
        err.close()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until the History Server gave every app
        collector.poll()
        if collector.apps and all(w.done for w in collector.apps.values()):
            break
        time.sleep(2)
    ep = SimpleNamespace(hdfs=WebHdfs(env["namenode"].split(",")[0], user="root"))
    files = read_files(ep, collector.paths_pending())
    obs = collector.take(files)
    timelines = {a: collector.timeline(a) for a in {o.job_id for o in obs}}
    node_waits = {a: collector.node_wait_s(a) for a in timelines}
    driver_logs = {}
    for i in range(len(procs)):
        text = (logs / f"driver-{i}.log").read_text(errors="replace")
        app = next((w for w in text.split() if w.startswith("application_")), None)
        if app:
            driver_logs[app.rstrip(",.)")] = "\n".join(line for line in text.splitlines()
                                                       if any(c in line for c in ("TaskSetManager", "TaskSchedulerImpl", "YarnScheduler")))
    return {"tag": args.tag, "apps": args.apps, "gap_s": args.gap_s, "executors": args.executors,
            "jobs": args.jobs, "job_gap_s": args.job_gap_s,
            "hot_files": hot, "failed_apps": failed, "end_ms": int(time.time() * 1000),
            "racks": {w["host"]: w["rack"] for w in env["workers"]},
            "obs": [asdict(o) for o in obs], "files": files,
            "timelines": {a: {"tasks": [asdict(t) for t in ts], "executors": [asdict(e) for e in es]}
                          for a, (ts, es) in timelines.items()},
            "node_wait_s": node_waits,
            "driver_logs": driver_logs}


def score(raw: dict) -> dict:
    """Judge the recorded tasks both ways at each min_idle_s: by the collector's rule as the
    daemon runs it, and by its idle-core rule alone (``..._idle_only``, the rule before the
    launch rule; a record from before 2026-12-07 holds no node waits: Spark's default, the
    bundled cluster's, stands for them)."""
    obs = [MapObservation(**o) for o in raw["obs"]]
    blocks = map_to_blocks(obs, raw["files"])
    holders = [blocks.rows[b][1] if b >= 0 else None for b in blocks.block_of]
    timelines = {a: ([sp.SparkTask(**t) for t in v["tasks"]], [sp.Executor(**e) for e in v["executors"]])
                 for a, v in raw["timelines"].items()}
    default_wait = spark_time_ms(DEFAULT_WAIT) / 1000
    node_waits = raw.get("node_wait_s", {})
    rules = {"": SimpleNamespace(timeline=lambda app: timelines.get(app, ([], [])),
                                 node_wait_s=lambda app: node_waits.get(app, default_wait)),
             "_idle_only": SimpleNamespace(timeline=lambda app: timelines.get(app, ([], [])),
                                           node_wait_s=lambda app: None)}
    hot = set(raw["hot_files"])
    out = {"tasks": len(obs), "unmapped_tasks": blocks.unmapped,
           "by_level": {lv: sum(o.locality == lv for o in obs) for lv in truth.LEVELS}}
    for (suffix, source), min_idle in itertools.product(rules.items(), MIN_IDLE_S):
        judged = attribute_spark(obs, holders, source, raw["end_ms"], min_idle)
        rows = {"all": {}, "hot": {}, "cold": {}}
        for app, text in raw["driver_logs"].items():
            log = truth.parse_driver_log(text)
            tasks, executors = timelines.get(app, ([], []))
            by_tid = {j: sp.task_of(o.attempt_id)[1] for j, o in enumerate(obs) if o.job_id == app}
            real = truth.true_waits(log, {tid: holders[j] for j, tid in by_tid.items() if holders[j]},
                                    {e.executor_id: (e.host, e.cores, e.add_ms) for e in executors},
                                    raw["racks"], raw["end_ms"], min_idle)
            for j, tid in by_tid.items():
                if tid in real:
                    side = "hot" if obs[j].path in hot else "cold"
                    inferred = (bool(judged["delayed"][j]), float(judged["delay_s"][j]))
                    for part in ("all", side):
                        rows[part].setdefault("inferred", {})[(app, tid)] = inferred
                        rows[part].setdefault("truth", {})[(app, tid)] = real[tid]
        out[f"min_idle_{min_idle:g}s{suffix}"] = {part: truth.compare(r.get("inferred", {}), r.get("truth", {}))
                                                  for part, r in rows.items()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", default="hot")
    ap.add_argument("--apps", type=int, default=2)
    ap.add_argument("--gap-s", type=float, default=5.0)
    ap.add_argument("--executors", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=6, help="grep jobs each application runs in turn")
    ap.add_argument("--job-gap-s", type=float, default=1.0)
    ap.add_argument("--hot-files", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--recompute", type=Path, help="score a recorded run (.raw.json.gz) again")
    args = ap.parse_args()
    if args.recompute:
        with gzip.open(args.recompute, "rt") as f:
            raw = json.load(f)
    else:
        raw = run(args)
        RESULTS.mkdir(parents=True, exist_ok=True)
        with gzip.open(RESULTS / f"spark-waits-{args.tag}.raw.json.gz", "wt") as f:
            json.dump(raw, f)
    summary = {k: raw[k] for k in ("tag", "apps", "gap_s", "executors", "jobs", "job_gap_s",
                                    "failed_apps")} | score(raw)
    summary["command"] = ("python benchmarks/validate_spark_waits.py --tag {tag} --apps {apps} --gap-s {gap_s:g} "
                          "--executors {executors} --jobs {jobs} --job-gap-s {job_gap_s:g}").format(**raw)
    (RESULTS / f"spark-waits-{raw['tag']}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
