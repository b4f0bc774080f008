"""The Spark replay's pure parts: which schedule job a task is, at which level of the schema,
and each job's outcome (the replay itself: tests/integration/test_spark.py)."""

from __future__ import annotations

from dsbra.bench.spark_replay import _app_id, job_outcomes, per_job_job_of, tasks_as_jobs
from dsbra.observe.collector import MapObservation

JOBS = [{"job_id": "job0", "submit_s": 0.0, "inputs": ["/d/part-00001"]},
        {"job_id": "job1", "submit_s": 2.0, "inputs": ["/d/part-00002", "/d/part-00003"]}]


def task(app: str, stage: int, level: str) -> MapObservation:
    return MapObservation(job_id=app, task_id=f"{app}:{stage}.0:0", attempt_id=f"{app}:{stage}",
                          scheduled_ms=0, launch_ms=1, finish_ms=2, node="w1", locality=level,
                          split_hosts=[], mem_mb=0, engine="spark")


def test_a_task_becomes_its_schedule_jobs_at_the_schemas_level():
    apps = {"job0": "application_1_0001", "job1": "application_1_0002"}
    keys, as_job = tasks_as_jobs(JOBS, per_job_job_of(apps))
    assert keys == ["spark/job0", "spark/job1"]
    seen = as_job(task("application_1_0002", 0, "PROCESS_LOCAL"))
    assert (seen.job_id, seen.locality) == ("spark/job1", "NODE_LOCAL")
    assert as_job(task("application_1_0001", 3, "ANY")).locality == "OFF_SWITCH"
    assert as_job(task("application_1_0009", 0, "NODE_LOCAL")) is None  # not the replay's


def test_outcomes_say_which_jobs_failed_and_whose_count_differs(monkeypatch):
    import dsbra.bench.spark_replay as sr

    monkeypatch.setattr(sr, "expected_rows", lambda dataset, inputs, cache: 10 * len(inputs))
    records = [{"job_id": "job0", "submitted_ms": 1500, "finished_ms": 4000, "matches": 10},
               {"job_id": "job1", "submitted_ms": 3000, "finished_ms": 5000, "matches": 19}]
    submit_s, failed, fields = job_outcomes(records, JOBS, {}, t0_wall_ms=1000)
    assert submit_s == [0.5, 2.0] and failed == []
    assert fields["matches_mismatched"] == ["job1"]
    submit_s, failed, fields = job_outcomes(
        [{"job_id": "job0", "submitted_ms": 1000, "finished_ms": 2000, "error": "lost"}], JOBS, {}, 1000)
    assert submit_s == [0.0, 2.0] and failed == ["job0", "job1"] and fields["errors"] == {"job0": "lost"}


def test_the_application_id_is_read_from_the_clients_log():
    log = "INFO Client: Submitting application application_1796571026008_0004 to ResourceManager\n"
    assert _app_id(log) == "application_1796571026008_0004" and _app_id("nothing") is None
