"""The daemon's CPU read-out benchmarks/daemon_cpu.py prints (dsbra.bench.analysis.daemon_run_cpu),
on the committed fast-poll sitting (docs/benchmark.md 6.13)."""

import json

import pytest
from repo_scripts import ROOT

from dsbra.bench.analysis import daemon_run_cpu, paired_by_rep

RUNS = ROOT / "benchmarks" / "results" / "bench-hotspot-fast-poll-cost"


def test_a_runs_fast_polls_are_its_rounds_and_its_share_its_cpu_over_the_wall_and_two_cpus():
    run = RUNS / "dsbra-fast-poll-dry-run-amshare0.75" / "rep1"
    cost = daemon_run_cpu(run)
    status = json.loads((run / "daemon-state" / "status.json").read_text())
    rounds = [r["fast_poll"] for r in status["recent_rounds"]]
    assert len(rounds) == cost["rounds"] == 7
    assert cost["fast_polls"] == sum(r["polls"] for r in rounds) == 65
    assert cost["ms_per_fast_poll"] == pytest.approx(1000 * cost["fast_poll_cpu_s"] / 65, abs=0.01)
    # a poll every 3 s on two CPUs
    assert cost["fast_poll_pct_at_poll_s"] == pytest.approx(100 * cost["fast_poll_cpu_s"] / 65 / 3 / 2, abs=1e-4)
    # recorded over the daemon's life, which spans the run's wall time to within 0.01 points
    assert cost["daemon_cpu_pct"] == pytest.approx(100 * cost["daemon_cpu_s"] / cost["wall_s"] / 2, abs=0.01)


def test_the_plain_dry_run_has_no_fast_polls_and_pairs_by_repetition():
    rows = {f"{arm}/{rep}": daemon_run_cpu(RUNS / arm / rep)
            for arm in ("dsbra-dry-run-amshare0.75", "dsbra-fast-poll-dry-run-amshare0.75")
            for rep in ("rep1", "rep2", "rep3", "rep4")}
    assert all(r["fast_polls"] == 0 for name, r in rows.items() if name.startswith("dsbra-dry-run"))
    paired = paired_by_rep(rows, "dsbra-dry-run-amshare0.75", {"pct": lambda r: r["daemon_cpu_pct"]})
    diffs = [rows[f"dsbra-fast-poll-dry-run-amshare0.75/rep{i}"]["daemon_cpu_pct"]
             - rows[f"dsbra-dry-run-amshare0.75/rep{i}"]["daemon_cpu_pct"] for i in range(1, 5)]
    assert paired["dsbra-fast-poll-dry-run-amshare0.75"]["pairs"] == 4
    assert paired["dsbra-fast-poll-dry-run-amshare0.75"]["pct"][0] == pytest.approx(sum(diffs) / 4, abs=0.005)
