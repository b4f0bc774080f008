"""The status page (daemon/page.py) on a state dir a real daemon left (tests/fixtures/page:
a holdout run's status, journal and map records) and on the status documents of committed
benchmark runs, served by the daemon's own HTTP server and opened in a real browser (Debian's
Chromium, through ChromeDriver and Selenium); in an operator's units (issue 70)."""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dsbra.daemon.config import load_config
from dsbra.daemon.page import (count, duration, experiment_estimate, locality_trend, open_intents,
                               raise_effects, read_journal, render)
from dsbra.daemon.service import Daemon

ROOT = Path(__file__).resolve().parents[3]
STATE = ROOT / "tests" / "fixtures" / "page" / "daemon-holdout"
#: committed benchmark runs' state dirs: a daemon of a later version (its last rounds in the
#: status), and a switchback's
HOLD = ROOT / "benchmarks/results/bench-hotspot-hold/dsbra-amshare0.75/rep1/daemon-state"
SWITCHBACK = ROOT / "benchmarks/results/bench-hotspot-switchback/switchback-amshare0.75/daemon-state"
#: the open change of the recorded journal seen 672284 s later (the issue's "7 d 18 h")
WEEK_LATER_S = 672_284
#: where the browser test leaves its screenshot (CI keeps the workspace's files)
ARTIFACTS = Path(os.environ.get("DSBRA_TEST_ARTIFACTS", Path(__file__).resolve().parents[3]
                                / ".dsbra" / "test-artifacts"))


def _recorded() -> tuple[dict, list[dict]]:
    return json.loads((STATE / "status.json").read_text()), read_journal(STATE / "journal.jsonl")


def _rounds_of_the_map_records() -> list[dict]:
    """The recorded run's rounds that saw maps, with the counts a round's status carries
    (observe.window's per-engine tasks, node-local tasks, delayed tasks and wait), summed from
    the map records the daemon kept, one file per round: its status.json predates
    recent_rounds. For MapReduce a map's recorded delay_wait_s is its locality wait."""
    rounds = []
    for path in sorted((STATE / "maps").glob("*/*.parquet")):
        maps = pq.read_table(path).to_pylist()
        wait = sum(m["delay_wait_s"] for m in maps)
        rounds.append({"window_end_ms": int(path.stem), "map_tasks": len(maps), "engines": {
            "mapreduce": {"tasks": len(maps), "node_local_tasks": sum(m["split_local"] for m in maps),
                          "delayed_tasks": sum(m["delayed"] for m in maps), "delay_s": wait,
                          "locality_wait_s": wait}}})
    return rounds


def test_the_page_of_a_recorded_state_dir_says_what_was_watched_decided_and_held():
    status, journal = _recorded()
    (still_open,) = open_intents(journal)
    page = render(status, journal, estimate=experiment_estimate(STATE),
                  now_s=still_open["ts"] + WEEK_LATER_S)
    text = re.sub(r"<[^>]+>", " ", page)
    sched = status["scheduler"]
    assert f"{sched['name']} , delay scheduling on, D = {sched['delay_threshold_s']:.1f} s" in text
    assert f"({sched['delay_source']}), 4 nodes." in text
    # in an operator's units: how long the change has been open, and plurals that agree
    assert f"<td>{still_open['round']}</td><td>7 d 18 h</td>" in page
    assert "Holdout 50% (seed 4): 1 file treated, 1 held out." in text
    assert not re.search(r"\b1 [a-z]+s\b", text), re.findall(r"\b1 [a-z]+s\b", text)
    raised = {r["path"] for r in journal if r.get("op") == "intent" and r["target"] > r["base"]}
    for path in raised:  # every file the journal left above base, with its chart
        assert path in page
    assert page.count('<svg class="chart"') >= 1
    assert "held out" in text and "95% interval" in text
    assert "No block was read in the last round's window." in page  # its last round was quiet


def test_the_hottest_blocks_of_the_last_round_show_the_reads_behind_their_rf():
    status = json.loads((STATE.parent / "capacity-status.json").read_text())
    top = status["last_round"]["top_hot_files"]
    page = render(status, [])
    assert "CapacityScheduler" in page and len(top) == 2
    for b in top:
        assert (f"<td>{b['file']}</td><td>{b['block_id']}</td><td>{b['rf']:.3g}</td>"
                f"<td>{b['tasks']}</td><td>{b['delayed_tasks']}</td>") in page
    assert all(f'href="{link}"' in page for link in ("status", "metrics", "heat"))  # relative
    assert 'href="/' not in page and "<script" not in page


