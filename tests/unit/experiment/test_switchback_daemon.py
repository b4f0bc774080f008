"""The daemon's switchback (issue 45): its record in the state dir, kept across restarts and
started anew when its settings change; the settings checked; jobs and maps recorded with their
period; `dsbra impact` reading a switchback state dir."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dsbra.cli import cli
from dsbra.daemon.config import load_config
from dsbra.errors import ConfigError
from dsbra.experiment.assignment import SWITCHBACK_FILE, recorded_switchbacks, switchback_of
from dsbra.experiment.design import Switchback
from dsbra.experiment.records import (JOB_RECORD_SCHEMA, JOBS_DIR, MAPS_DIR, RecordStore,
                                      job_records, map_records, read_job_records, read_map_records)
from dsbra.experiment.switchback import MIN_PAIRS
from dsbra.observe.collector import MapObservation

T0 = 1_700_000_000_000


def test_a_restart_continues_the_recorded_periods_and_new_settings_start_anew(tmp_path):
    sb, new = switchback_of(tmp_path, 600, 60, 3, T0)
    assert new and sb == Switchback(600, 3, T0, 60)
    again, new = switchback_of(tmp_path, 600, 60, 3, T0 + 5_000_000)
    assert not new and again == sb  # the periods go on from the recorded start
    other, new = switchback_of(tmp_path, 900, 60, 3, T0 + 6_000_000)
    assert new and other.start_ms == T0 + 6_000_000
    assert recorded_switchbacks(tmp_path) == [sb, other]
    lines = (tmp_path / SWITCHBACK_FILE).read_text().splitlines()
    assert [json.loads(line)["period_s"] for line in lines] == [600, 900]


def test_switchback_settings_are_validated():
    cfg = load_config(None, env={"DSBRA_EXPERIMENT__DESIGN": "switchback",
                                 "DSBRA_EXPERIMENT__PERIOD_S": "1800"})
    assert cfg.experiment.switchback and cfg.experiment.period_s == 1800
    assert cfg.experiment.burn_in_s == 600 and not load_config(None).experiment.switchback
    for env, word in (({"DSBRA_EXPERIMENT__DESIGN": "abtest"}, "one of holdout, switchback"),
                      ({"DSBRA_EXPERIMENT__DESIGN": "switchback",
                        "DSBRA_EXPERIMENT__HOLDOUT": "0.5"}, "holdout to 0"),
                      ({"DSBRA_EXPERIMENT__BURN_IN_S": "3600"}, "burn_in_s"),
                      ({"DSBRA_EXPERIMENT__PERIOD_S": "0"}, "period_s")):
        with pytest.raises(ConfigError, match=word):
            load_config(None, env=env)


def _obs(i: int, launch_ms: int, finish_ms: int | None) -> MapObservation:
    return MapObservation(f"job_{i}", f"task_{i}", f"attempt_{i}", launch_ms - 500, launch_ms,
                          finish_ms, "10.0.0.1", "NODE_LOCAL", ["10.0.0.1"], 512,
                          path="/f", start=0, length=10)


def _row(local: bool, wait: float) -> dict:
    return {"block_id": "blk_1", "local": local, "delayed": wait > 0, "delay_s": wait,
            "replica_local": local}


def test_jobs_and_maps_carry_their_period_and_older_records_read_as_none(tmp_path):
    sb = Switchback(600, 3, T0, 60)
    jobs = job_records([{"job_id": "job_1", "submit_ms": T0 + 700_000, "finish_ms": T0 + 760_000,
                         "maps": 4}], T0 + 800_000, sb)
    assert jobs.schema.equals(JOB_RECORD_SCHEMA)
    assert jobs.to_pylist()[0]["period"] == 1
    maps = map_records([_obs(1, T0 + 30_000, None)], [_row(True, 0.0)], T0 + 60_000, sb)
    assert maps.column("period").to_pylist() == [0]
    plain = map_records([_obs(1, T0, None)], [_row(True, 0.0)], T0 + 60_000)
    assert plain.column("period").to_pylist() == [None]
    # a map record file from before the period column: read with it as null
    (tmp_path / "2023-11-14").mkdir()
    pq.write_table(plain.drop(["period"]), tmp_path / "2023-11-14" / f"{T0}.parquet")
    assert read_map_records(tmp_path).column("period").to_pylist() == [None]


def _state_dir(tmp_path, blocks: int, on_response_s: float, off_response_s: float):
    """A state dir as the daemon leaves it: the switchback's record, and per period jobs and
    maps whose response and locality depend on the arm (drawn around each arm's level)."""
    sb, _ = switchback_of(tmp_path, 600, 60, 5, T0)
    rng = np.random.default_rng(1)
    stores = {k: RecordStore(tmp_path / k, 1e12, 1 << 40) for k in (MAPS_DIR, JOBS_DIR)}
    for period in range(2 * blocks):
        on = bool(sb.is_on(period))
        start = T0 + period * 600_000
        end = start + 600_000
        submits = list(range(start + 5_000, end, 20_000))  # some in the burn-in
        level = on_response_s if on else off_response_s
        jobs = [{"job_id": f"job_{s}", "submit_ms": s,
                 "finish_ms": s + int(1000 * level * rng.uniform(0.9, 1.1)), "maps": 1}
                for s in submits]
        obs = [_obs(k, s + 2_000, s + 12_000) for k, s in enumerate(submits)]
        rows = [_row(on or k % 2 == 0, 0.0 if on else 2.0) for k in range(len(submits))]
        stores[JOBS_DIR].write(job_records(jobs, end, sb), end)
        stores[MAPS_DIR].write(map_records(obs, rows, end, sb), end)
    return sb


def test_impact_reads_a_switchback_state_dir(tmp_path):
    _state_dir(tmp_path, MIN_PAIRS + 1, on_response_s=45.0, off_response_s=50.0)
    assert read_job_records(tmp_path / JOBS_DIR).num_rows == 2 * (MIN_PAIRS + 1) * 30
    result = CliRunner().invoke(cli, ["impact", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["design"] == "switchback" and doc["response"]["pairs"] == MIN_PAIRS + 1
    assert doc["jobs"] == 2 * (MIN_PAIRS + 1) * 27  # 3 of each period's 30 in its burn-in
    assert doc["response"]["diff"] == pytest.approx(-0.1, abs=0.02)
    assert doc["response"]["ci95"][1] < 0 and "faster with the policy on" in doc["verdict"]
    assert doc["node_locality"]["diff"] == pytest.approx(0.5, abs=0.05)
    assert doc["delay_wait_s"]["diff"] == pytest.approx(-2.0)
    text = CliRunner().invoke(cli, ["impact", str(tmp_path)])
    assert text.exit_code == 0 and "switchback, periods on" in text.output


def test_impact_of_too_few_blocks_says_how_many_more(tmp_path):
    _state_dir(tmp_path, MIN_PAIRS - 2, on_response_s=45.0, off_response_s=50.0)
    doc = json.loads(CliRunner().invoke(cli, ["impact", str(tmp_path), "--json"]).output)
    assert doc["response"]["ci95"] is None and doc["response"]["more_pairs_needed"] == 2
    assert doc["verdict"].startswith("too few blocks")


def test_the_status_page_shows_the_arm_and_the_estimate(tmp_path):
    from dsbra.daemon.page import experiment_estimate, render

    sb = _state_dir(tmp_path, MIN_PAIRS, on_response_s=45.0, off_response_s=50.0)
    now = T0 + 2 * MIN_PAIRS * 600_000 + 30_000
    status = {"state": "running", "mode": "apply", "experiment": {
        "design": "switchback", "holdout": 0.0, "seed": 5, "files": {},
        "switchback": {"start_ms": T0, "period_s": 600, "burn_in_s": 60,
                       "period": int(sb.period(now)), "arm": sb.arm_at(now),
                       "in_burn_in": bool(sb.in_burn_in(now))}}}
    page = render(status, [], estimate=experiment_estimate(tmp_path), now_s=now / 1000)
    assert "Switchback (seed 5): periods of 10 min" in page
    assert f"now period {2 * MIN_PAIRS}, the policy <b>{sb.arm_at(now)}</b> (burn-in)" in page
    assert "jobs faster with the policy on" in page and "<td>response</td>" in page


def _daemon(tmp_path, guard: bool = True):
    from dsbra.daemon.service import Daemon

    cfg = tmp_path / "dsbra.yaml"
    cfg.write_text(f"state_dir: {tmp_path / 'state'}\n"
                   "cluster: {rm: http://rm:8088, webhdfs: http://nn:9870}\n"
                   f"experiment: {{design: switchback, period_s: 600, burn_in_s: 60, seed: 5, "
                   f"guard: {str(guard).lower()}, guard_margin: 0.05}}\n")
    return Daemon(load_config(str(cfg))), cfg


def test_the_guard_pauses_a_daemon_whose_switchback_shows_harm(tmp_path):
    from dsbra.daemon.service import GUARD_PAUSE

    daemon, cfg = _daemon(tmp_path)
    _state_dir(daemon.dir, MIN_PAIRS + 1, on_response_s=60.0, off_response_s=50.0)
    daemon._check_guard(T0 + 20 * 600_000)
    assert daemon.paused and daemon.pause_reason().startswith(GUARD_PAUSE)
    assert "jobs slower with the policy on: mean response +19.4%" in daemon.pause_reason()
    assert daemon.status["guard"]["fired"] and daemon.status["guard"]["margin"] == 0.05
    daemon._write_status()
    out = CliRunner().invoke(cli, ["status", "--config", str(cfg)])
    assert out.exit_code == 0 and "(paused)" in out.output
    assert "guard: jobs slower with the policy on" in out.output
    # `dsbra resume` releases it like any pause
    assert CliRunner().invoke(cli, ["resume", "--config", str(cfg)]).exit_code == 0
    assert not daemon.paused


@pytest.mark.parametrize("on_s, blocks", [(52.0, MIN_PAIRS + 1),  # within the margin
                                          (45.0, MIN_PAIRS + 1),  # faster
                                          (60.0, MIN_PAIRS - 1)])  # too few blocks to tell
def test_the_guard_leaves_a_daemon_alone_without_shown_harm(tmp_path, on_s, blocks):
    daemon, _ = _daemon(tmp_path)
    _state_dir(daemon.dir, blocks, on_response_s=on_s, off_response_s=50.0)
    daemon._check_guard(T0 + 20 * 600_000)
    assert not daemon.paused and daemon.status["guard"]["fired"] is False


def test_the_guard_needs_a_switchback():
    with pytest.raises(ConfigError, match="experiment.guard"):
        load_config(None, env={"DSBRA_EXPERIMENT__GUARD": "true"})
