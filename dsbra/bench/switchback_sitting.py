"""A real switchback set beside the arms of its sitting (benchmarks/bench_switchback.py): the
daemon's own read-out (`dsbra impact` on its state dir), the same read-out from the replays'
measurements of each period, and the arms' paired response over the same jobs, each as a
geometric mean ratio with its 95% interval, and whether the switchback and the arms agree.

The switchback leaves each period's burn-in out; its replays start at their periods' starts,
so the jobs it counts are the schedule's jobs submitted ``burn_in_s`` or later into a replay.
The arms are compared over those jobs too (and over all of theirs, for the record), so the two
designs estimate one thing: the ratio of the mean response of those jobs with the policy on
to that with it off. They differ in what "on" means: an arm runs the schedule on a cluster the
daemon starts on from scratch at base replication; a switchback's on period starts where the
last on period's learning left the policy, after an off period that took the copies back.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from dsbra.experiment.assignment import recorded_switchbacks
from dsbra.experiment.switchback import (block_differences, estimate, period_means,
                                         read_queue_adjusted, read_tables)
from dsbra.stats import mean_difference_interval, mean_t_interval


def _mean_response(run: Path, from_s: float) -> float:
    jobs = pq.read_table(run / "jobs.parquet").to_pydict()
    r = [x for s, x in zip(jobs["submit_s"], jobs["response_s"]) if s >= from_s and x is not None]
    return float(np.mean(r)) if r else math.nan


def _node_locality(run: Path) -> float:
    loc = pq.read_table(run / "tasks.parquet", columns=["locality"]).column("locality").to_numpy()
    return float(np.mean(loc == 0)) if len(loc) else math.nan


def arms_read_out(out: Path, baseline: str, arm: str, from_s: float) -> dict:
    """The arms' repetitions paired by number: per pair log(arm / baseline) of the mean response
    over the jobs submitted ``from_s`` or later (and over all jobs), and the node locality
    difference; means with 95% t intervals, the ratios as geometric mean ratio minus one."""
    reps = sorted({p.name for p in (out / baseline).glob("rep*") if (p / "summary.json").exists()}
                  & {p.name for p in (out / arm).glob("rep*") if (p / "summary.json").exists()},
                  key=lambda r: int(r[3:]))
    pairs = [(out / baseline / r, out / arm / r) for r in reps]
    doc: dict = {"baseline": baseline, "arm": arm, "pairs": reps}
    for key, start in (("response_counted", from_s), ("response_all", 0.0)):
        logs = [math.log(_mean_response(x, start)) - math.log(_mean_response(b, start))
                for b, x in pairs]
        doc[key] = _ratio(logs)
    doc["node_locality"] = _diff([_node_locality(x) - _node_locality(b) for b, x in pairs])
    return doc


def replays_read_out(run_dir: Path) -> dict:
    """The switchback's estimate from its replays' own measurements (the collector's jobs and
    maps of each period, at their wall-clock times), by the daemon's rules: a cross-check of the
    daemon's records."""
    sb = recorded_switchbacks(run_dir / "daemon-state")[-1]
    submit, response, launch, local, wait, run_s = [], [], [], [], [], []
    for period in sorted(run_dir.glob("period*"), key=lambda p: int(p.name[6:])):
        t0 = json.loads((period / "summary.json").read_text())["t0_wall_ms"]
        jobs = pq.read_table(period / "jobs.parquet").to_pydict()
        tasks = pq.read_table(period / "tasks.parquet").to_pydict()
        submit += [t0 + round(1000 * s) for s in jobs["submit_s"]]
        response += jobs["response_s"]
        launch += [t0 + round(1000 * s) for s in tasks["launch_s"]]
        local += [float(x == 0) for x in tasks["locality"]]
        wait += tasks["delay_wait_s"]
        run_s += [f - s for s, f in zip(tasks["launch_s"], tasks["finish_s"])]
    table = period_means(sb, job_submit_ms=np.array(submit, np.int64), job_response_s=response,
                         map_launch_ms=np.array(launch, np.int64), map_node_local=local,
                         map_delay_wait_s=wait, map_s=run_s)
    return estimate(table)


def compare(out: Path, run_dir: Path, baseline: str, arm: str) -> dict:
    """The three read-outs and the switchback's agreement with the arms: the difference of the
    two log-ratio means with a 95% interval (the designs' pairs are independent)."""
    sitting = json.loads((run_dir / "sitting.json").read_text())
    daemon = json.loads((run_dir / "impact.json").read_text())
    replays = replays_read_out(run_dir)
    arms = arms_read_out(out, baseline, arm, sitting["burn_in_s"])
    sb_logs = _block_logs(run_dir)
    queued = read_queue_adjusted([run_dir / "daemon-state"])
    return {"sitting": sitting, "daemon_read_out": {m: daemon[m] for m in
                                                    ("response", "node_locality", "delay_wait_s", "map_s")}
            | {"verdict": daemon["verdict"], "periods": daemon["periods"], "jobs": daemon["jobs"]},
            "replays_read_out": {m: replays[m] for m in ("response", "node_locality")},
            "arms": arms, "agreement": _agreement(sb_logs, arms["response_counted"]["logs"]),
            "queue_adjusted": queued,
            "queue_agreement": _agreement(queued["logs"], arms["response_counted"]["logs"])}