def test_an_empty_state_and_an_unreachable_cluster_are_said_plainly():
    page = render({"state": "starting", "mode": "apply", "rounds": 0}, [])
    assert "No round has ended yet." in page and "not connected yet" in page
    assert "No file is above its base replication." in page
    skipped = {"state": "running", "mode": "apply", "rounds": 3, "last_round": {
        "round": 3, "window_end_ms": 1_795_800_000_000, "decisions": [], "refusals": [],
        "skipped": "cannot reach ResourceManager at http://rm:8088: ConnectionError"}}
    page = render(skipped, [])
    assert "skipped: cannot reach ResourceManager at http://rm:8088: ConnectionError" in page


def test_names_from_the_cluster_are_escaped_and_open_changes_listed():
    journal = [{"op": "intent", "id": 1, "ts": 100.0, "path": "/data/<b>x&y", "before": 1,
                "target": 3, "base": 1, "reason": {"rule": "hot", "rf": 0.5}, "round": 2},
               {"op": "sent", "id": 1, "ts": 101.0, "detail": ""}]
    assert [r["id"] for r in open_intents(journal)] == [1]
    page = render({"state": "running", "mode": "apply", "rounds": 2}, journal, now_s=160.0)
    assert "/data/&lt;b&gt;x&amp;y" in page and "<b>x&y" not in page
    assert "<td>1 min</td>" in page  # open for, since its intent
    assert open_intents(journal + [{"op": "done", "id": 1, "ts": 130.0}]) == []


