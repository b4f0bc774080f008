"""`dsbra bench schedule`: schedules from the simulator's generators mapped onto the data set."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from dsbra.bench import schedule as sch
from dsbra.bench.cli import bench
from dsbra.bench.data import DatasetPlan
from dsbra.errors import InputError
from dsbra.schedule_format import load_schedule, write_schedule

PLAN = DatasetPlan(total_bytes=2 << 30, block_bytes=64 << 20)
MB = 1 << 20


def test_fb2009_bins_is_deterministic_and_reads_only_the_data_set():
    doc = sch.fb2009_bins(PLAN, slots=16, jobs=100, seed=4)
    assert doc == sch.fb2009_bins(PLAN, slots=16, jobs=100, seed=4) != sch.fb2009_bins(PLAN, slots=16, seed=5)
    files = {PLAN.file_path(i) for i in range(PLAN.files)}
    jobs = doc["jobs"]
    assert len(jobs) == 100 and all(set(j["inputs"]) <= files for j in jobs)
    assert all(j["maps"] == len(j["inputs"]) <= PLAN.files // 2 for j in jobs)
    assert sorted(j["submit_s"] for j in jobs) == [j["submit_s"] for j in jobs]
    gaps = [b["submit_s"] - a["submit_s"] for a, b in zip(jobs, jobs[1:])]
    assert 9 < sum(gaps) / len(gaps) < 20  # exponential, mean 14 s
    assert {j["bin"] for j in jobs} == set(range(1, 10))
    assert sum(j["bin"] == 1 for j in jobs) == 38  # Table 3's shares


def test_hot_files_are_read_more_than_the_rest():
    doc = sch.fb2009_bins(PLAN, slots=16, jobs=100, hot_share=0.9, hot_period_s=2000, seed=1)
    reads = {}
    for job in doc["jobs"]:
        for f in job["inputs"]:
            reads[f] = reads.get(f, 0) + 1
    top = sorted(reads.values(), reverse=True)
    hot = round(0.1 * PLAN.files)
    assert sum(top[:hot]) > 2 * sum(top[hot:2 * hot])


def _trace(tmp_path, rows):
    path = tmp_path / "trace.tsv"
    path.write_text("".join(f"job{i}\t{i * 10}\t10\t{size}\t0\t0\t{name}\n"
                            for i, (size, name) in enumerate(rows)))
    return path


def test_fb2010_keeps_which_jobs_share_inputs(tmp_path):
    rows = [(3 * 64 * MB, "a"), (64 * MB, "b"), (3 * 64 * MB, "a"), (2 * 64 * MB, "c"), (64 * MB, "b"),
            (64 * MB, "d")]
    doc = sch.fb2010(PLAN, _trace(tmp_path, rows), slots=16, jobs=6, seed=0)
    inputs = {j["trace_input"]: set(j["inputs"]) for j in doc["jobs"]}
    jobs = doc["jobs"]
    assert set(jobs[0]["inputs"]) == set(jobs[2]["inputs"]) and len(jobs[0]["inputs"]) == 3
    assert set(jobs[1]["inputs"]) == set(jobs[4]["inputs"])
    assert not inputs["a"] & inputs["b"] and not (inputs["c"] | inputs["d"]) & (inputs["a"] | inputs["b"])
    assert doc["notes"]["trace_paths_shared"] == 2 and doc["notes"]["files_of_several_paths"] == 0
    assert [j["submit_s"] for j in jobs] == pytest.approx([0, 14, 28, 42, 56, 70])


def test_fb2010_caps_maps_and_needs_input_paths(tmp_path):
    doc = sch.fb2010(PLAN, _trace(tmp_path, [(100 * 64 * MB, "big")]), slots=16, jobs=1)
    assert doc["jobs"][0]["maps"] == 16 and doc["jobs"][0]["bin"] == 5  # 100 maps before the cap
    no_paths = tmp_path / "nopaths.tsv"
    no_paths.write_text("job0\t0\t0\t100\t0\t0\n")
    with pytest.raises(InputError, match="input-path"):
        sch.fb2010(PLAN, no_paths, slots=16, jobs=1)


def test_cli_writes_a_schedule_that_loads_back(tmp_path):
    out = tmp_path / "s.json"
    result = CliRunner().invoke(bench, ["schedule", "--out", str(out), "--jobs", "20", "--size", "512m"])
    assert result.exit_code == 0, result.output
    assert "20 jobs" in result.output
    doc = load_schedule(out)
    assert doc["dataset"]["files"] == 8 and len(doc["jobs"]) == 20


@pytest.mark.parametrize("content, message", [
    ("{", "not JSON"), ('{"format": 9}', "format"), ('{"format": 1, "jobs": []}', "no jobs"),
    ('{"format": 1, "jobs": [{"job_id": "j", "submit_s": 0, "inputs": []}]}', "malformed job"),
])
def test_broken_schedules_are_input_errors(tmp_path, content, message):
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_schedule(path)


def test_the_simulator_runs_a_bench_schedule_job_for_job(tmp_path):
    """`dsbra sim --workload schedule:PATH` runs the very jobs a replay submits: same jobs,
    times, bins and input files (one block each), so simulated and real runs pair up."""
    from dsbra.sim.config import SimConfig
    from dsbra.sim.run import WorkloadSpec, build_workload, simulate

    doc = sch.fb2009_bins(PLAN, slots=8, jobs=12, seed=2)
    path = tmp_path / "s.json"
    write_schedule(path, doc)
    cfg = SimConfig(nodes=4, slots_per_node=2, racks=2, replication=2).validated()
    work = build_workload(WorkloadSpec(source=f"schedule:{path}"), cfg)
    assert list(work.job_ids) == [j["job_id"] for j in doc["jobs"]]
    assert list(work.submit_s) == [j["submit_s"] for j in doc["jobs"]]
    assert list(work.bins) == [j["bin"] for j in doc["jobs"]]
    paths = work.dataset.file_paths
    read = [[paths[work.dataset.block_file[b]] for b in work.task_block[a:z]]
            for a, z in zip(work.task_indptr, work.task_indptr[1:])]
    assert read == [j["inputs"] for j in doc["jobs"]]
    assert work.dataset.n_blocks == PLAN.files and set(work.task_mb) == {64.0}
    result = simulate(cfg, WorkloadSpec(source=f"schedule:{path}"))
    assert result.summary["jobs"] == 12 and len(result.tasks["job_id"]) == work.n_tasks


def test_a_schedule_reading_outside_its_data_set_is_refused(tmp_path):
    from dsbra.sim.workload import bench_schedule

    doc = sch.fb2009_bins(PLAN, slots=8, jobs=3, seed=2)
    doc["jobs"][1]["inputs"][0] = "/elsewhere/part-00000"
    path = tmp_path / "s.json"
    write_schedule(path, doc)
    with pytest.raises(InputError, match="not files of its data set, e.g. /elsewhere/part-00000"):
        bench_schedule(path)
