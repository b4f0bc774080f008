"""benchmarks/sim_spark_read_factor.py: the default's cold raises on the Spark sittings'
schedules, and read_factor's (issue 69). Its default arm is the simulation spark_link_speed.py
ran at the cluster's links (the same fit, schedule and seeds), and the files it counts are the
blocks each run's rounds raised."""

import json
import subprocess
import sys

import pytest
from repo_scripts import ROOT

SCRIPT = ROOT / "benchmarks" / "sim_spark_read_factor.py"
SCHEDULE = ROOT / "benchmarks" / "results" / "bench-spark-hotspot-long" / "schedule.json"
FIT = ROOT / "benchmarks" / "results" / "bench-spark-hotspot" / "static"
LINK_SPEED = ROOT / "benchmarks" / "results" / "spark-link-speed" / "link-speed.json"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_the_default_raises_cold_files_and_read_factor_does_not(tmp_path):
    done = run(SCHEDULE, "--fit", FIT, "--out", tmp_path, "--seeds", 10, "--read-factors", 2)
    assert done.returncode == 0, done.stderr
    tables = {t["case"]: {r["arm"]: r for r in t["arms"]}
              for t in json.loads((tmp_path / "read-factor.json").read_text())["tables"]}
    links = tables["copies on links"]
    at_x1 = next(r for r in json.loads(LINK_SPEED.read_text())["rows"] if r["case"] == "x1")
    for arm in ("static", "oracle", "dsbra-hold"):
        assert links[arm]["response_s"] == pytest.approx(at_x1["response_s"][arm], rel=1e-9), arm
    for case in tables.values():
        # the default raises the hot file and several cold ones a run; read_factor 2 the hot
        # file, and a cold one in at most one run of the ten
        assert case["dsbra-hold"]["cold_files_raised"] > 2
        assert case["dsbra-hold-reads2"]["files_raised"] - case["dsbra-hold-reads2"]["cold_files_raised"] == 1.0
        assert case["dsbra-hold-reads2"]["cold_files_raised"] <= 0.1
        assert case["static"]["files_raised"] == 0.0
    assert "| dsbra-hold-reads2 |" in (tmp_path / "read-factor.md").read_text()


@pytest.mark.parametrize("args, message", [(["--seeds", "1"], "--seeds must be at least 2"),
                                           (["--read-factors", "0"], "--read-factors must be positive")])
def test_bad_arguments_get_one_line(tmp_path, args, message):
    done = run(SCHEDULE, "--fit", FIT, "--out", tmp_path, *args)
    assert done.returncode == 2 and message in done.stderr.strip().splitlines()[-1]
