"""Does DSBRA take back copies it gave back? Churn, read two ways: from the daemon's log of a
real run (the ``decision`` lines ``dsbra.act.apply`` writes, against the jobs of the run's
schedule: benchmarks/replication_changes.py), and in the simulator fitted to the real cluster on
schedules whose hot file rotates (benchmarks/sim_churn.py)."""

from __future__ import annotations

import collections
import json
import re
import statistics
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq

from dsbra.bench.data import DatasetPlan
from dsbra.bench.schedule import fb2009_bins
from dsbra.policy.profiles import PRE_HOLD_PROFILE
from dsbra.sim.fitted import BLOCK, HOT_FRACTION, fitted_config
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.stats import t_interval

#: the simulated schedules: 6.7's shape (sim_churn.py)
JOBS, GAP_S, HOT_SHARE, SLOTS = 60, 6.0, 0.9, 20
REACTIVE_K = (8, 24)  # 24: the k that kept 6.7's reactive oracle within 10% extra storage
#: a replication change the daemon sent, as dsbra.act.apply logs it
DECISION = re.compile(r"^ts=(?P<ts>\S+ \S+) .*logger=dsbra\.act\.apply decision "
                      r"round=(?P<round>\d+) file=(?P<file>\S+) "
                      r"replication=(?P<old>\d+)->(?P<new>\d+) .*rule=(?P<rule>\S+) .*outcome=sent")


def sent_changes(log: Path) -> list[dict]:
    """The replication changes a run's daemon sent, in order."""
    out = []
    for line in log.read_text().splitlines():
        m = DECISION.search(line)
        if m:
            at = datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)
            out.append({"round": int(m["round"]), "file": m["file"], "old": int(m["old"]),
                        "new": int(m["new"]), "rule": m["rule"], "wall_s": at.timestamp()})
    return out


def readers(schedule: dict) -> dict[str, list[str]]:
    """The ids of the schedule's jobs that read each input file."""
    out = collections.defaultdict(list)
    for job in schedule["jobs"]:
        for path in set(job["inputs"]):
            out[path].append(job["job_id"])
    return out


def churn(changes: list[dict]) -> dict:
    """Per run: files raised; of those, lowered after a raise (with the rounds from the raise to
    the first lowering) and raised again after being lowered."""
    raised, lowered, lowered_at, reraised = set(), {}, {}, set()
    last_raise: dict[str, int] = {}
    for c in changes:
        f = c["file"]
        if c["new"] > c["old"]:
            if f in lowered:
                reraised.add(f)
            raised.add(f)
            last_raise[f] = c["round"]
        elif f in last_raise and f not in lowered:
            lowered[f] = c["round"] - last_raise[f]
            lowered_at[f] = c["wall_s"]
    return {"raised": sorted(raised), "lowered_after_rounds": lowered, "lowered_at": lowered_at,
            "raised_again": sorted(reraised)}


def churn_by_run(result_sets: list[Path]) -> list[dict]:
    """Per run of ``result_sets`` (run_bench_matrix.py's, with the daemon's log): its churn, how
    many of the schedule's jobs read each file raised, and how many jobs (reading it, and at
    all) were submitted after the daemon lowered it."""
    rows = []
    for rs in result_sets:
        schedule = json.loads((rs / "schedule.json").read_text())
        reads, jobs = readers(schedule), len(schedule["jobs"])
        for log in sorted(rs.glob("*/rep*/daemon.log")):
            run = log.parent
            t0_s = json.loads((run / "summary.json").read_text())["t0_wall_ms"] / 1000
            submitted = dict(zip(*pq.read_table(run / "jobs.parquet", columns=["job_id", "submit_s"])
                                 .to_pydict().values()))
            c = churn(sent_changes(log))
            lowered_at = {f: at - t0_s for f, at in c.pop("lowered_at").items()}
            after = {f: sum(submitted[j] > at for j in reads.get(f, [])) for f, at in lowered_at.items()}
            any_after = {f: sum(t > at for t in submitted.values()) for f, at in lowered_at.items()}
            rows.append({"result_set": rs.name, "arm": run.parent.name, "rep": run.name,
                         "jobs": jobs, "hottest_jobs": max(map(len, reads.values())), **c,
                         "jobs_reading": {f: len(reads.get(f, [])) for f in c["raised"]},
                         "jobs_reading_after_lowering": after, "jobs_after_lowering": any_after})
    return rows


