"""benchmarks/read_factor_on_real_windows.py: the committed daemon runs' raises judged on their own
windows (the daemon's map records). Its reconstruction is checked where the answer is known: a
daemon that ran with read_factor 2 made no raise the test would refuse."""

import subprocess
import sys

from repo_scripts import ROOT, load_script

from dsbra.policy import dsbra as dsbra_policy

SCRIPT = "benchmarks/read_factor_on_real_windows.py"
RESULTS = ROOT / "benchmarks" / "results"
mod = load_script(SCRIPT)


def test_the_script_judges_by_the_rounds_own_floor():
    assert mod.popular_floor is dsbra_policy.popular_floor
    # the average read block's reads times f, or the most read block's when that is less
    assert dsbra_policy.popular_floor(14.0, 4, 10.0, 2.0) == 7.0  # reads 10, 2, 1, 1
    assert dsbra_policy.popular_floor(12.0, 3, 4.0, 2.0) == 4.0   # reads 4, 4, 4


def test_a_daemon_that_ran_read_factor_2_raised_nothing_the_test_refuses():
    runs = sorted((RESULTS / "bench-spark-popular" / "dsbra-popular").glob("rep*"))
    assert len(runs) >= 3
    for run in runs:
        r = mod.run_raises(run, [2.0])
        assert r["raises"], run
        assert all(x["kept"][2.0] for x in r["raises"]), run
        assert {x["path"] for x in r["raises"]} == {r["hot_file"]}, run


def test_on_6_17s_windows_read_factor_2_keeps_the_hot_file_and_drops_cold_ones():
    r = mod.run_raises(RESULTS / "bench-spark-hotspot-long" / "dsbra-hold" / "rep1", [2.0])
    assert r["hot_file"] == "/bench/grep/part-00009"
    hot = [x for x in r["raises"] if x["hot"]]
    cold = [x for x in r["raises"] if not x["hot"]]
    assert hot and all(x["kept"][2.0] for x in hot)
    assert cold and not any(x["kept"][2.0] for x in cold)
    # every raise was read at least twice in its window (min_reads 2): the windows match
    assert all(x["reads"] >= 2 for x in r["raises"])


def test_bad_arguments_are_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / SCRIPT), str(tmp_path), "--read-factors", "0"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "above 0" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, str(ROOT / SCRIPT), str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no daemon runs" in done.stderr
