"""`dsbra bench replay --engine hive` on the bundled cluster: a real HiveServer2 (Hive 4.0.1 jars
from Maven Central, fetched by `dsbra bench hive install`) whose queries run as MapReduce jobs on
the cluster's YARN over HDFS, measured by the same collector as the MapReduce grep."""

from __future__ import annotations

import hashlib
import json
import time
import uuid

import pyarrow.parquet as pq
import pytest
import requests
from click.testing import CliRunner

from dsbra.bench.cli import bench
from dsbra.bench.data import DatasetPlan, file_content
from dsbra.results_schema import JOB_SCHEMA, TASK_SCHEMA

pytestmark = pytest.mark.cluster

SIZE = ["--size", "3m", "--block-size", "1m"]


#: metrics2's period, the age /jmx's copy of a counter can reach (MetricsSourceAdapter's jmxCacheTTL)
JMX_PERIOD_S = 10


def _scm_metrics(cluster: dict) -> dict[str, int]:
    """The SharedCacheManager's counters: uploads it accepted, cache hits and misses."""
    beans = requests.get(f"{cluster['sharedcache']}/jmx", timeout=10).json()["beans"]
    out = {}
    for bean in beans:
        if bean["name"].endswith(("name=clientRequests", "name=SharedCacheUploaderRequests")):
            out |= {k: v for k, v in bean.items() if isinstance(v, int)}
    return out


def _invoke(args):
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


@pytest.fixture(scope="module")
def hiveserver(cluster):
    _invoke(["hive", "install"])  # the project's own set-up (make test runs it first): a no-op then
    out = _invoke(["hive", "start", "--timeout", "600"])
    assert "HiveServer2" in out and " up on " in out
    yield out
    assert _invoke(["hive", "stop"]) == "HiveServer2 stopped\n"
    assert _invoke(["hive", "stop"]) == "HiveServer2 is not running\n"


@pytest.fixture(scope="module")
def dataset(cluster, webhdfs):
    path = f"/tests/hive-{uuid.uuid4().hex[:8]}"
    _invoke(["data", *SIZE, "--path", path, "--data-seed", "5"])
    yield path
    webhdfs.delete(path, recursive=True)


def test_replay_with_hive_runs_each_job_as_one_mapreduce_job_over_its_files(cluster, webhdfs, hiveserver,
                                                                            dataset, tmp_path):
    schedule = tmp_path / "s.json"
    _invoke(["schedule", "--out", str(schedule), "--jobs", "2", "--slots", "4", "--inter-arrival-s", "2",
             "--seed", "2", *SIZE, "--path", dataset, "--data-seed", "5"])
    doc = json.loads(schedule.read_text())
    # the second job reads all three files: its table's symlink file lists three paths
    doc["jobs"][1]["inputs"] = [f"{dataset}/part-{i:05d}" for i in (2, 0, 1)]
    doc["jobs"][1]["maps"] = 3
    schedule.write_text(json.dumps(doc))
    label = "hive" + dataset.rsplit("-", 1)[1]
    out = _invoke(["replay", str(schedule), "--out", str(tmp_path / "r"), "--label", label, "--engine", "hive",
                   "--job-timeout-s", "900"])
    assert "2 jobs" in out and "rows found per job" in out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["engine"] == "hive" and summary["failed_jobs"] == [] and summary["rows_mismatched"] == []
    # every schedule job mapped back to the MapReduce job Hive launched for it, by its name
    assert all(h and h.startswith("job_") for h in summary["hadoop_jobs"].values())
    assert len(set(summary["hadoop_jobs"].values())) == 2

    jobs = pq.read_table(tmp_path / "r" / "jobs.parquet")
    tasks = pq.read_table(tmp_path / "r" / "tasks.parquet")
    assert jobs.schema.equals(JOB_SCHEMA) and tasks.schema.equals(TASK_SCHEMA)
    rows = jobs.to_pylist()
    assert [r["job_id"] for r in rows] == [j["job_id"] for j in doc["jobs"]]
    # one map per input file (one block each), as with the MapReduce grep
    assert [r["maps"] for r in rows] == [len(j["inputs"]) for j in doc["jobs"]]
    for r in rows:
        assert r["node_local_maps"] + r["rack_local_maps"] + r["off_switch_maps"] == r["maps"]
        assert r["submit_s"] < r["start_s"] < r["finish_s"]
    worker_hosts = {w["host"] for w in cluster["workers"]}
    by_job: dict[str, list[int]] = {}
    for t in tasks.to_pylist():
        assert t["node"] in worker_hosts and t["locality"] in (0, 1, 2)
        assert t["scheduled_s"] <= t["launch_s"] < t["finish_s"]
        by_job.setdefault(t["job_id"], []).append(t["block_id"])
    # each map mapped to the data file it scanned (through Hive's split), each input once
    for j in doc["jobs"]:
        assert sorted(by_job[j["job_id"]]) == sorted(int(f.rsplit("-", 1)[1]) for f in j["inputs"])

    # the rows Hive returned are the lines the MapReduce grep keeps: those whose field holds XYZ
    plan = DatasetPlan(total_bytes=3 << 20, block_bytes=1 << 20, seed=5, path=dataset)
    for j in doc["jobs"]:
        want = sum(1 for f in j["inputs"] for line in file_content(plan, int(f.rsplit("-", 1)[1])).split(b"\n")
                   if b"XYZ" in line.split(b"\t", 1)[-1])
        assert summary["rows_by_job"][j["job_id"]] == summary["expected_rows_by_job"][j["job_id"]] == want
    assert sum(summary["rows_by_job"].values()) > 0
    # the per-job tables and their symlink files are gone
    assert webhdfs.status(f"/bench/hive/{label}", strict=False) is None


