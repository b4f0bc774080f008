"""`dsbra run` on the schedulers other than the Fair Scheduler (issue 22).

The Capacity Scheduler: the same shape of run as test_daemon.py's (two hot one-block files at
replication 1, grep jobs queueing for their two holders), and the daemon raises a hot file; its
start log names the scheduler and the D it took. The FIFO scheduler does not delay for locality
at all: the daemon says so in one line at start and refuses to act in every round's status.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from netslots import SECOND
from test_daemon import HOT, _config, _confirmed, _start, _stop, cluster_with_data, replay_until_raised

pytestmark = pytest.mark.cluster

# node-locality-delay at the node count (the cap): an application misses up to four node
# heartbeats before it takes a rack-local container; the daemon reads the nodes it skipped
# from the scheduler's app activities
CAPACITY = ClusterSpec(workers=4, replication=1, **SECOND, scheduler="capacity",
                       node_locality_delay=4)
NO_SIGNAL = "scheduler FifoScheduler: no delay-scheduling signal; dsbra would never act"


def test_capacity_scheduler_daemon_names_its_delay_and_raises_a_hot_file(second_cluster_slot,
                                                                         tmp_path):
    with cluster_with_data(second_cluster_slot, CAPACITY) as (layout, env, client):
        config, cfg = _config(tmp_path, env, "capacity", "apply")
        cfg["cluster"]["node_locality_delay"] = CAPACITY.node_locality_delay
        (tmp_path / "capacity.yaml").write_text(yaml.safe_dump(cfg))
        proc = _start(config)
        try:
            raised = replay_until_raised(layout, cfg, client, proc)
        finally:
            err = _stop(proc) if proc.poll() is None else proc.communicate()[1]
    # min(4 nodes, 4) missed opportunities, one 1 s heartbeat each, from the daemon's config
    assert ("scheduler=CapacityScheduler delay_scheduling=on D=4.0s (lower bound 1.0s) "
            "delay_source=dsbra-config nodes=4") in err, err[-3000:]
    status = json.loads((tmp_path / "capacity" / "status.json").read_text())
    assert status["scheduler"]["name"] == "CapacityScheduler"
    assert status["scheduler"]["refusal"] is None
    if not raised and all(float(g) == 0 for g in re.findall(r" gavg=([0-9.]+) ", err)):
        pytest.skip("the real-cluster rule saw no delay-scheduling wait in three replays")
    assert raised, err[-4000:]
    up = [r for r in _confirmed(cfg) if r["target"] > r["before"]]
    assert up and all(r["path"] in HOT and r["reason"]["rule"] == "hot" for r in up)


def test_fifo_scheduler_is_refused_in_one_line_and_in_status(second_cluster_slot, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the bundled cluster needs root (network namespaces)")
    layout = StateLayout(second_cluster_slot.resolve())
    try:
        cl.up(ClusterSpec(workers=2, replication=1, **SECOND, scheduler="fifo"), layout,
              timeout=300, log=lambda *_: None)
        env = cl.env(layout)
        config, cfg = _config(tmp_path, env, "fifo", "apply")
        cfg["interval_s"], cfg["poll_s"] = 5, 1
        (tmp_path / "fifo.yaml").write_text(yaml.safe_dump(cfg))
        runs = [subprocess.run([sys.executable, "-m", "dsbra", "run", "--config", config,
                                "--once"], capture_output=True, text=True, timeout=120)
                for _ in range(2)]
        shown = subprocess.run([sys.executable, "-m", "dsbra", "status", "--config", config],
                               capture_output=True, text=True, timeout=60)
    finally:
        cl.down(layout)
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
        # said once at start, not again for the round (it has not changed)
        assert run.stderr.count(NO_SIGNAL) == 1, run.stderr[-3000:]
        assert "Traceback" not in run.stderr
    status = json.loads((tmp_path / "fifo" / "status.json").read_text())
    assert status["scheduler"] == {"name": "FifoScheduler", "delay_scheduling": False,
                                   "delay_threshold_s": 0.0, "delay_source": "rm-conf",
                                   "nodes": 2, "refusal": NO_SIGNAL}
    assert NO_SIGNAL in status["last_round"]["refusals"]
    assert shown.returncode == 0 and f"refused: {NO_SIGNAL}" in shown.stdout, shown.stdout
    assert "scheduler FifoScheduler: delay scheduling off, 2 nodes" in shown.stdout
