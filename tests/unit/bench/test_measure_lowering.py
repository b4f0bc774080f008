"""benchmarks/measure_lowering.py --rejudge: a drop judged by dsbra's heat among the holders
HDFS's rack rule lets a deletion take (the plugin keeps that rule), on the placement results
committed from the bundled cluster (four DataNodes on two racks)."""

import json
import subprocess
import sys

from repo_scripts import ROOT

SCRIPT = ROOT / "benchmarks" / "measure_lowering.py"
RESULTS = ROOT / "benchmarks" / "results" / "placement"


def rejudge(name: str) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), "--rejudge", str(RESULTS / name)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_plugins_misses_by_heat_alone_were_the_rack_rule():
    """2026-11-25: 33 of 36 drops on the hottest holder by heat alone; each of the 3 others
    took the hottest of the replicas the rack rule allowed, as the plugin's DEBUG lines of
    2026-12-07 show it doing."""
    raw = json.loads((RESULTS / "lowering-heat.json").read_text())["summary"]
    judged = rejudge("lowering-heat.json")["total"]
    assert raw["dropped_on_hottest"] < raw["dropped"] == judged["dropped"]
    assert judged["dropped_on_hottest_rack_rule"] == judged["dropped"]
    assert judged["dropped_outside_rack_rule"] == 0
    assert judged["dropped_on_hottest_where_heat_differs"] == judged["dropped_where_heat_differs"] > 0


def test_hdfs_default_misses_the_hottest_where_heat_tells_them_apart():
    """The same judge on HDFS's default placement: it never breaks the rack rule either, and
    where the allowed holders' heat differs it is not the hottest every time."""
    judged = rejudge("lowering-default.json")["total"]
    assert judged["dropped_outside_rack_rule"] == 0
    assert judged["dropped_on_hottest_where_heat_differs"] < judged["dropped_where_heat_differs"]
