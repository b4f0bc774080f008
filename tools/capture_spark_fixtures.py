#!/usr/bin/env python3
"""Capture a real Spark application's REST replies, its NameNode audit lines and its driver's
log from the bundled cluster, as unit-test fixtures.

    dsbra cluster up --spark
    .venv/bin/python tools/capture_spark_fixtures.py [--out tests/fixtures/spark/4.0.1]

Scenario ``grep-hot`` (one directory: ``manifest.json`` + bodies, see
``dsbra.observe.http_fixtures``): a hot file (4 blocks and a tail, one replica each, all on
one worker) and a cold file (three replicas) read by ``dsbra/bench/spark/grep.py`` with four
one-core executors, the driver's TaskSetManager at DEBUG. A real SparkCollector polls every
two seconds from before the submission until it read the finished application from the
History Server (the RM's applications, the driver through the RM's proxy); then one call of
every SparkApi method on the History Server and the proxy. Beside them: ``audit.log`` (the NameNode's
audit lines written during the run), ``driver.log`` (the driver's stderr) and
``expected.json`` (the inputs' blocks as the NameNode reports them, the application id).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout
from dsbra.errors import HadoopError
from dsbra.hadoop.rest import ResourceManager, SparkApi, WebHdfs
from dsbra.observe import spark as sp
from dsbra.observe.http_fixtures import Recorder, session_for

ROOT = Path(__file__).resolve().parents[1]

GREP = ROOT / "dsbra" / "bench" / "spark" / "grep.py"
WORDS = ["alpha", "beta", "gamma", "delta", "hot", "cold", "x" * 20]


def text(nbytes: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    out, n = [], 0
    while n < nbytes:
        line = " ".join(rnd.choice(WORDS) for _ in range(12)) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out).encode()


def make_inputs(client, block_size: int) -> dict[str, int]:
    """/fixtures/spark/hot (one replica) and /fixtures/spark/cold (three): four blocks each."""
    client.delete("/fixtures/spark", recursive=True)
    client.makedirs("/fixtures/spark")
    inputs = {"/fixtures/spark/hot": 1, "/fixtures/spark/cold": 3}
    for seed, (path, replication) in enumerate(inputs.items()):
        client.write(path, data=text(4 * block_size, seed), overwrite=True, replication=replication)
    return inputs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests/fixtures/spark/4.0.1")
    args = ap.parse_args()
    layout = StateLayout.at()
    env = cl.env(layout)
    if not env.get("spark_submit"):
        print("the bundled cluster runs without Spark; start it with: dsbra cluster up --spark", file=sys.stderr)
        return 1
    client = cl.hdfs_client(env["namenode"])
    inputs = make_inputs(client, env["block_size"])
    recorder = Recorder()
    session = session_for(recorder)
    rm = ResourceManager(env["rm"], session=session)
    proxy = SparkApi.proxy(env["rm"], session=session)
    history = SparkApi.history(env["spark_history"], session=session)
    hdfs = WebHdfs(env["webhdfs"].split(",")[0].removesuffix("/webhdfs/v1"), session=session, user="root")
    audit = Path(env["audit_logs"]["namenode"])
    audit_from = audit.stat().st_size
    collector = sp.SparkCollector(rm, proxy, history, None)
    driver_log = args.out / "grep-hot" / "driver.log"
    driver_log.parent.mkdir(parents=True, exist_ok=True)
    fs = env["fs"]
    with open(driver_log, "wb") as err:
        proc = subprocess.Popen(
            [env["spark_submit"], "--conf", "spark.executor.instances=4",
             "--driver-java-options", "-Ddsbra.spark.locality.log=debug",
             str(GREP), "hot", ",".join(fs + p for p in inputs)],
            stdout=subprocess.PIPE, stderr=err)
        while proc.poll() is None:
            collector.poll()
            time.sleep(2)
    app_id = next(iter(collector.apps or collector.done_apps), None)
    if proc.returncode != 0 or app_id is None:
        print(f"the grep application failed ({proc.returncode}); see {driver_log}", file=sys.stderr)
        return 1
    deadline = time.time() + 120
    while app_id not in collector.done_apps and time.time() < deadline:
        collector.poll()  # until the History Server gave it
        time.sleep(2)
    history.applications()
    history.applications(status="completed")
    history.stages(app_id)
    history.executors(app_id)
    history.environment(app_id)
    try:  # what the proxy answers once the application is gone
        proxy.stages(app_id)
    except HadoopError as exc:
        print(f"proxy after the end: {exc}", file=sys.stderr)
    blocks = {path: hdfs.block_locations(path) for path in inputs}
    scenario = args.out / "grep-hot"
    with open(audit, "rb") as handle:
        handle.seek(audit_from)
        (scenario / "audit.log").write_bytes(handle.read())
    n = recorder.save(scenario, f"Spark grep over a hot and a cold file, {app_id}")
    (scenario / "expected.json").write_text(json.dumps(
        {"app_id": app_id, "inputs": list(inputs), "block_size": env["block_size"],
         "block_locations": blocks, "stdout": proc.stdout.read().decode()}, indent=1) + "\n")
    print(f"{n} exchanges, audit and driver log in {scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
