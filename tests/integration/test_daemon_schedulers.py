"""`dsbra run` on the schedulers other than the Fair Scheduler (issue 22).

The Capacity Scheduler: the same shape of run as test_daemon.py's (two hot one-block files at
replication 1, grep jobs queueing for their two holders), and the daemon raises a hot file; its
start log names the scheduler and the D it took. The FIFO scheduler does not delay for locality
at all: the daemon says so in one line at start and refuses to act in every round's status, and
`dsbra conf check` (the README's check before installing) fails naming it.
"""

from __future__ import annotations

import pytest

from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from harness import HOT, Daemon, daemon_config, need_root, replay_until_raised, run_dsbra, write_data
from netslots import SECOND

pytestmark = pytest.mark.cluster

# node-locality-delay at the node count (the cap): an application misses up to four node
# heartbeats before it takes a rack-local container; the daemon reads the nodes it skipped
# from the scheduler's app activities
CAPACITY = ClusterSpec(workers=4, replication=1, **SECOND, scheduler="capacity",
                       node_locality_delay=4)
NO_SIGNAL = "scheduler FifoScheduler: no delay-scheduling signal; dsbra would never act"


def test_capacity_scheduler_daemon_names_its_delay_and_raises_a_hot_file(second_slot, tmp_path):
    layout, env, _ = second_slot.cluster(CAPACITY)
    client = cl.hdfs_client(env["namenode"])
    write_data(client)
    cfg = daemon_config(env, tmp_path / "capacity")
    cfg["cluster"]["node_locality_delay"] = CAPACITY.node_locality_delay
    daemon = Daemon.configure(tmp_path, "capacity", cfg).start()
    try:
        raised = replay_until_raised(layout, daemon, client)
    finally:
        err = daemon.stop()
    # min(4 nodes, 4) missed opportunities, one 1 s heartbeat each, from the daemon's config
    assert ("scheduler=CapacityScheduler delay_scheduling=on D=4.0s (lower bound 1.0s) "
            "delay_source=dsbra-config nodes=4") in err, err[-3000:]
    status = daemon.status()
    assert status["scheduler"]["name"] == "CapacityScheduler"
    assert status["scheduler"]["refusal"] is None
    assert raised, err[-4000:]
    # the raises it sent (the replay ends once one is: the NameNode's confirmation may come
    # rounds later, after the daemon stopped, as when it raised at the first window, 2026-11-29)
    up = daemon.raised(op="sent")
    assert up and all(r["path"] in HOT and r["reason"]["rule"] == "hot" for r in up), daemon.journal()


def test_fifo_scheduler_is_refused_in_one_line_and_in_status(second_cluster_slot, tmp_path):
    need_root()
    layout = StateLayout(second_cluster_slot.resolve())
    try:
        cl.up(ClusterSpec(workers=2, replication=1, **SECOND, scheduler="fifo"), layout,
              timeout=300, log=lambda *_: None)
        daemon = Daemon.configure(tmp_path, "fifo", daemon_config(cl.env(layout), tmp_path / "fifo",
                                                                  interval_s=5, poll_s=1))
        runs = [daemon.once() for _ in range(2)]
        shown = run_dsbra("status", "--config", str(daemon.path), timeout=60)
        env = cl.env(layout)
        ready = run_dsbra("conf", "check", "--rm", env["rm"], "--nn", env["namenode"], timeout=60)
    finally:
        cl.down(layout)
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
        # said once at start, not again for the round (it has not changed)
        assert run.stderr.count(NO_SIGNAL) == 1, run.stderr[-3000:]
        assert "Traceback" not in run.stderr
    status = daemon.status()
    assert status["scheduler"] == {"name": "FifoScheduler", "delay_scheduling": False,
                                   "delay_threshold_s": 0.0, "delay_source": "rm-conf",
                                   "nodes": 2, "refusal": NO_SIGNAL}
    assert NO_SIGNAL in status["last_round"]["refusals"]
    assert shown.returncode == 0 and f"refused: {NO_SIGNAL}" in shown.stdout, shown.stdout
    assert "scheduler FifoScheduler: delay scheduling off, 2 nodes" in shown.stdout
    # the guide's check before installing says the same, and fails
    assert ready.returncode == 1, ready.stdout + ready.stderr
    assert ready.stdout.splitlines() == [NO_SIGNAL, "2 running node(s)",
                                         "NameNode: WebHDFS on, default replication 1",
                                         "1 problem(s): dsbra cannot act on this cluster"]
