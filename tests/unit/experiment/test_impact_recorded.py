"""`dsbra impact` on a state dir recorded from the real cluster: the daemon with
experiment.holdout 0.5 over the integration test's grep workload
(tests/integration/test_daemon.py::test_holdout_keeps_control_files_unchanged_and_impact_reads_the_state,
its state dir's experiment.jsonl, journal.jsonl, maps/ and status.json, committed as they were)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from dsbra.cli import cli
from dsbra.experiment.records import read_map_records
from dsbra.experiment.impact import MIN_FILES, impact

STATE = Path(__file__).parents[2] / "fixtures" / "impact" / "daemon-holdout"
CONTROL, TREATED = "/td/in/hot-0", "/td/in/hot-1"


def _first_decisions() -> dict[str, int]:
    return {r["file"]: r["first_decision_ms"] for r in
            map(json.loads, (STATE / "experiment.jsonl").read_text().splitlines())}


def _maps_after(path: str):
    t = read_map_records(STATE / "maps")
    mask = pc.and_(pc.equal(t.column("file"), path),
                   pc.greater_equal(t.column("launch_ms"), _first_decisions()[path]))
    return t.filter(mask)


def test_the_recorded_run_holds_one_file_in_each_group_and_never_raised_the_control_one():
    journal = [json.loads(line) for line in (STATE / "journal.jsonl").read_text().splitlines()]
    assert {r["path"] for r in journal if r["op"] == "held-out"} == {CONTROL}
    assert {r["path"] for r in journal if r["op"] == "intent"} == {TREATED}
    status = json.loads((STATE / "status.json").read_text())
    assert status["experiment"]["files"] == {"treatment": 1, "control": 1}


def test_impact_counts_each_groups_maps_after_its_first_decision():
    r = impact(STATE)
    assert r["files"] == {"treated": 1, "control": 1}
    treated, control = _maps_after(TREATED), _maps_after(CONTROL)
    assert r["maps"] == {"treated": treated.num_rows, "control": control.num_rows}
    assert treated.num_rows > 0 and control.num_rows > 0
    local = pc.sum(pc.cast(treated.column("replica_local"), "int64")).as_py()
    assert r["node_locality"]["treated"] == pytest.approx(local / treated.num_rows, abs=1e-4)
    wait = pc.mean(control.column("delay_wait_s")).as_py()
    assert r["delay_wait_s"]["control"] == pytest.approx(wait, abs=1e-4)
    # one file a group: a difference, but no interval, and the verdict says why
    assert r["node_locality"]["diff"] is not None and r["node_locality"]["ci95"] is None
    assert r["verdict"].startswith("too few files to tell")
    views = {p["file"]: p for p in r["per_file"]}
    assert set(views) == {TREATED, CONTROL} and views[TREATED]["after"]["maps"] == treated.num_rows


def test_the_cli_prints_the_documented_json_and_draws_the_plot(tmp_path):
    png = tmp_path / "impact.png"
    result = CliRunner().invoke(cli, ["impact", str(STATE), "--json", "--plot", str(png)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc["files"]) == set(doc["maps"]) == {"treated", "control"}
    for metric in ("node_locality", "delay_wait_s", "map_s"):
        assert {"treated", "control", "diff", "ci95"} <= set(doc[metric])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = CliRunner().invoke(cli, ["impact", str(STATE)])
    assert text.exit_code == 0 and "too few files to tell" in text.output


def test_a_dir_without_an_experiment_is_a_one_line_refusal(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dsbra", "impact", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "no experiment in" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_runs_under_one_seed_pool_by_file_each_counted_from_its_own_first_decision():
    one, twice = impact(STATE), impact([STATE, STATE])
    assert twice["files"] == one["files"] and twice["files_with_maps"] == one["files_with_maps"]
    assert twice["maps"] == {g: 2 * n for g, n in one["maps"].items()}
    for metric in ("node_locality", "delay_wait_s", "map_s"):
        assert twice[metric]["treated"] == one[metric]["treated"]
        assert twice[metric]["control"] == one[metric]["control"]
    views = {p["file"]: p for p in twice["per_file"]}
    assert views[TREATED]["after"]["maps"] == 2 * _maps_after(TREATED).num_rows


def _with_seed(tmp_path, seed: int, swap: bool = False) -> Path:
    """The recorded run as if its experiment had drawn under ``seed`` (and put each file in the
    other group: ``swap``)."""
    other = tmp_path / f"seed{seed}-{swap}"
    shutil.copytree(STATE, other)
    flip = {"control": "treatment", "treatment": "control"}
    records = [json.loads(line) for line in (other / "experiment.jsonl").read_text().splitlines()]
    (other / "experiment.jsonl").write_text("".join(
        json.dumps(r | {"seed": seed, "group": flip[r["group"]] if swap else r["group"]}) + "\n"
        for r in records))
    return other


def test_runs_with_a_seed_each_are_draws_of_their_own(tmp_path):
    r = impact([STATE, _with_seed(tmp_path, 5, swap=True)])
    # each file once in each group: two draws a group, each its own unit
    assert r["files"] == {"treated": 2, "control": 2}
    assert r["files_with_maps"] == {"treated": 2, "control": 2}
    assert {(p["file"], p["seed"], p["group"]) for p in r["per_file"]} == {
        (TREATED, 4, "treated"), (CONTROL, 4, "control"),
        (TREATED, 5, "control"), (CONTROL, 5, "treated")}
    assert r["node_locality"]["ci95"] is None  # below MIN_FILES draws a group
    five = impact([STATE] + [_with_seed(tmp_path, s, swap=s % 2 == 1) for s in range(6, 10)])
    assert five["files_with_maps"] == {"treated": MIN_FILES, "control": MIN_FILES}
    assert five["node_locality"]["ci95"] is not None


def test_runs_that_group_a_file_differently_under_one_seed_are_a_one_line_refusal(tmp_path):
    other = _with_seed(tmp_path, 4, swap=True)
    proc = subprocess.run([sys.executable, "-m", "dsbra", "impact", str(STATE), str(other)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "cannot be pooled" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


#: a run of the hot-spot holdout sitting (docs/benchmark.md 6.5, rep4) whose daemon, holding out
#: half, decided no file: its status.json and maps/, committed as they were
UNDECIDED = STATE.parent / "daemon-holdout-undecided"


def test_a_run_that_decided_no_file_pools_as_no_draws_and_is_named():
    alone, pooled = impact(STATE), impact([STATE, UNDECIDED])
    assert pooled["dirs_without_decisions"] == [str(UNDECIDED)]
    for key in ("files", "files_with_maps", "maps", "node_locality", "delay_wait_s", "map_s"):
        assert pooled[key] == alone[key], key


def test_runs_that_all_decided_no_file_are_a_one_line_refusal():
    proc = subprocess.run([sys.executable, "-m", "dsbra", "impact", str(UNDECIDED)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "decided no file in" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