def hot_spot_schedule(seed: int, hot_period_s: float) -> dict:
    """6.7's schedule shape (1 GiB of 16 one-block files, JOBS jobs GAP_S apart, HOT_SHARE of the
    maps on the hot file) with a fresh hot file every ``hot_period_s``."""
    plan = DatasetPlan(total_bytes=1 << 30, block_bytes=BLOCK, seed=0)
    return fb2009_bins(plan, slots=SLOTS, jobs=JOBS, inter_arrival_s=GAP_S,
                       hot_fraction=HOT_FRACTION, hot_share=HOT_SHARE,
                       hot_period_s=hot_period_s, seed=seed)


def lowered_with_later_readers(result) -> int:
    """Replicas removed from a block that a job submitted after the round reads (the run's own
    job and map tables: which job read which block, and when it was submitted)."""
    submitted = dict(zip(result.jobs["job_id"].tolist(), result.jobs["submit_s"].tolist()))
    submits: dict[int, list[float]] = collections.defaultdict(list)
    for job, blk in zip(result.tasks["job_id"].tolist(), result.tasks["block_id"].tolist()):
        submits[blk].append(submitted[job])
    return sum(any(t > r["time_s"] for t in submits[blk])
               for r in result.rounds for blk in r["lowered_blocks"])


def evaluate(fit: dict, hot_period_s: float, schedules: int, seeds: int, max_am_share,
             out: Path, reactive_k=REACTIVE_K) -> dict:
    """One hot period in the simulator fitted to the real cluster (``fit``): ``schedules``
    schedule seeds x ``seeds`` placements as static, oracle, each reactive oracle and dsbra;
    dsbra's copies and removals, its churn and the captured shares (``out`` holds each schedule
    while it runs)."""
    rows = {k: [] for k in ("captured", "added", "removed", "raised_after_lowering",
                            "lowered_with_later_readers", "extra_storage")}
    reactive = {k: {"captured": [], "extra_storage": []} for k in reactive_k}
    arms = {"static": ("static", None), "oracle": ("oracle", None),
            "dsbra": ("dsbra", {"profile": PRE_HOLD_PROFILE}),
            **{k: ("oracle-reactive", {"min_jobs": k}) for k in reactive_k}}
    for s in range(schedules):
        path = out / f"schedule-period{hot_period_s:g}-seed{s}.json"
        path.write_text(json.dumps(hot_spot_schedule(s, hot_period_s), indent=1) + "\n")
        for seed in range(seeds):
            run = {arm: simulate(fitted_config(fit, policy, seed, params, max_am_share),
                                 WorkloadSpec(source=f"schedule:{path}"))
                   for arm, (policy, params) in arms.items()}
            static = run["static"].summary["mean_response_s"]
            gain = static - run["oracle"].summary["mean_response_s"]
            ds = run["dsbra"].summary
            if gain > 0:
                rows["captured"].append((static - ds["mean_response_s"]) / gain)
            for k, row in reactive.items():
                if gain > 0:
                    row["captured"].append((static - run[k].summary["mean_response_s"]) / gain)
                row["extra_storage"].append(run[k].summary["extra_storage_mean"])
            rows["added"].append(ds["replicas_added"])
            rows["removed"].append(ds["replicas_removed"])
            rows["raised_after_lowering"].append(ds["raised_after_lowering"])
            rows["lowered_with_later_readers"].append(lowered_with_later_readers(run["dsbra"]))
            rows["extra_storage"].append(ds["extra_storage_mean"])
        path.unlink()  # deterministic from its seed: hot_spot_schedule() rebuilds it

    def interval(xs):
        return t_interval(xs) if len(xs) > 1 else None

    return {"runs": len(rows["added"]), "captured": interval(rows["captured"]),
            "reactive": {str(k): {"captured": interval(r["captured"]),
                                  "extra_storage_mean": statistics.fmean(r["extra_storage"])}
                         for k, r in reactive.items()},
            **{k: sum(rows[k]) for k in ("added", "removed", "raised_after_lowering",
                                          "lowered_with_later_readers")},
            "extra_storage_mean": statistics.fmean(rows["extra_storage"])}
