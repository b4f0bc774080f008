"""benchmarks/spark_link_speed.py: the Spark sitting's schedule with faster links (issue 69). At
the bundled cluster's own links its simulation is the one the schedule was chosen by
(choose_spark_schedule.py --contention), and the copies' cost is the only difference its
"copies free" case makes."""

import json
import subprocess
import sys

import pytest
from repo_scripts import ROOT

SCRIPT = ROOT / "benchmarks" / "spark_link_speed.py"
CHOICE = ROOT / "benchmarks" / "results" / "spark-choice-long"
FIT = ROOT / "benchmarks" / "results" / "bench-spark-hotspot" / "static"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_at_the_clusters_links_it_simulates_what_chose_the_schedule(tmp_path):
    doc = json.loads((CHOICE / "choice.json").read_text())
    name = doc["choice"]
    done = run(CHOICE / f"schedule-{name}.json", "--fit", FIT, "--out", tmp_path, "--scales", 1, "--seeds", 10)
    assert done.returncode == 0, done.stderr
    rows = {r["case"]: r for r in json.loads((tmp_path / "link-speed.json").read_text())["rows"]}
    chosen = doc["candidates"][name]["arms"]
    for arm in ("static", "oracle", "dsbra-hold"):
        assert rows["x1"]["response_s"][arm] == pytest.approx(chosen[arm]["mean_response_s"], rel=1e-9), arm
    free = rows["x1, copies free"]["response_s"]
    # static and the oracle copy nothing during the run: the copies' cost cannot move them
    assert (free["static"], free["oracle"]) == (rows["x1"]["response_s"]["static"], rows["x1"]["response_s"]["oracle"])
    assert free["dsbra-hold"] != rows["x1"]["response_s"]["dsbra-hold"]


@pytest.mark.parametrize("args, message", [(["--seeds", "1"], "--seeds must be at least 2"),
                                           (["--scales", "0"], "--scales must be positive")])
def test_bad_arguments_get_one_line(tmp_path, args, message):
    done = run(CHOICE / "schedule-100jobs-gap3s-share0.9.json", "--fit", FIT, "--out", tmp_path, *args)
    assert done.returncode == 2 and message in done.stderr.strip().splitlines()[-1]
