"""hadoop-docker/ on the Capacity Scheduler (issue 22): `dsbra docker compose --scheduler
capacity`'s cluster brought up through testcontainers, a grep job in one of its queues, and the
daemon beside the NameNode reading the delay the compose file gives it.

Its own compose project and subnet (172.29.<10 + slot>.0/24), so it never meets the Fair
Scheduler's docker cluster of test_docker_cluster.py.
"""

from __future__ import annotations

import time

import pytest
import requests

from dsbra.cluster.spec import ClusterSpec
from harness import compose_cluster
from netslots import SLOT

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1500)]

# two workers: what this module checks is the scheduler and the daemon's reading of its delay,
# not locality across many nodes (test_docker_cluster.py's four workers)
WORKERS = 2
NODE_DELAY = 1  # below the 2 nodes, so the cap by cluster size does not hide it
SPEC = ClusterSpec(workers=WORKERS, replication=2, subnet=f"172.29.{10 + SLOT}.0/24",
                   scheduler="capacity", node_locality_delay=NODE_DELAY)
PROJECT = f"dsbra-test-capacity-slot{SLOT}"


@pytest.fixture(scope="module")
def compose():
    with compose_cluster(PROJECT, SPEC, scheduler="capacity", node_locality_delay=NODE_DELAY) as stack:
        yield stack


def test_the_containers_resourcemanager_runs_the_capacity_scheduler(compose):
    info = requests.get(f"{SPEC.urls['rm']}/ws/v1/cluster/scheduler",
                        timeout=10).json()["scheduler"]["schedulerInfo"]
    assert info["type"] == "capacityScheduler"
    queues = {q["queueName"]: q for q in info["queues"]["queue"]}
    assert set(queues) == {"default", "benchmark"}
    assert all(q["capacity"] == 50.0 and q["maxCapacity"] == 100.0 for q in queues.values())


def test_a_grep_job_runs_in_a_capacity_queue_in_containers(compose):
    from hdfs import InsecureClient

    root = f"/tests/cs-{time.time_ns()}"
    InsecureClient(SPEC.urls["namenode"], user="root").write(f"{root}/in/part-0",
                                                             data=b"a needle\nnone\n" * 100)
    out, err, code = compose.exec_in_container(
        ["python", "-m", "dsbra.cluster.container", "job", "--queue", "benchmark", "grep",
         f"{root}/in", f"{root}/out", "needle"], service_name="namenode")
    assert code == 0, (out + err)[-3000:]
    ids = next(line for line in out.splitlines() if line.startswith("job ids:")).split()[2:]
    deadline = time.monotonic() + 60
    while (resp := requests.get(f"{SPEC.urls['jhs']}/ws/v1/history/mapreduce/jobs/{ids[0]}",
                                timeout=10)).status_code != 200:
        assert time.monotonic() < deadline, f"the JobHistoryServer does not know {ids[0]}"
        time.sleep(1)
    job = resp.json()["job"]
    assert job["state"] == "SUCCEEDED" and job["queue"].endswith("benchmark"), job


def test_the_daemon_beside_the_namenode_reads_the_capacity_schedulers_delay(compose):
    # min(2 nodes, 1) missed opportunity, one 1 s heartbeat, from the compose file's env
    want = ("scheduler=CapacityScheduler delay_scheduling=on D=1.0s (lower bound 0.5s) "
            "delay_source=dsbra-config nodes=2")
    deadline = time.monotonic() + 180  # the first rounds (60 s) after the NMs joined
    while want not in (logs := "".join(compose.get_logs("dsbra"))):
        assert time.monotonic() < deadline, logs[-2000:]
        time.sleep(2)
