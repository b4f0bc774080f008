"""Named setups: every one builds a valid SimConfig and WorkloadSpec; the published ones keep
their values; an unknown name is a one-line input error."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from dsbra.errors import InputError
from dsbra.sim.config import SimConfig
from dsbra.sim.replicas import Replicas
from dsbra.sim.run import WorkloadSpec
from dsbra.sim.setups import SETUPS, setup


@pytest.mark.parametrize("name", list(SETUPS))
def test_every_setup_builds(name):
    s = setup(name)
    SimConfig(**s["cluster"])
    WorkloadSpec(**s["workload"])
    assert s["seeds"] >= 1


def test_published_setups_unchanged():
    assert SETUPS["paper"]["cluster"] == dict(nodes=20, slots_per_node=2, racks=2,
                                              replication=2, block_size_mb=64)
    assert SETUPS["fb2010"]["cluster"] == dict(nodes=600, slots_per_node=8, racks=20,
                                               replication=3, block_size_mb=128)
    defaults = {f.name: f.default for f in dataclasses.fields(SimConfig)}
    assert "task_overhead_s" not in SETUPS["fb2009-day"]["cluster"]
    assert defaults["task_overhead_s"] == 2.0  # the old default stays reachable


def test_paper_h1_is_hadoop1():
    c = SETUPS["paper-h1"]["cluster"]
    assert (c["slots_per_node"], c["heartbeat_s"], c["replication"], c["nodes"]) == (2, 3.0, 2, 20)
    assert c["binding"] == "task"  # Hadoop 1's JobTracker: a free slot goes to a task


def test_the_bundled_setup_heartbeats_as_the_bundled_cluster():
    template = (Path(__file__).resolve().parents[3] / "conf-templates" / "mapred-site.xml.j2").read_text()
    assert 'm.prop("yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms", 500)' in template
    assert SETUPS["bundled"]["cluster"]["am_heartbeat_s"] == 0.5
    assert "binding" not in SETUPS["bundled"]["cluster"]  # MapReduce on YARN, the default


def test_unknown_setup_is_an_input_error():
    with pytest.raises(InputError, match="unknown setup 'nope'"):
        setup("nope")


def test_csr_matches_rows_after_adds_and_removes():
    rng = np.random.default_rng(3)
    reps = Replicas(rng.permuted(np.tile(np.arange(9, dtype=np.int32), (50, 1)), axis=1)[:, :3],
                    width=6)
    for _ in range(200):
        b, n = int(rng.integers(50)), int(rng.integers(9))
        reps.add(b, n) if rng.random() < 0.6 else reps.remove(b, n)
        indptr, nodes = reps.csr()
        for blk in range(50):
            assert nodes[indptr[blk]:indptr[blk + 1]].tolist() == reps.holders(blk).tolist()


def test_cli_setup_fills_defaults_and_flags_override(tmp_path):
    import json

    from click.testing import CliRunner

    from dsbra.sim.cli import sim

    out = tmp_path / "run"
    r = CliRunner().invoke(sim, ["--setup", "paper-h1", "--jobs", "10", "--out", str(out)])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["jobs"] == 10  # the flag overrides the setup's 100 jobs
    explicit = tmp_path / "explicit"
    r = CliRunner().invoke(sim, ["--heartbeat-s", "3", "--task-overhead-s", "3.1", "--binding", "task",
                                 "--jobs", "10", "--out", str(explicit)])
    assert r.exit_code == 0, r.output
    e = json.loads((explicit / "summary.json").read_text())
    assert e["mean_response_s"] == s["mean_response_s"]
