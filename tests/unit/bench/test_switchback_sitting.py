"""The real switchback's read-outs (dsbra.bench.switchback_sitting), on runs of the bundled
cluster committed as they were: benchmarks/bench_switchback.py's check run (one block of 150 s
periods over the long hot-spot schedule's first four jobs, 2026-12-02), the arms of 6.8's
sitting (benchmarks/results/bench-hotspot-long-grants), and the switchback of the whole long
hot-spot schedule beside one pair of arms (benchmarks/results/bench-hotspot-switchback,
2026-12-03, docs/benchmark.md 6.15)."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
from repo_scripts import ROOT

from dsbra.bench.switchback_sitting import arms_read_out, compare, replays_read_out, table
from dsbra.experiment.switchback import block_differences, read_tables
from dsbra.stats import t_quantile

SMOKE = ROOT / "benchmarks" / "results" / "bench-switchback-smoke"
RUN = SMOKE / "switchback-amshare0.75"
GRANTS = ROOT / "benchmarks" / "results" / "bench-hotspot-long-grants"
SITTING = ROOT / "benchmarks" / "results" / "bench-hotspot-switchback"


def test_the_replays_measurements_give_the_daemons_estimate():
    """The daemon's records (what `dsbra impact` read) and the replays' own collector count the
    same maps in the same periods: the same block and the same locality difference. (Their delay
    waits differ by one map, a 10 s decline the replay's view of the whole run attributed and
    the daemon's live rounds did not, and their map times by 2 s: each reads its own finish
    times.)"""
    daemon = json.loads((RUN / "impact.json").read_text())
    replays = replays_read_out(RUN)
    assert replays["node_locality"]["pairs"] == daemon["node_locality"]["pairs"] == 1
    assert math.isclose(replays["node_locality"]["diff"], daemon["node_locality"]["diff"], abs_tol=1e-3)
    assert math.isclose(replays["map_s"]["diff"], daemon["map_s"]["diff"], abs_tol=2.5)
    # every job was submitted in its period's 20 s burn-in: none is counted, so no response
    assert daemon["jobs"] == 0 and replays["response"]["pairs"] == 0


def test_one_block_and_no_arms_draw_no_interval():
    doc = compare(SMOKE, RUN, baseline="static-amshare0.75", arm="dsbra-hold-amshare0.75")
    assert doc["agreement"] == {"diff": None, "ci95": None, "agree": None}
    assert doc["arms"]["pairs"] == []
    assert "too few blocks or pairs for an interval" in table(doc)
    assert [p["arm"] for p in doc["sitting"]["periods"]] == ["on", "off"]


def test_the_arms_pair_by_repetition_over_the_jobs_the_switchback_counts():
    arms = arms_read_out(GRANTS, "static-amshare0.75", "dsbra-amshare0.75", from_s=60.0)
    assert arms["pairs"] == ["rep8", "rep9", "rep10"]
    # over all jobs, each pair's log ratio is that of the runs' own mean responses
    for rep, log in zip(arms["pairs"], arms["response_all"]["logs"]):
        means = [json.loads((GRANTS / arm / rep / "summary.json").read_text())["mean_response_s"]
                 for arm in ("static-amshare0.75", "dsbra-amshare0.75")]
        assert math.isclose(log, math.log(means[1] / means[0]), abs_tol=2e-3), rep
    # the jobs submitted in the first 60 s are left out of the counted read-out
    jobs = pq.read_table(GRANTS / "static-amshare0.75" / "rep8" / "jobs.parquet").to_pydict()
    counted = [r for s, r in zip(jobs["submit_s"], jobs["response_s"]) if s >= 60.0]
    assert 0 < len(counted) < len(jobs["submit_s"])
    assert arms["response_counted"]["logs"] != arms["response_all"]["logs"]
    lo, hi = arms["response_all"]["ci95"]
    assert lo < arms["response_all"]["diff"] < hi


def test_one_arms_pair_is_set_against_the_switchbacks_prediction_interval():
    """With one pair of arms there is no spread of the arms to draw Welch's interval from: the
    agreement is the switchback's 95% prediction interval for one more pair, its blocks'
    spread times sqrt(1 + 1/n) around the difference of the two log ratios."""
    run = SITTING / "switchback-amshare0.75"
    doc = compare(SITTING, run, baseline="static-amshare0.75", arm="dsbra-hold-amshare0.75")
    assert doc["arms"]["pairs"] == ["rep1"]
    assert doc["daemon_read_out"]["response"]["pairs"] == 4  # the minimum for an interval
    assert doc["daemon_read_out"]["response"]["ci95"] is not None
    logs = block_differences(read_tables([run / "daemon-state"])[0], "response")[1]
    arm_log = doc["arms"]["response_counted"]["logs"][0]
    d = float(logs.mean()) - arm_log
    half = t_quantile(len(logs) - 1) * float(logs.std(ddof=1)) * math.sqrt(1 + 1 / len(logs))
    ag = doc["agreement"]
    assert ag["method"] == "prediction" and ag["df"] == len(logs) - 1
    assert math.isclose(ag["diff"], math.expm1(d), abs_tol=1e-4)
    assert math.isclose(ag["ci95"][0], math.expm1(d - half), abs_tol=1e-4)
    assert math.isclose(ag["ci95"][1], math.expm1(d + half), abs_tol=1e-4)
    assert ag["agree"] == (ag["ci95"][0] <= 0 <= ag["ci95"][1])
    assert "prediction interval for one more pair" in table(doc)


def test_the_queue_adjusted_switchback_is_set_against_the_arms_too():
    run = SITTING / "switchback-amshare0.75"
    doc = compare(SITTING, run, baseline="static-amshare0.75", arm="dsbra-hold-amshare0.75")
    q, ag = doc["queue_adjusted"], doc["queue_agreement"]
    assert q["pairs"] == len(q["logs"]) == 4 and q["ci95"] is not None
    assert ag["method"] == "prediction"
    arm_log = doc["arms"]["response_counted"]["logs"][0]
    assert math.isclose(ag["diff"], math.expm1(sum(q["logs"]) / 4 - arm_log), abs_tol=1e-4)
    assert "Queue-adjusted switchback against arms" in table(doc)
