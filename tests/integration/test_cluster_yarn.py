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


def check_container_geometry(spec) -> None:
    """The ResourceManager's own view of the cluster's containers, which decides whether Hadoop's
    job defaults can stall (issue 27): the map, reduce and AM asks are all granted at 512 MB and
    fill every NodeManager's memory exactly."""
    from dsbra.cluster import cluster as cl

    slots = cl.containers(spec)
    assert slots["nodemanagers"] == spec.workers, slots
    assert slots["map_container_mb"] == slots["am_container_mb"] == spec.map_memory_mb == 512
    assert slots["map_slots"] == spec.workers * spec.nm_memory_mb // 512
    assert slots["unused_mb_per_node"] == [0] * spec.workers


def check_concurrent_jobs(summary: dict, rm_url: str, jobs: int = 12) -> None:
    """`dsbra cluster load`'s ``jobs`` grep jobs 3 s apart with Hadoop's job defaults (issue 27):
    every container granted at the configured size, all jobs done, and never a stall (early
    reducers holding every container made the jobs wait for MapReduce's 300 s reducer
    preemption: a span with jobs waiting while no container and no finished job changed).
    The run's wall time is no test of it: the same twelve jobs took 180-443 s in CI runs of
    one code on this 2-core machine (a stall-free run at 443 s failed the 336 s bound this
    test had), while a stall shows as a span of minutes whatever the machine's speed."""
    props = requests.get(f"{rm_url}/conf", headers={"Accept": "application/json"}, timeout=10).json()["properties"]
    increment = int({p["key"]: p["value"] for p in props}["yarn.resource-types.memory-mb.increment-allocation"])
    assert summary["job_conf"] == {} and summary["jobs"] == jobs
    assert summary["failed_jobs"] == 0, summary["logs"]
    # the cluster's map, reduce and AM sizes are equal (512 MB): every sample's allocated memory
    # is that size times its containers, so no container was rounded up to the increment
    assert summary["container_mb"] == [512] and summary["uneven_samples"] == 0, summary["container_mb"]
    assert 512 % increment == 0
    assert summary["longest_stall_s"] < 60, summary["longest_stall_s"]


@pytest.mark.timeout(1200)
def test_concurrent_jobs_with_job_defaults_do_not_stall(cluster, cluster_layout):
    """Twelve jobs at once: their AMs and early reducers can hold every container of the four
    workers, which is what stalled them before issue 27."""
    from dsbra.cluster import cluster as cl
    from dsbra.cluster import loadcheck
    from dsbra.cluster.spec import ClusterSpec

    spec = ClusterSpec.from_dict(cl.status(cluster_layout).data["spec"])
    check_container_geometry(spec)
    check_concurrent_jobs(loadcheck.run(cluster_layout, jobs=12, gap_s=3.0), cluster["rm"])
