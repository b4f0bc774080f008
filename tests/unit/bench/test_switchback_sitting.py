"""The real switchback's read-outs (dsbra.bench.switchback_sitting), on runs of the bundled
cluster committed as they were: benchmarks/bench_switchback.py's check run (one block of 150 s
periods over the long hot-spot schedule's first four jobs, 2026-12-02) and the arms of 6.8's
sitting (benchmarks/results/bench-hotspot-long-grants)."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
from repo_scripts import ROOT

from dsbra.bench.switchback_sitting import arms_read_out, compare, replays_read_out, table

SMOKE = ROOT / "benchmarks" / "results" / "bench-switchback-smoke"
RUN = SMOKE / "switchback-amshare0.75"
GRANTS = ROOT / "benchmarks" / "results" / "bench-hotspot-long-grants"


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
