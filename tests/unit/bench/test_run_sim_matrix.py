"""benchmarks/run_sim_matrix.py under the Spark binding (issue 69): its options are checked
together with one-line errors, and a run of the bundled setup writes rows that Spark produced."""

from __future__ import annotations

import json

import pytest
from repo_scripts import load_script

from dsbra.sim.setups import SETUPS, spark_binding

matrix = load_script("benchmarks/run_sim_matrix.py")


@pytest.mark.parametrize(("argv", "message"), [
    (["--binding", "spark"], "--binding spark writes a result set of its own: give --results-dir"),
    (["--spark-app", "shared"], "--spark-app sets the Spark application: use it with --binding "
                                "spark"),
    (["--binding", "spark", "--results-dir", "x", "--seeds", "0"], "--seeds must be at least 1"),
    (["--workers", "0"], "--workers must be at least 1"),
])
def test_a_bad_combination_is_a_one_line_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        matrix.parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in err


def test_spark_binding_defaults_to_per_job_applications(tmp_path):
    args = matrix.parse_args(["--binding", "spark", "--results-dir", str(tmp_path)])
    assert args.spark_app == "per-job"
    assert matrix.parse_args([]).spark_app is None


def test_the_settings_fit_the_setups_cluster():
    cluster = SETUPS["hotspot-stress"]["cluster"]
    shared = spark_binding(cluster, "shared")["spark"]
    assert (shared.app, shared.executors, shared.executor_cores, shared.dynamic) == \
        ("shared", 20 * 2, 1, False)
    per_job = spark_binding(SETUPS["fb2009-day"]["cluster"], "per-job")["spark"]
    assert (per_job.executors, per_job.dynamic, per_job.max_executors) == (0, True, None)
    assert shared.locality_wait_s == per_job.locality_wait_s == 3.0


def test_a_tiny_run_writes_rows_under_the_spark_binding(tmp_path):
    out = tmp_path / "spark"
    argv = ["--setups", "bundled", "--variants", "static", "oracle", "--seeds", "1",
            "--binding", "spark", "--spark-app", "shared", "--results-dir", str(out)]
    matrix.main(argv)
    rows = json.loads((out / "sim-matrix-runs.json").read_text())
    assert [(r["setup"], r["variant"], r["seed"]) for r in rows] == \
        [("bundled", "static", 100), ("bundled", "oracle", 100)]
    for r in rows:
        config = r["summary"]["config"]
        assert (config["binding"], config["spark"]["app"], r["spark_app"]) == \
            ("spark", "shared", "shared")
        assert config["spark"]["executors"] == 4 * 2
    assert rows[1]["summary"]["node_locality"] == 1.0  # the oracle: every block everywhere
    assert "Binding: Spark (`spark`, application shared" in (out / "sim-summary.md").read_text()
    # the same directory does not take rows of another binding
    with pytest.raises(SystemExit, match="holds rows of another binding"):
        matrix.main(argv[:-6] + ["--binding", "spark", "--spark-app", "per-job",
                                 "--results-dir", str(out)])
