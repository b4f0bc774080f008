"""The bundled cluster on the Capacity Scheduler (issue 22), started from a values file: its
queues and assignment settings, a grep job in one of them, dsbra reading its delay scheduling,
`dsbra conf check` against it, and Spark (enabled in the values) running in a queue of its."""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml
from hdfs import InsecureClient

from dsbra.cluster.jobs import run_grep
from dsbra.cluster.values import parse_values
from dsbra.hadoop.rest import ResourceManager
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.delay_threshold import settings_from_conf
from netslots import SECOND
from harness import run_dsbra

pytestmark = pytest.mark.cluster

# a node delay below the 4 nodes, so the cap by cluster size does not hide whether dsbra read it;
# the queues as values declare them, and assignment settings away from Hadoop's defaults
VALUES = {"cluster": {"workers": 4, **SECOND}, "hdfs": {"replication": 2},
          "yarn": {"scheduler": "capacity", "node_locality_delay": 2, "max_container_assignments": 8,
                   "max_offswitch_assignments": 2},
          "capacity_queues": [{"name": "default", "capacity": 50}, {"name": "benchmark", "capacity": 50}],
          "spark": {"enabled": True}}
SPEC = parse_values(VALUES).spec


@pytest.fixture(scope="module")
def capacity_cluster(second_slot):
    return second_slot.cluster(SPEC)[:2]


def test_the_resourcemanager_runs_the_capacity_scheduler_with_the_rendered_queues(capacity_cluster):
    _, env = capacity_cluster
    info = requests.get(f"{env['rm']}/ws/v1/cluster/scheduler",
                        timeout=10).json()["scheduler"]["schedulerInfo"]
    assert info["type"] == "capacityScheduler"
    queues = {q["queueName"]: q for q in info["queues"]["queue"]}
    assert set(queues) == {"default", "benchmark"}
    assert all(q["capacity"] == 50.0 and q["maxCapacity"] == 100.0 for q in queues.values())


def test_dsbra_takes_the_node_delay_the_resourcemanager_does_not_show(capacity_cluster):
    _, env = capacity_cluster
    ep = Endpoints.from_urls(env["rm"], env["namenode"], env["jhs"], user="root")
    conf = ep.rm.conf()
    assert conf["yarn.resourcemanager.scheduler.class"].endswith("capacity.CapacityScheduler")
    # the RM's /conf holds yarn-site.xml and friends, not capacity-scheduler.xml
    assert not any(k.startswith("yarn.scheduler.capacity.") for k in conf)
    unknown = settings_from_conf(conf, nodes=SPEC.workers)
    assert unknown.delay_source == "hadoop-default"  # min(4 nodes, 40) opportunities
    assert unknown.delay_scheduling and unknown.delay_threshold_s == pytest.approx(4.0)
    given = Collector(ep, node_locality_delay=SPEC.node_locality_delay).settings()
    # min(4 nodes, the cluster's 2) missed opportunities, one heartbeat (1 s) each
    assert given.delay_source == "dsbra-config"
    assert given.delay_threshold_s == pytest.approx(2.0) and given.container_mb(512) == 512


def test_the_resourcemanager_took_the_assignment_settings_from_the_values(capacity_cluster):
    """(its log is the only place it shows them: not /conf, not the scheduler reply)"""
    layout, _ = capacity_cluster
    log = layout.log("resourcemanager").read_text()
    assert "Initialized CapacityScheduler with" in log
    assert "assignMultipleEnabled=true, maxAssignPerHeartbeat=8, offswitchPerHeartbeatLimit=2" in log


def test_conf_check_finds_no_difference_from_the_values(capacity_cluster, tmp_path):
    _, env = capacity_cluster
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES))
    proc = run_dsbra("conf", "check", "--rm", env["rm"], "--nn", env["namenode"], "--values", str(values))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "no difference from the live cluster"
    # what the RM shows nowhere is a note, not a difference
    [note] = lines[:-1]
    assert note.startswith("note: capacity-scheduler.xml not compared")
    assert "node-locality-delay 2" in note and "per-node-heartbeat.maximum-offswitch-assignments 2" in note
    # the same through the files `conf render` writes, capacity-scheduler.xml among them
    rendered = tmp_path / "rendered"
    assert run_dsbra("conf", "render", "--values", str(values), "--out", str(rendered)).returncode == 0
    proc = run_dsbra("conf", "check", "--rm", env["rm"], "--rendered", str(rendered))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_conf_check_reports_a_queue_whose_capacity_differs(capacity_cluster, tmp_path):
    _, env = capacity_cluster
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES | {"capacity_queues": [{"name": "default", "capacity": 70},
                                                                   {"name": "benchmark", "capacity": 30}]}))
    proc = run_dsbra("conf", "check", "--rm", env["rm"], "--values", str(values))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "2 difference(s) from the live cluster"
    assert "capacity-scheduler.xml root.benchmark capacity: rendered 30.0, live 50.0" in lines
    assert "capacity-scheduler.xml root.default capacity: rendered 70.0, live 50.0" in lines


def _history_job(env: dict, job_id: str, timeout_s: float = 60) -> dict:
    """The finished job as the JobHistoryServer reports it (it moves jobs in every few s)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        resp = requests.get(f"{env['jhs']}/ws/v1/history/mapreduce/jobs/{job_id}", timeout=10)
        if resp.status_code == 200:
            return resp.json()["job"]
        time.sleep(1)
    pytest.fail(f"the JobHistoryServer does not know {job_id} after {timeout_s} s")


def test_a_grep_job_runs_in_a_capacity_queue(capacity_cluster):
    layout, env = capacity_cluster
    client = InsecureClient(env["namenode"], user="root")
    root = f"/tests/grep-{uuid.uuid4().hex}"
    for i in range(4):
        client.write(f"{root}/in/part-{i}", data=(f"line {i} dsbra needle\n" * 300).encode())
    result = run_grep(f"{root}/in", f"{root}/out", "needle", queue="benchmark", timeout=300,
                      state_dir=layout.root)
    job = _history_job(env, result.job_ids[0])
    assert job["state"] == "SUCCEEDED" and job["mapsTotal"] == 4
    assert job["queue"].split(".")[-1] == "benchmark"
    with client.read(f"{root}/out/part-r-00000") as reader:
        assert reader.read().decode().split() == ["1200", "needle"]


def test_spark_runs_in_the_capacity_schedulers_default_queue(capacity_cluster):
    """Spark on this cluster as the values enabled it: PySpark's grep (two executors) in the
    default queue, its count the file's."""
    layout, env = capacity_cluster
    client = InsecureClient(env["namenode"], user="root")
    path = f"/tests/spark-{uuid.uuid4().hex}"
    client.write(path, data=b"alpha hot beta\n" * 1000)
    grep = Path(__file__).resolve().parents[2] / "dsbra" / "bench" / "spark" / "grep.py"
    proc = subprocess.run([env["spark_submit"], "--conf", "spark.executor.instances=2", str(grep), "hot",
                           env["fs"] + path], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "job 0 matches 1000" in proc.stdout
    app_id = re.search(r"application_\d+_\d+", proc.stderr).group(0)
    app = next(a for a in ResourceManager(env["rm"]).apps(app_type="SPARK") if a["id"] == app_id)
    assert app["finalStatus"] == "SUCCEEDED" and app["queue"] in ("default", "root.default"), app
