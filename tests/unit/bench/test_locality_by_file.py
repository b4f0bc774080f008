"""benchmarks/locality_by_file.py on a committed real result set (docs/benchmark.md 6.8)."""

import json

import pytest
from repo_scripts import ROOT, load_script

RUNS = ROOT / "benchmarks" / "results" / "bench-hotspot-long-oracle"
script = load_script("benchmarks/locality_by_file.py")


@pytest.mark.parametrize("arm", ["static-amshare0.75", "dsbra-amshare0.75", "oracle-amshare0.75"])
def test_the_hot_and_other_maps_make_up_the_runs_node_locality(arm):
    run = RUNS / arm / "rep5"
    # part-00006 is the hot file: 58 of the run's 182 maps
    hot, other = script.locality_split(script.read_tasks(run / "tasks.parquet"), hot_block=6)
    assert 58 * hot + 124 * other == pytest.approx(182 * 100 * json.loads((run / "summary.json").read_text())
                                                   ["node_locality"], abs=1)
    if arm.startswith("oracle"):  # every file on every worker: every map node-local
        assert (hot, other) == (100, 100)
