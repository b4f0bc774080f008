#!/usr/bin/env python3
"""Capture one live-demand poll's replies from the bundled cluster for the unit tests
(tests/fixtures/demand/hadoop-<version>/poll.json): the running MapReduce applications with
their outstanding asks, the nodes, and each running job's map tasks from its ApplicationMaster,
taken while grep jobs 3 s apart read a hot file of 4 blocks at replication 1 and a cold file
each. The first poll with two running jobs, one of them still asking for containers, is kept.

    dsbra cluster up --continuous-scheduling --locality-delay-node-ms 10000 --locality-delay-rack-ms 10000
    .venv/bin/python tools/capture_demand_fixture.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from dsbra.bench.grepjar import cluster_grep_jar
from dsbra.bench.submitter import run_schedule
from dsbra.cluster import cluster as cl
from dsbra.cluster import state as st
from dsbra.cluster.paths import StateLayout
from dsbra.hadoop import shapes
from dsbra.observe.collector import Endpoints, job_id_of
from dsbra.observe.demand import ask_signature, wants_containers

ROOT = Path(__file__).resolve().parents[1]
LINE = b"alpha beta hot gamma xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"


def main() -> int:
    layout = StateLayout.at()
    env = cl.env(layout)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    client = cl.hdfs_client(env["namenode"])
    client.delete("/capture-demand", recursive=True)
    size = env["block_size"]
    client.write("/capture-demand/hot", data=(LINE * (4 * size // len(LINE) + 1))[:4 * size], replication=1)
    for i in range(4):
        client.write(f"/capture-demand/cold-{i}", data=(LINE * (size // len(LINE) + 1))[:size], replication=1)
    kept: dict = {}

    def tick() -> None:
        if kept:
            return
        apps = ep.rm.apps(states="RUNNING", with_asks=True)
        if len(apps) < 2 or not any(wants_containers(ask_signature(a)) for a in apps):
            return
        kept.update(apps=apps, nodes=ep.rm.nodes(),
                    tasks={shapes.as_str(a["id"]): ep.am.tasks(a["id"], job_id_of(a["id"])) for a in apps})

    plan = [(3.0 * i, f"capture-demand-{i}", f"/capture-demand/hot,/capture-demand/cold-{i}",
             f"/capture-demand/out-{i}") for i in range(4)]
    run_schedule(layout, cluster_grep_jar(st.load(layout.state_file)), plan, int(time.time() * 1000), tick,
                 timeout_s=600, log_path=Path("/tmp/capture-demand-submitter.log"))
    if not kept:
        raise SystemExit("no poll saw two running jobs, one of them asking: run it again")
    out = ROOT / "tests" / "fixtures" / "demand" / f"hadoop-{env['hadoop_version']}" / "poll.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"about": __doc__.split("\n\n")[0].replace("\n", " "),
                               "captured": time.strftime("%Y-%m-%d"), **kept}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
