"""benchmarks/locality_by_file.py on a committed real result set (docs/benchmark.md 6.8)."""

import json

import pytest
from repo_scripts import ROOT, load_script

RUNS = ROOT / "benchmarks" / "results" / "bench-hotspot-long-oracle"


@pytest.mark.parametrize("arm", ["static-amshare0.75", "dsbra-amshare0.75", "oracle-amshare0.75"])
def test_the_hot_and_other_maps_make_up_the_runs_node_locality(arm):
    split = load_script("benchmarks/locality_by_file.py").locality_split
    run = RUNS / arm / "rep5"
    hot, other = split(run / "tasks.parquet", hot_block=6)  # part-00006: 58 of the 182 maps
    assert 58 * hot + 124 * other == pytest.approx(182 * 100 * json.loads((run / "summary.json").read_text())
                                                   ["node_locality"], abs=1)
    if arm.startswith("oracle"):  # every file on every worker: every map node-local
        assert (hot, other) == (100, 100)
