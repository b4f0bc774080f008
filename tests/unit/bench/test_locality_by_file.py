"""The locality split benchmarks/locality_by_file.py prints (dsbra.bench.analysis), on a
committed real result set (docs/benchmark.md 6.8)."""

import json

import pytest
from repo_scripts import ROOT

from dsbra.bench.analysis import locality_split, read_tasks

RUNS = ROOT / "benchmarks" / "results" / "bench-hotspot-long-oracle"


@pytest.mark.parametrize("arm", ["static-amshare0.75", "dsbra-amshare0.75", "oracle-amshare0.75"])
def test_the_hot_and_other_maps_make_up_the_runs_node_locality(arm):
    run = RUNS / arm / "rep5"
    # part-00006 is the hot file: 58 of the run's 182 maps
    hot, other = locality_split(read_tasks(run / "tasks.parquet"), hot_block=6)
    assert 58 * hot + 124 * other == pytest.approx(182 * 100 * json.loads((run / "summary.json").read_text())
                                                   ["node_locality"], abs=1)
    if arm.startswith("oracle"):  # every file on every worker: every map node-local
        assert (hot, other) == (100, 100)
