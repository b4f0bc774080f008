"""bench_daemon.py's fast poll (dsbra.bench.synthetic.DemandReplay, fast_poll_daemon): the
live-demand capture served for N jobs drives the daemon's own fast poll as its window does."""

from __future__ import annotations

from pathlib import Path

from dsbra.bench.synthetic import fast_poll_daemon

ROOT = Path(__file__).resolve().parents[3]


def test_the_replay_serves_n_asking_jobs_and_the_next_poll_reads_nothing_again(tmp_path):
    daemon, adapter = fast_poll_daemon(ROOT, tmp_path / "state", 5)
    daemon._fast_poll()
    first = daemon.status["fast_poll"]
    # each job's task list once, the four files its maps read (status and blocks)
    assert first["requests"] == {"rm.apps": 1, "rm.nodes": 1, "am.tasks": 5, "hdfs.stat": 4,
                                 "hdfs.blocks": 4}
    assert first["pending_maps"] == 3 * 2 + 2 * 5  # jobs alternate the captured two's pending
    # sixteen maps wait for blocks of three replicas on four nodes: some are short
    decided = first["recent_decisions"]
    assert decided and {d["reason"]["rule"] for d in decided} == {"demand"}
    assert {d["outcome"] for d in decided} == {"dry-run"}
    daemon._fast_poll()
    assert daemon.status["fast_poll"]["requests"] == {"rm.apps": 1, "rm.nodes": 1}
    assert daemon.status["fast_poll"]["recent_decisions"] == decided  # the same: not again
    assert adapter.files.misses == [] and adapter.requests == 2 + 5 + 2 + 1  # settings' nodes
    assert daemon.cfg.mode == "dry-run" and daemon.journal.actions == {}
