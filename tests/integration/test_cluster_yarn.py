"""YARN and MapReduce of the bundled cluster: Fair Scheduler, locality, a real grep job."""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from dsbra.cluster.jobs import run_grep

pytestmark = pytest.mark.cluster


def test_scheduler_is_fair_with_configured_queues(cluster):
    info = requests.get(f"{cluster['rm']}/ws/v1/cluster/scheduler", timeout=10).json()["scheduler"]["schedulerInfo"]
    assert info["type"] == "fairScheduler"
    children = info["rootQueue"]["childQueues"]["queue"]
    names = {q["queueName"] for q in (children if isinstance(children, list) else [children])}
    assert set(cluster["queues"]) <= names


def test_rm_conf_shows_configured_locality_delay(cluster):
    props = requests.get(f"{cluster['rm']}/conf", headers={"Accept": "application/json"}, timeout=10).json()["properties"]
    conf = {p["key"]: p["value"] for p in props}
    assert conf["yarn.resourcemanager.scheduler.class"].endswith("fair.FairScheduler")
    assert float(conf["yarn.scheduler.fair.locality.threshold.node"]) == cluster["locality_delay"]["node"]
    assert float(conf["yarn.scheduler.fair.locality.threshold.rack"]) == cluster["locality_delay"]["rack"]


def _jhs_job(cluster, job_id: str, timeout: float = 60) -> dict:
    """The finished job as the JobHistoryServer reports it (it moves jobs in every 2 s)."""
    deadline = time.monotonic() + timeout
    url = f"{cluster['jhs']}/ws/v1/history/mapreduce/jobs/{job_id}"
    while time.monotonic() < deadline:
        resp = requests.get(url, timeout=10)
        if resp.status_code == 200:
            return resp.json()["job"]
        time.sleep(1)
    pytest.fail(f"JobHistoryServer does not know {job_id} after {timeout} s")


def test_grep_job_runs_data_local_maps_on_several_workers(cluster, webhdfs):
    check_grep_job(cluster, webhdfs,
                   lambda src, out: run_grep(src, out, "needle", queue="benchmark", timeout=300).job_ids)


def check_grep_job(cluster, webhdfs, grep) -> None:
    """grep(input, output) runs the examples' grep for 'needle' in queue benchmark and returns
    its job ids; the hadoop-docker tests run the same check with a job client in a container."""
    root = f"/tests/grep-{uuid.uuid4().hex}"
    files = 8
    for i in range(files):  # one-block files: each map reads exactly one block
        webhdfs.write(f"{root}/in/part-{i}", data=(f"line {i} dsbra needle\n" * 500).encode())
    try:
        search_job = grep(f"{root}/in", f"{root}/out")[0]
        job = _jhs_job(cluster, search_job)
        assert job["state"] == "SUCCEEDED"
        assert job["mapsTotal"] == files
        assert job["queue"] == "root.benchmark"

        counters = requests.get(f"{cluster['jhs']}/ws/v1/history/mapreduce/jobs/{search_job}/counters",
                                timeout=10).json()["jobCounters"]["counterGroup"]
        job_counters = next(g for g in counters if g["counterGroupName"].endswith("JobCounter"))
        values = {c["name"]: c["totalCounterValue"] for c in job_counters["counter"]}
        assert values.get("DATA_LOCAL_MAPS", 0) > 0

        tasks = requests.get(f"{cluster['jhs']}/ws/v1/history/mapreduce/jobs/{search_job}/tasks",
                             params={"type": "m"}, timeout=10).json()["tasks"]["task"]
        workers = {w["host"] for w in cluster["workers"]}
        hosts = set()
        for task in tasks:
            attempt = requests.get(
                f"{cluster['jhs']}/ws/v1/history/mapreduce/jobs/{search_job}/tasks/{task['id']}/attempts/"
                f"{task['successfulAttempt']}", timeout=10).json()["taskAttempt"]
            hosts.add(attempt["nodeHttpAddress"].split(":")[0])
        assert hosts <= workers
        assert len(hosts) >= 2

        with webhdfs.read(f"{root}/out/part-r-00000") as reader:
            assert reader.read().decode().split() == [str(500 * files), "needle"]
    finally:
        webhdfs.delete(root, recursive=True)