def _block_logs(run_dir: Path) -> list[float]:
    """The daemon's per-block log(on / off) of the mean response, from its state dir."""
    return [float(v) for t in read_tables([run_dir / "daemon-state"])
            for v in block_differences(t, "response")[1]]


def _ratio(logs: list[float]) -> dict:
    ci = mean_t_interval(logs)
    return {"pairs": len(logs), "logs": [round(v, 5) for v in logs],
            "diff": round(math.expm1(float(np.mean(logs))), 4) if logs else None,
            "ci95": None if ci is None else [round(math.expm1(ci[1]), 4), round(math.expm1(ci[2]), 4)]}


def _diff(values: list[float]) -> dict:
    ci = mean_t_interval(values)
    return {"pairs": len(values), "diff": round(float(np.mean(values)), 4) if values else None,
            "ci95": None if ci is None else [round(ci[1], 4), round(ci[2], 4)]}


def _agreement(a: list[float], b: list[float]) -> dict:
    """The switchback's mean log-ratio minus the arms', as the ratio of the two geometric mean
    ratios minus one, with a 95% interval (`dsbra.stats.mean_difference_interval`): Welch's on
    the two means when both have two or more pairs; with one arms pair, the switchback's
    prediction interval for one more pair, taking an arms pair to vary as a block does (both
    are one replay of the schedule with the policy on against one with it off)."""
    ci = mean_difference_interval(a, b)
    if ci is None:
        return {"diff": None, "ci95": None, "agree": None}
    d, lo, hi, df, method = ci
    return {"diff": round(math.expm1(d), 4), "ci95": [round(math.expm1(lo), 4), round(math.expm1(hi), 4)],
            "df": round(df, 1), "method": method, "agree": bool(lo <= 0 <= hi)}


def _shown(x: dict, unit: str) -> str:
    """A read-out's difference and interval, in percent or points: ``+1.2% [-0.4, +2.8]``."""
    if x.get("diff") is None:
        return "n/a"
    ci = "no interval" if x.get("ci95") is None else \
        f"[{100 * x['ci95'][0]:+.1f}, {100 * x['ci95'][1]:+.1f}]"
    return f"{100 * x['diff']:+.1f}{unit} {ci}"


def table(doc: dict) -> str:
    """The comparison as markdown."""
    s = doc["sitting"]

    def pct(x: dict) -> str:
        return _shown(x, "%")

    def pts(x: dict) -> str:
        return _shown(x, "")

    d, r, arms, ag = doc["daemon_read_out"], doc["replays_read_out"], doc["arms"], doc["agreement"]
    lags = ", ".join(f"{p['lag_s']:+.0f}" for p in s["periods"])
    lines = ["# The switchback beside the arms of its sitting", "",
             f"Switchback: {s['blocks']} blocks of {s['period_s']:g} s periods, {s['burn_in_s']:g} s "
             f"burn-in, seed {s['seed']}; the schedule replayed at each period's start (lags "
             f"{lags} s); load {s['load_avg_start']} "
             f"before, {s['load_avg_end']} after; the daemon used {s['daemon_cpu_s']} CPU s.", "",
             f"Arms: {arms['arm']} against {arms['baseline']}, paired by repetition "
             f"({', '.join(arms['pairs'])}).", "",
             "| read-out | blocks or pairs | mean response, on against off | node locality, points |",
             "| --- | --- | --- | --- |",
             f"| switchback, the daemon's records (`dsbra impact`) | {d['response']['pairs']} | "
             f"{pct(d['response'])} | {pts(d['node_locality'])} |",
             f"| switchback, the replays' own measurements | {r['response']['pairs']} | "
             f"{pct(r['response'])} | {pts(r['node_locality'])} |",
             *([f"| switchback, queue-adjusted (`dsbra impact`; docs/daemon.md, \"The queue "
                f"adjustment\") | {doc['queue_adjusted']['pairs']} | {pct(doc['queue_adjusted'])} | |"]
               if "queue_adjusted" in doc else []),
             f"| arms, the jobs the switchback counts | {arms['response_counted']['pairs']} | "
             f"{pct(arms['response_counted'])} | {pts(arms['node_locality'])} (all maps) |",
             f"| arms, all jobs | {arms['response_all']['pairs']} | {pct(arms['response_all'])} | |",
             "", f"The daemon's verdict: {d['verdict']}.", ""]
    lines.append(_agreement_line("Switchback", ag))
    if "queue_agreement" in doc:
        lines += ["", _agreement_line("Queue-adjusted switchback", doc["queue_agreement"])]
    return "\n".join(lines) + "\n"


def _agreement_line(what: str, ag: dict) -> str:
    if ag["diff"] is None:
        return f"{what} against arms: too few blocks or pairs for an interval."
    how = (f"Welch 95% interval, {ag['df']} df" if ag["method"] == "welch" else
           f"one arms pair: the switchback's 95% prediction interval for one more pair, {ag['df']:g} df")
    return (f"{what} against arms (ratio of their geometric mean ratios, {how}): "
            f"{100 * ag['diff']:+.1f}% [{100 * ag['ci95'][0]:+.1f}, {100 * ag['ci95'][1]:+.1f}]: "
            + ("they agree (the interval holds 0)." if ag["agree"] else
               "they disagree (the interval excludes 0)."))
