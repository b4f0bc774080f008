"""`dsbra sim --holdout`: the daemon's experiment in the simulator, read by `dsbra impact`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dsbra.cli import cli
from dsbra.errors import ConfigError
from dsbra.experiment.config import ExperimentConfig
from dsbra.experiment.design import CONTROL, TREATMENT, Holdout
from dsbra.sim.config import SimConfig
from dsbra.sim.run import WorkloadSpec, simulate

# the oracle test's small hot-spot setup (tests/unit/sim/test_sim_oracle.py), hotter files
CLUSTER = dict(nodes=8, slots_per_node=2, racks=2, replication=2, block_size_mb=64,
               task_overhead_s=5.0, read_mbps_local=10.0, read_mbps_rack=5.0,
               read_mbps_remote=2.5, interval_s=20.0)
WORKLOAD = WorkloadSpec(jobs=60, inter_arrival_s=4.0, hot_fraction=0.05, hot_share=0.8,
                        dataset_gb=20.0, bin_scale=0.05)


@pytest.fixture(scope="module")
def holdout_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim-holdout")
    res = simulate(SimConfig(**CLUSTER, policy="dsbra", seed=3,
                             experiment=ExperimentConfig(holdout=0.5, seed=1)),
                   WORKLOAD, out_dir=out)
    return out, res


def test_control_files_are_never_copied_to(holdout_run):
    out, res = holdout_run
    groups = {json.loads(line)["file"]: json.loads(line)["group"]
              for line in (out / "experiment.jsonl").read_text().splitlines()}
    assert set(groups.values()) == {TREATMENT, CONTROL}
    assert {f: g for f, (g, _) in res.decided.items()} == groups
    # one-block files at replication 2: a file's maps are node-local only where a replica is,
    # so a control file's local maps run on at most its two base nodes; treated files gain more
    local_nodes: dict[str, set] = {}
    for f, node, local in zip(*(res.maps.column(c).to_pylist()
                                for c in ("file", "node", "replica_local"))):
        if local and f in groups:
            local_nodes.setdefault(f, set()).add(node)
    assert all(len(local_nodes.get(f, ())) <= 2 for f, g in groups.items() if g == CONTROL)
    assert any(len(local_nodes.get(f, ())) > 2 for f, g in groups.items() if g == TREATMENT)
    assert sum(r["held_out_blocks"] for r in res.rounds) > 0
    # the groups are the daemon's: the same hash of seed and path
    holdout = Holdout(0.5, seed=1)
    assert all((g == CONTROL) == holdout.is_control([f])[0] for f, g in groups.items())


def test_impact_reads_the_simulated_run(holdout_run):
    out, res = holdout_run
    result = CliRunner().invoke(cli, ["impact", str(out), "--json", "--plot",
                                      str(out / "impact.png")])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    n = {g: sum(1 for grp, _ in res.decided.values() if grp == g) for g in (TREATMENT, CONTROL)}
    assert doc["files"] == {"treated": n[TREATMENT], "control": n[CONTROL]}
    assert doc["maps"]["treated"] > 0 and doc["maps"]["control"] > 0
    for metric in ("node_locality", "delay_wait_s", "map_s"):
        r = doc[metric]
        assert r["diff"] == pytest.approx(r["treated"] - r["control"], abs=2e-4)
    assert (out / "impact.png").stat().st_size > 0


def test_a_policy_that_raises_nothing_takes_no_holdout():
    with pytest.raises(ConfigError, match="holdout"):
        SimConfig(**CLUSTER, policy="static", experiment=ExperimentConfig(holdout=0.5)).validated()
    with pytest.raises(ConfigError, match="holdout"):
        SimConfig(**CLUSTER, policy="dsbra", experiment=ExperimentConfig(holdout=2.0)).validated()
