"""The scaled schedules benchmarks/sim_yarn_binding.py runs (dsbra.bench.schedule), on 6.11's
committed schedule."""

from __future__ import annotations

from repo_scripts import ROOT

from dsbra.bench.schedule import hot_files, scaled_schedule
from dsbra.schedule_format import load_schedule

SCHEDULE = load_schedule(ROOT / "benchmarks" / "results" / "bench-hotspot-long-grants" / "schedule.json")


def test_a_scaled_schedule_is_copies_on_their_own_files_at_the_same_load_per_slot():
    scaled = scaled_schedule(SCHEDULE, 3)
    jobs, base = scaled["jobs"], SCHEDULE["jobs"]
    assert len(jobs) == 3 * len(base) and len({j["job_id"] for j in jobs}) == len(jobs)
    assert scaled["dataset"]["files"] == 48
    assert [j["submit_s"] for j in jobs] == sorted(j["submit_s"] for j in jobs)
    # three times the jobs over the same span: three times the arrivals, on three times the slots
    span = base[-1]["submit_s"] - base[0]["submit_s"]
    assert jobs[-1]["submit_s"] - jobs[0]["submit_s"] < span * 1.1
    copy2 = [j for j in jobs if j["job_id"].startswith("c2-")]
    assert [j["maps"] for j in copy2] == [j["maps"] for j in base]
    first = base[0]["inputs"][0]  # part-00003 of copy 0 is part-00035 of copy 2
    assert copy2[0]["inputs"][0] == first[:-5] + f"{int(first[-5:]) + 32:05d}"


def test_each_copy_has_its_own_hot_file():
    assert hot_files(SCHEDULE, 3) == {6, 22, 38}  # part-00006 in each copy's 16 files


def test_a_scale_studys_seeds_and_sizes_are_checked_in_one_line():
    from dsbra.bench.schedule import scale_study_error, scale_study_seeds

    assert [scale_study_seeds(w, 10, 3) for w in (4, 20, 100, 600)] == [10, 10, 10, 3]

    assert scale_study_error(10, 3, [4, 20, 100, 600], 4) is None
    assert "at least 2" in scale_study_error(1, 3, [20], 4)
    assert scale_study_error(10, 3, [20, 6], 4) == "--workers must be multiples of 4, got 6"
    assert scale_study_error(10, 3, [2], 4) == "--workers must be multiples of 4, got 2"


def test_a_scale_study_pairs_arms_by_seed_and_takes_the_captured_share_per_seed():
    from dsbra.bench.schedule import seed_captured, seed_paired

    rows = [{"arm": arm, "seed": seed, "nodes": 20, "mean_response_s": value}
            for arm, values in (("static", (10.0, 12.0, 9.0)), ("oracle", (6.0, 8.0, 9.0)),
                                ("dsbra", (8.0, 11.0, 8.0)))
            for seed, value in enumerate(values)]
    rows.append({"arm": "dsbra", "seed": 3, "nodes": 20, "mean_response_s": 1.0})  # no static twin
    diff = seed_paired(rows, "mean_response_s", {"arm": "static"}, {"arm": "dsbra"})
    assert diff["mean"] == -4 / 3 and diff["low"] < diff["mean"] < diff["high"]
    # seed 2: the oracle gains nothing there, so no share; seeds 0 and 1: 50% and 25%
    share = seed_captured(rows, "dsbra", nodes=20)
    assert share["mean"] == 37.5 and share["low"] < 37.5 < share["high"]
    assert seed_captured(rows, "dsbra", nodes=100) is None


def test_a_scale_studys_captured_share_can_be_the_ratio_of_the_mean_gains():
    from dsbra.bench.schedule import seed_captured_ratio

    rows = [{"arm": arm, "seed": seed, "mean_response_s": value}
            for arm, values in (("static", (10.0, 12.0, 9.0, 11.0)), ("oracle", (6.0, 8.0, 5.0, 7.0)),
                                ("dsbra", (8.0, 11.0, 8.0, 8.0)))
            for seed, value in enumerate(values)]
    share = seed_captured_ratio(rows, "dsbra")
    assert share["mean"] == 100 * 7 / 16 and share["low"] < share["mean"] < share["high"]
    assert seed_captured_ratio(rows[:1] + rows[4:5] + rows[8:9], "dsbra") is None  # one seed
