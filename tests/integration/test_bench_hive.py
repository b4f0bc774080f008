"""`dsbra bench replay --engine hive` on the bundled cluster: a real HiveServer2 (Hive 4.0.1 jars
from Maven Central, fetched by `dsbra bench hive install`) whose queries run as MapReduce jobs on
the cluster's YARN over HDFS, measured by the same collector as the MapReduce grep."""

from __future__ import annotations

import json
import uuid

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dsbra.bench.cli import bench
from dsbra.bench.data import DatasetPlan, file_content
from dsbra.results_schema import JOB_SCHEMA, TASK_SCHEMA

pytestmark = pytest.mark.cluster

SIZE = ["--size", "3m", "--block-size", "1m"]


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