def test_durations_and_counts_read_as_an_operator_says_them():
    assert [duration(s) for s in (0.4, 45.3, 60, 65, 800, 3700, 86400, WEEK_LATER_S, -3, None)] == [
        "0 s", "45 s", "1 min", "1 min 5 s", "13 min 20 s", "1 h 1 min", "1 d", "7 d 18 h", "0 s", "-"]
    assert [count(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]


def test_a_switchbacks_periods_are_said_in_minutes():
    status = json.loads((SWITCHBACK / "status.json").read_text())
    assert status["experiment"]["switchback"]["period_s"] == 800
    page = render(status, read_journal(SWITCHBACK / "journal.jsonl"))
    assert "periods of 13 min 20 s, the first 1 min of each left out" in page


def test_the_trend_of_node_locality_and_wait_is_drawn_over_the_last_rounds():
    """The recorded run's rounds that saw maps, each a point of both lines; the points' titles
    carry each round's numbers."""
    status, journal = _recorded()
    rounds = _rounds_of_the_map_records()
    trend = locality_trend(rounds)
    assert len(trend) == 7 and all(trend)
    page = render(status | {"recent_rounds": rounds}, journal)
    (svg,) = re.findall(r'<svg class="trend".*?</svg>', page)
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 2 * len(rounds)
    for r, local, wait in trend:
        engine = r["engines"]["mapreduce"]
        assert local == engine["node_local_tasks"] / engine["tasks"]
        assert f"{local:.0%} of its tasks node-local, mean wait {wait:.3g} s</title>" in svg
    top = max(wait for _, _, wait in trend)
    assert f">{top:.3g} s</text>" in svg and ">100%</text>" in svg  # both axes' tops
    # a round that saw no task is a gap: the lines break there
    quiet = {"window_end_ms": rounds[3]["window_end_ms"] + 1, "map_tasks": 0, "engines": {}}
    gapped = render(status | {"recent_rounds": rounds[:4] + [quiet] + rounds[4:]}, journal)
    assert re.search(r'<svg class="trend".*?</svg>', gapped)[0].count("<polyline") == 4


def test_a_status_without_per_engine_counts_says_it_has_no_trend():
    """A daemon of a later version than the fixture's but before the per-engine counts: its
    last rounds are tabled, not drawn."""
    status = json.loads((HOLD / "status.json").read_text())
    assert len(status["recent_rounds"]) == 10 and not any("engines" in r for r in status["recent_rounds"])
    page = render(status, read_journal(HOLD / "journal.jsonl"))
    assert "No trend yet: fewer than two of the last rounds counted their tasks' locality." in page
    assert '<svg class="trend"' not in page and page.count("<tr><td>") >= 10


def test_dsbra_status_html_writes_the_page_of_a_state_dir(tmp_path, capsys):
    from dsbra.cli import main

    state = tmp_path / "state"
    shutil.copytree(STATE, state)
    cfg = tmp_path / "dsbra.yaml"
    cfg.write_text(f"state_dir: {state}\ncluster: {{rm: http://rm:8088, webhdfs: http://nn:9870}}\n")
    out = tmp_path / "page.html"
    with pytest.raises(SystemExit) as exc:
        main(["status", "--config", str(cfg), "--html", str(out)])
    assert exc.value.code == 0
    assert "Files above their base replication" in out.read_text()
    with pytest.raises(SystemExit) as exc:
        main(["status", "--config", str(cfg), "--html", str(tmp_path / "no" / "p.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code != 0 and len(err) == 1 and err[0].startswith("dsbra: error: cannot write ")


@pytest.fixture
def served(tmp_path):
    """The real daemon's HTTP server over a copy of the recorded state dir: the daemon object
    as after its last round (its status document loaded, its last rounds those of its map
    records), no cluster needed to read it."""
    from dsbra.daemon.http import serve

    state = tmp_path / "state"
    shutil.copytree(STATE, state)
    cfg = tmp_path / "dsbra.yaml"
    cfg.write_text(f"state_dir: {state}\ninterval_s: 30\nexperiment: {{holdout: 0.5}}\n"
                   "cluster: {rm: http://rm:8088, webhdfs: http://nn:9870}\n")
    daemon = Daemon(load_config(str(cfg)))
    daemon.status = json.loads((state / "status.json").read_text()) | {
        "recent_rounds": _rounds_of_the_map_records()}
    daemon.round = daemon.status["rounds"]
    server = serve(daemon, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_daemon_serves_the_page_at_its_root(served):
    with urllib.request.urlopen(served + "/?refresh") as reply:
        assert reply.headers["Content-Type"].startswith("text/html")
        page = reply.read().decode()
    assert '<meta http-equiv="refresh" content="30">' in page
    assert "Files above their base replication" in page


def test_the_page_in_a_real_browser(served):
    """Headless Chromium renders it: the headings, the replication charts, the trend of the
    last rounds and the raised file's before and since are there, and a screenshot is kept as
    the test's artifact."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--window-size=1200,1400"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options,
                              service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))
    try:
        driver.get(served + "/")
        headings = [h.text for h in driver.find_elements(By.TAG_NAME, "h2")]
        assert headings == ["Last rounds", "Hottest blocks of the last round",
                            "Files above their base replication", "Before and since each raise",
                            "Open changes", "Held back by the rails", "Experiment"]
        assert driver.title.startswith("dsbra: ")
        charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart polyline")
        assert charts and all(c.size["width"] > 0 for c in charts)
        trend = driver.find_elements(By.CSS_SELECTOR, "svg.trend polyline")
        assert len(trend) == 2 and all(line.size["width"] > 200 for line in trend)
        bars = driver.find_elements(By.CSS_SELECTOR, "svg.bars rect")  # before and since the raise
        assert len(bars) == 4 and all(b.size["height"] > 0 for b in bars)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "status-page.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    finally:
        driver.quit()


def test_each_raised_files_maps_before_and_since_its_raise():
    """The demo's before/after for a live daemon, from the map records the recorded daemon
    kept: counted here again row by row from its parquet files."""
    status, journal = _recorded()
    (effect,) = raise_effects(STATE, journal)
    sent = {r["id"] for r in journal if r["op"] == "sent"}
    first = min(r["ts"] for r in journal if r["op"] == "intent" and r["id"] in sent
                and r["target"] > r["before"] and r["path"] == effect["file"])
    rows = [m for path in sorted((STATE / "maps").glob("*/*.parquet"))
            for m in pq.read_table(path).to_pylist() if m["file"] == effect["file"]]
    for side, picked in (("before", [m for m in rows if m["launch_ms"] < int(first * 1000)]),
                         ("after", [m for m in rows if m["launch_ms"] >= int(first * 1000)])):
        assert effect[side]["maps"] == len(picked) > 0
        assert effect[side]["node_local"] == pytest.approx(
            sum(bool(m["replica_local"]) for m in picked) / len(picked))
        assert effect[side]["mean_wait_s"] == pytest.approx(
            sum(m["delay_wait_s"] for m in picked) / len(picked))
    assert (effect["before"]["maps"], effect["after"]["maps"]) == (48, 10)
    page = render(status, journal, effects=[effect], now_s=first + 60)
    assert ("<td>/td/in/hot-1</td>" in page and "<td>48 / 10</td>" in page
            and "<td>75% &rarr; 80%</td>" in page and "<td>9.17 s &rarr; 6 s</td>" in page), page
    assert page.count("<rect ") == 4 and "before the raise: node-local 75%" in page
    # no records kept: no map either side, drawn as dashes; nothing raised: the section says so
    (bare,) = raise_effects(STATE / "nowhere", journal)
    assert bare["before"] == bare["after"] == {"maps": 0, "node_local": None, "mean_wait_s": None}
    assert "<td>- &rarr; -</td>" in render(status, journal, effects=[bare])
    assert raise_effects(STATE, []) == []
    assert "No file raised yet" in render(status, [], effects=[])
