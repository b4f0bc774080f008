"""The collector, replayed on a real cluster's recorded answers, reproduces what it measured live
and maps every task to the block the test's inputs put under it."""

from __future__ import annotations

import json
from dataclasses import asdict

from dsbra.observe.window import build_window

from observe_captured import bodies, expected, replay_collector


def test_replay_reproduces_the_live_observations(scenario):
    c, ep, replayer, exp = replay_collector(scenario)
    obs = c.take()
    assert [asdict(o) for o in obs] == exp["observations"]
    assert not replayer.misses


def test_replay_reproduces_the_live_round(scenario):
    c, ep, replayer, exp = replay_collector(scenario)
    obs = c.take()
    doc = build_window(c, obs, window_start_ms=exp["since_ms"], window_end_ms=exp["window_end_ms"]).document()
    live = exp["round"]
    doc["observe"].pop("http_requests"), live["observe"].pop("http_requests")
    assert doc == live


def test_a_deleted_temporary_input_is_counted_not_warned(scenario, caplog):
    """grep's sort job read grep-temp-*, which its job deleted before the round (the captured
    WebHDFS reply is a FileNotFoundException): the normal life of a MapReduce job, so it is
    counted and logged at debug, and warnings stay for what an operator must act on."""
    c, ep, replayer, exp = replay_collector(scenario)
    obs = c.take()
    caplog.set_level("DEBUG", logger="dsbra")
    doc = build_window(c, obs, window_start_ms=exp["since_ms"], window_end_ms=exp["window_end_ms"]).document()
    gone = [o for o in obs if "/grep-temp-" in (o.path or "")]
    assert gone and doc["observe"]["input_gone_tasks"] == len(gone)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    assert any("is gone" in r.getMessage() for r in caplog.records if r.levelname == "DEBUG")


def test_tasks_map_to_the_blocks_of_the_chosen_inputs(scenario):
    """Ground truth: the search job reads exactly the test's inputs; each map task's split
    starts at the start of the block it is attributed to, and the split hosts the AM used
    (from TASK_STARTED) are that block's replicas."""
    exp = expected(scenario)
    truth = exp["truth"]
    search_job = exp["job_ids"][0]
    maps = [o for o in exp["observations"] if o["job_id"] == search_job]
    assert {o["path"] for o in maps} == set(truth)
    blocks = {b["block_id"]: (p, b) for p, bs in truth.items() for b in bs}
    by_block = {}
    for o in maps:
        starts = [b for b in truth[o["path"]] if b["start"] == o["start"]]
        assert len(starts) == 1, o
        assert sorted(o["split_hosts"]) == starts[0]["hosts"]
        by_block[starts[0]["block_id"]] = o
    rows = {b["block_id"]: b for b in exp["round"]["blocks"]}
    for block_id, o in by_block.items():
        assert rows[block_id]["tasks"] == 1
        assert rows[block_id]["path"] == o["path"]
        assert sorted(rows[block_id]["nodes"]) == blocks[block_id][1]["hosts"]


def test_round_is_valid_plan_input(scenario):
    doc = expected(scenario)["round"]
    assert doc["params"]["delay_threshold_s"] > 0
    for b in doc["blocks"]:
        assert set(b) >= {"block_id", "nodes", "default_replicas", "tasks", "delayed_tasks",
                          "delay_s", "y", "n", "nonlocal_tasks", "peak_readers"}
        assert 0 <= b["delayed_tasks"] <= b["tasks"] and b["delay_s"] >= 0
        assert set(b["nodes"]) <= set(doc["live_nodes"])
    json.dumps(doc)


def test_each_attempt_counts_once_across_polls_and_sources(scenario):
    """Polling again over the same answers (in-progress file then final file) adds nothing."""
    c, ep, replayer, exp = replay_collector(scenario)
    first = c.take()
    for _ in range(3):
        c.poll()
    assert c.take() == []
    assert len({o.attempt_id for o in first}) == len(first)


def test_restart_resumes_without_double_counting(scenario, tmp_path):
    """Stop the collector halfway (its state file on disk), start a new one from the file:
    together they count exactly what one uninterrupted collector counted."""
    exp = expected(scenario)
    state = tmp_path / "collector.json"
    half = exp["polls"] // 2
    c1, ep, replayer, _ = replay_collector(scenario, state_path=state, polls=half)
    taken_before = c1.take()
    from dsbra.observe.collector import Collector

    c2 = Collector(ep, since_ms=0, clock=c1.clock.restarted(), state_path=state)
    assert c2.since_ms == exp["since_ms"]
    for _ in range(exp["polls"] - half):
        c2.poll()
    together = taken_before + c2.take()
    assert sorted(o.attempt_id for o in together) == \
        sorted(o["attempt_id"] for o in exp["observations"])


def test_jobs_list_the_blocks_each_jobs_maps_read(scenario):
    """The co-read options' input: per job, the blocks its counted maps read, as the window's
    per-task rows map them (maps not mapped to a block are left out)."""
    c, ep, replayer, exp = replay_collector(scenario)
    obs = c.take()
    doc = build_window(c, obs, window_start_ms=exp["since_ms"], window_end_ms=exp["window_end_ms"],
                       detail=True, jobs=True).document()
    job_of = {o.attempt_id: o.job_id for o in obs}
    expected_jobs: dict[str, set] = {}
    for row in doc["observe"]["tasks"]:
        if row["block_id"] is not None:
            expected_jobs.setdefault(job_of[row["attempt_id"]], set()).add(row["block_id"])
    assert expected_jobs and {j: set(b) for j, b in doc["jobs"].items()} == expected_jobs
    assert all(b == sorted(b) for b in doc["jobs"].values())
    assert "jobs" not in build_window(c, obs, window_start_ms=exp["since_ms"],
                                      window_end_ms=exp["window_end_ms"]).document()


def test_each_finished_job_is_handed_out_once_with_the_rms_times(scenario, tmp_path):
    """The jobs whose final history was read, with the RM's submit and finish times and their
    map tasks (a switchback's job response, issue 45), each once; kept across a restart."""
    c, ep, replayer, exp = replay_collector(scenario, state_path=tmp_path / "collector.json")
    apps = {}
    for _, body in bodies(scenario, lambda url: "/ws/v1/cluster/apps" in url):
        for app in (json.loads(body).get("apps") or {}).get("app") or []:
            apps["job_" + app["id"][len("application_"):]] = app
    from dsbra.observe.collector import Collector

    again = Collector(ep, state_path=tmp_path / "collector.json", clock=lambda: 0.0)
    jobs = c.take_jobs()
    assert again.take_jobs() == jobs  # persisted with the collector's state
    assert sorted(j["job_id"] for j in jobs) == sorted(exp["job_ids"])
    maps = {}
    for o in exp["observations"]:
        maps[o["job_id"]] = maps.get(o["job_id"], 0) + 1
    for j in jobs:
        app = apps[j["job_id"]]
        assert (j["submit_ms"], j["finish_ms"]) == (app["startedTime"], app["finishedTime"])
        assert j["maps"] == maps[j["job_id"]]
    assert c.take_jobs() == []