def _one_query(dataset: str, tmp_path, name: str) -> str:
    """A one-file Hive query through `dsbra bench replay --engine hive`; its Hadoop job id."""
    schedule = tmp_path / f"{name}.json"
    _invoke(["schedule", "--out", str(schedule), "--jobs", "1", "--slots", "4", "--seed", "3", *SIZE,
             "--path", dataset, "--data-seed", "5"])
    doc = json.loads(schedule.read_text())
    doc["jobs"][0]["inputs"], doc["jobs"][0]["maps"] = [f"{dataset}/part-00000"], 1
    schedule.write_text(json.dumps(doc))
    _invoke(["replay", str(schedule), "--out", str(tmp_path / name), "--label", name.replace("-", ""),
             "--engine", "hive", "--job-timeout-s", "900"])
    summary = json.loads((tmp_path / name / "summary.json").read_text())
    assert summary["failed_jobs"] == [] and summary["rows_mismatched"] == []
    return summary["hadoop_jobs"]["job0"]


def test_a_later_querys_job_takes_hive_exec_from_the_shared_cache(cluster, webhdfs, hiveserver, dataset,
                                                                   tmp_path):
    """The first query ships hive-exec (83 MB) as its job jar and a NodeManager uploads it to the
    shared cache after localizing it; a later query's job then names the cached copy and
    uploads nothing (the SharedCacheManager counts a hit)."""
    from dsbra.bench.hive import installed

    if not cluster["sharedcache"]:
        pytest.skip("the cluster in use runs no SharedCacheManager (not started by this session)")
    # where the cache keeps it: its SHA-256, three levels of directories by its first digits
    jar = next(installed().lib.glob("hive-exec-*.jar"))
    digest = hashlib.sha256(jar.read_bytes()).hexdigest()
    cached = f"/sharedcache/{'/'.join(digest[:3])}/{digest}/job.jar"
    if webhdfs.status(cached, strict=False) is None:  # no earlier query on this cluster
        _one_query(dataset, tmp_path, "warm-up")
    # a NodeManager uploads it after localizing it, then tells the SharedCacheManager
    deadline = time.monotonic() + 120
    while webhdfs.status(cached, strict=False) is None or _scm_metrics(cluster)["AcceptedUploads"] == 0:
        assert time.monotonic() < deadline, f"{cached} not in the cache: {_scm_metrics(cluster)}"
        time.sleep(1)
    time.sleep(JMX_PERIOD_S)  # so that the count read next includes every earlier query's hits
    hits = _scm_metrics(cluster)["CacheHits"]
    job = _one_query(dataset, tmp_path, "cached")
    props = requests.get(f"{cluster['jhs']}/ws/v1/history/mapreduce/jobs/{job}/conf",
                         headers={"Accept": "application/json"}, timeout=30).json()["conf"]["property"]
    conf = {p["name"]: p["value"] for p in props}
    assert conf["mapreduce.job.sharedcache.mode"] == "jobjar,libjars"
    assert conf["mapreduce.job.jar"] == cached
    assert conf["mapreduce.job.jobjar.sharedcache.uploadpolicy"] == "false"  # found, not shipped
    # /jmx serves metrics2 counters from a copy refreshed at most once per period, so a query
    # shorter than that can end before its hit shows: wait up to three periods
    deadline = time.monotonic() + 3 * JMX_PERIOD_S
    while _scm_metrics(cluster)["CacheHits"] <= hits:
        assert time.monotonic() < deadline, f"no cache hit counted: {_scm_metrics(cluster)}"
        time.sleep(1)
