"""`dsbra bench data | schedule | replay` on the bundled cluster: a tiny data set, a two-job
schedule, its replay, and the results in the simulator's schema (the smoke version of issue 11)."""

from __future__ import annotations

import json
import time
import uuid

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dsbra.bench.cli import bench
from dsbra.bench.data import DatasetPlan, file_content
from dsbra.errors import InputError
from dsbra.results_schema import JOB_SCHEMA, TASK_SCHEMA

pytestmark = pytest.mark.cluster

SIZE = ["--size", "3m", "--block-size", "1m"]


@pytest.fixture(scope="module")
def dataset(cluster, webhdfs):
    path = f"/tests/bench-{uuid.uuid4().hex[:8]}"
    yield path
    webhdfs.delete(path, recursive=True)
    webhdfs.delete(f"/bench/out/{path.rsplit('-', 1)[1]}", recursive=True)


def _invoke(args):
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def test_data_is_one_block_files_at_base_replication_and_idempotent(cluster, webhdfs, dataset):
    out = _invoke(["data", *SIZE, "--path", dataset, "--data-seed", "3"])
    assert "3 written, 0 kept" in out
    plan = DatasetPlan(total_bytes=3 << 20, block_bytes=1 << 20, seed=3, path=dataset)
    for i in range(3):
        status = webhdfs.status(plan.file_path(i))
        assert status["length"] == plan.file_bytes and status["replication"] == 2
        assert status["blockSize"] == 1 << 20
    with webhdfs.read(plan.file_path(1)) as reader:
        assert reader.read() == file_content(plan, 1)
    webhdfs.set_replication(plan.file_path(2), 3)  # as a daemon arm leaves it
    assert "0 written, 3 kept (1 set back to replication 2)" in _invoke(
        ["data", *SIZE, "--path", dataset, "--data-seed", "3"])
    result = CliRunner().invoke(bench, ["data", *SIZE, "--path", dataset, "--data-seed", "4"])
    assert isinstance(result.exception, InputError) and "another data set" in str(result.exception)


def test_replay_runs_the_schedule_and_writes_results(cluster, webhdfs, dataset, tmp_path):
    schedule = tmp_path / "s.json"
    _invoke(["schedule", "--out", str(schedule), "--jobs", "2", "--slots", "4", "--inter-arrival-s", "2",
             "--seed", "1", *SIZE, "--path", dataset, "--data-seed", "3"])
    doc = json.loads(schedule.read_text())
    label = dataset.rsplit("-", 1)[1]
    out = _invoke(["replay", str(schedule), "--out", str(tmp_path / "r"), "--label", label,
                   "--job-timeout-s", "600"])
    assert "2 jobs" in out
    jobs = pq.read_table(tmp_path / "r" / "jobs.parquet")
    tasks = pq.read_table(tmp_path / "r" / "tasks.parquet")
    assert jobs.schema.equals(JOB_SCHEMA) and tasks.schema.equals(TASK_SCHEMA)
    rows = jobs.to_pylist()
    assert [r["job_id"] for r in rows] == [j["job_id"] for j in doc["jobs"]]
    assert [r["maps"] for r in rows] == [j["maps"] for j in doc["jobs"]]
    for r in rows:
        assert r["node_local_maps"] + r["rack_local_maps"] + r["off_switch_maps"] == r["maps"]
        assert r["submit_s"] < r["start_s"] < r["finish_s"]
    worker_hosts = {w["host"] for w in cluster["workers"]}
    for t in tasks.to_pylist():
        assert t["node"] in worker_hosts and t["locality"] in (0, 1, 2)
        assert t["scheduled_s"] <= t["launch_s"] < t["finish_s"]
        assert f"{dataset}/part-{t['block_id']:05d}" in doc["jobs"][int(t["job_id"][3:])]["inputs"]
    # the grep kept exactly the input lines whose value holds XYZ
    plan = DatasetPlan(total_bytes=3 << 20, block_bytes=1 << 20, seed=3, path=dataset)
    first = doc["jobs"][0]
    expected = sorted(line for f in first["inputs"]
                      for line in file_content(plan, int(f.rsplit("-", 1)[1])).split(b"\n")
                      if b"XYZ" in line.split(b"\t", 1)[-1])
    found = []
    for name in webhdfs.list(f"/bench/out/{label}/{first['job_id']}"):
        if name.startswith("part-m-"):
            with webhdfs.read(f"/bench/out/{label}/{first['job_id']}/{name}") as reader:
                found += [line for line in reader.read().split(b"\n") if line]
    assert sorted(found) == expected
    storage = json.loads((tmp_path / "r" / "storage.json").read_text())
    assert storage["rows"] and all(r[1] >= r[2] > 0 for r in storage["rows"])
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["failed_jobs"] == [] and summary["maps"] == sum(j["maps"] for j in doc["jobs"])
    assert summary["clients"] == "one"  # every job from the one submitter JVM, its events logged
    assert summary["late_submissions_s_max"] < 30
    # the report reads the replay as one arm (its directory's name)
    from dsbra.report.paper import report

    md = report([tmp_path / "r"], tmp_path / "report").read_text()
    assert "| r | 1 | 2 |" in md
    assert all((tmp_path / "report" / png).stat().st_size > 0
               for png in ("response-cdf.png", "locality-by-bin.png", "delay-by-bin.png",
                           "storage-over-time.png"))


