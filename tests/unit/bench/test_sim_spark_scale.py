"""benchmarks/sim_spark_scale.py: the validated Spark fit copied to a larger cluster (issue 69)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from repo_scripts import ROOT, load_script

SCRIPT = load_script("benchmarks/sim_spark_scale.py")


def test_the_fit_is_compare_sim_spark_s_on_6_19_and_scales_its_executors_and_cpus(tmp_path):
    fit = SCRIPT.load_fit(SCRIPT.FIT)
    assert fit["config"]["executors"] == 7 and fit["config"]["host_cores"] == 2  # the sitting's 4 workers
    assert fit["config"]["share_links"] and fit["config"]["copy_streams"] == 2
    schedule = tmp_path / "schedule-8w.json"
    from dsbra.bench.schedule import hot_files, scaled_schedule
    from dsbra.schedule_format import load_schedule, write_schedule

    base = load_schedule(fit["schedule"])
    write_schedule(schedule, scaled_schedule(base, 2))
    row = SCRIPT.run_one(fit, "oracle", schedule, hot_files(base, 2), seed=0, workers=8, cpus_per_worker=0.5)
    assert row["host_cores"] == 4 and row["tasks"] == 2 * sum(j["maps"] for j in base["jobs"])
    assert row["node_locality"] == 100.0 and row["extra_storage_mean"] == 300.0  # every block on all 8


def test_cpus_that_are_not_whole_on_a_size_are_refused_in_one_line():
    assert SCRIPT.host_cores(0.75, 4) == 3
    with pytest.raises(ValueError, match="not a whole number of CPUs"):
        SCRIPT.host_cores(0.75, 6)  # 4.5 CPUs on 6 workers
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sim_spark_scale.py"), "--out", "/nonexistent",
                           "--cpus-per-worker", "0.3", "--workers", "4"], capture_output=True, text=True)
    assert done.returncode == 2 and "not a whole number of CPUs" in done.stderr.splitlines()[-1]