def test_replay_with_a_client_per_job_gives_the_same_results(cluster, dataset, tmp_path):
    """`--clients per-job`, how the earlier result sets ran: a waiting client JVM per job."""
    schedule = tmp_path / "s.json"
    _invoke(["schedule", "--out", str(schedule), "--jobs", "2", "--slots", "4", "--inter-arrival-s", "2",
             "--seed", "1", *SIZE, "--path", dataset, "--data-seed", "3"])
    doc = json.loads(schedule.read_text())
    out = _invoke(["replay", str(schedule), "--out", str(tmp_path / "p"), "--clients", "per-job",
                   "--label", dataset.rsplit("-", 1)[1] + "-per-job", "--job-timeout-s", "600"])
    assert "2 jobs" in out
    summary = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert summary["clients"] == "per-job" and summary["failed_jobs"] == []
    assert summary["maps"] == sum(j["maps"] for j in doc["jobs"])


def test_job_conf_reaches_every_job_uber_mode_runs_its_maps_in_the_am(cluster, dataset, tmp_path):
    """`--job-conf` (run_bench_matrix.py's AM start-up arms): the submitter sets the properties
    on every job, so with uber mode on (and its input limit above the jobs') the ResourceManager
    never places a map: each job's maps run inside its ApplicationMaster, on one node."""
    from dsbra.observe.collector import Endpoints

    schedule = tmp_path / "s.json"
    _invoke(["schedule", "--out", str(schedule), "--jobs", "2", "--slots", "4", "--inter-arrival-s", "2",
             "--seed", "1", *SIZE, "--path", dataset, "--data-seed", "3"])
    doc = json.loads(schedule.read_text())
    conf = {"mapreduce.job.ubertask.enable": "true", "mapreduce.job.ubertask.maxbytes": str(1 << 30)}
    _invoke(["replay", str(schedule), "--out", str(tmp_path / "u"), "--label", dataset.rsplit("-", 1)[1] + "-uber",
             "--job-timeout-s", "600", *[a for k, v in conf.items() for a in ("--job-conf", f"{k}={v}")]])
    summary = json.loads((tmp_path / "u" / "summary.json").read_text())
    assert summary["failed_jobs"] == [] and summary["job_conf"] == conf
    assert summary["maps"] == sum(j["maps"] for j in doc["jobs"])
    ep = Endpoints.from_urls(cluster["rm"], cluster["namenode"], cluster["jhs"], user="root")
    tasks = pq.read_table(tmp_path / "u" / "tasks.parquet").to_pylist()
    for bench_id, hadoop_id in zip([j["job_id"] for j in doc["jobs"]], summary["hadoop_job_ids"]):
        assert ep.jhs.job(hadoop_id)["uberized"] is True
        properties = {p["name"]: p["value"] for p in ep.jhs.get_json(
            f"/ws/v1/history/mapreduce/jobs/{hadoop_id}/conf")["conf"]["property"]}
        assert {k: properties[k] for k in conf} == conf
        assert len({t["node"] for t in tasks if t["job_id"] == bench_id}) == 1


def test_the_submitter_reports_a_job_it_could_not_submit(cluster, cluster_layout, dataset, tmp_path):
    """A missing input fails the job's submission; the submitter says which and why, goes on
    with the others and exits non-zero."""
    from dsbra.bench.grepjar import cluster_grep_jar
    from dsbra.bench.submitter import ScheduleClient, follow
    from dsbra.cluster import state as st

    layout = cluster_layout
    data = st.load(layout.state_file)
    jar = cluster_grep_jar(data)
    label = uuid.uuid4().hex[:8]
    plan = [(0.0, "missing-input", f"{dataset}/no-such-file", f"/bench/out/{label}/a"),
            (0.5, "missing-input-2", f"{dataset}/no-such-file-2", f"/bench/out/{label}/b")]
    client = ScheduleClient(layout, jar, plan, int(time.time() * 1000), log_path=tmp_path / "submitter.log")
    follow(client, lambda: None, timeout_s=120, interval_s=0.5)
    assert client.close() == 1
    assert [j.state for j in client.jobs] == ["SUBMIT_FAILED", "SUBMIT_FAILED"]
    assert all("Input path does not exist" in j.error and j.job_id is None for j in client.jobs)
    assert all(j.submitting_ms is not None for j in client.jobs)


def test_schedule_slots_auto_are_the_map_slots_the_resourcemanager_reports(cluster, cluster_layout, dataset,
                                                                          tmp_path):
    from dsbra.cluster import cluster as cl
    from dsbra.cluster.spec import ClusterSpec

    schedule = tmp_path / "auto.json"
    _invoke(["schedule", "--out", str(schedule), "--jobs", "2", "--slots", "auto", *SIZE, "--path", dataset,
             "--data-seed", "3", "--state-dir", str(cluster_layout.root)])
    spec = ClusterSpec.from_dict(cl.status(cluster_layout).data["spec"])
    assert json.loads(schedule.read_text())["params"]["slots"] == cl.containers(spec)["map_slots"] > 0
