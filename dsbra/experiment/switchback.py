"""The switchback's read-out: the policy's total effect on the cluster, on periods against off.

A switchback (dsbra.experiment.design.Switchback) runs the whole cluster with the policy on
and off in turn, in blocks of two periods whose order is drawn per block. Each block is one
pair under the load of the same hour, so the estimate is the mean over blocks of (on minus
off), with a Student t interval over the blocks: the blocks, not the jobs or maps, are the
independent draws (a period's jobs share its load, its copies and its hot files). Jobs count
in the period they were submitted in, maps in the one they launched in, and neither when it
falls in its period's burn-in.

Mean job response is compared as a ratio per block (the mean of log(on / off) over blocks,
reported as the geometric mean ratio minus one), so an hour of heavy load weighs no more than
a light one; the map metrics as differences of means, and the map time as a ratio too (the
guard's second clause).
Below ``MIN_PAIRS`` complete blocks no interval is drawn: the t interval of two or three
pairs is as wide as the spread allows, but its coverage rests on the pairs' differences being
normal, which a handful cannot show.

Where the cluster queues, on and off periods share its backlog and the response difference
understates the total effect; :func:`queue_adjusted_blocks` takes that bias out with a replay of
the run's own jobs (dsbra.experiment.queue_replay).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dsbra.experiment.design import Switchback
from dsbra.experiment.queue_replay import (job_latency, peak_running, replayed_response,
                                           replayed_worlds, slot_overhead)
from dsbra.stats import mean_t_interval, pairs_needed

#: complete blocks (an on and an off period, each with jobs) below which no interval is drawn
MIN_PAIRS = 4
#: the step in the log map time ratio over which the queue adjustment measures how its replayed
#: term moves with the ratio (:func:`queue_adjusted`)
RATIO_STEP = 0.02
#: per period: mean job response, and the maps' node locality, delay wait and duration
METRICS = ("response", "node_locality", "delay_wait_s", "map_s")
#: the contrast (on periods' jobs' share of maps launched with the policy on, minus the off
#: periods' jobs') below which the read-out says its periods are short for its jobs. In the
#: simulator (2026-12-02, 50-200 seeds a setup) the response's estimate kept within a third
#: of the true effect where the mean contrast was 0.97 and missed 42-82% of it at 0.20-0.91;
#: a cut fitted on those six setups, necessary and not sufficient: where the cluster queues,
#: 0.94-0.97 went with misses of 44-72% (2026-12-03; docs/daemon.md, "The contrast")
MIN_CONTRAST = 0.95


def period_means(sb: Switchback, *, job_submit_ms, job_response_s, map_launch_ms=(),
                 map_node_local=(), map_delay_wait_s=(), map_s=(),
                 job_exposure=()) -> dict[str, np.ndarray]:
    """Per period that holds a job or a map outside its burn-in: the period, whether the
    policy was on, its jobs and maps, and the mean of each metric (NaN: none to average;
    ``map_s`` NaN for a map still running; a map metric not given: NaN), and its jobs' mean
    ``job_exposure`` (:func:`job_exposure`; not given: NaN). No maps: the jobs' periods alone."""
    job_p = _counted(sb, job_submit_ms)
    map_p = _counted(sb, map_launch_ms)
    periods = np.union1d(job_p[job_p >= 0], map_p[map_p >= 0]).astype(np.int64)
    out = {"period": periods, "on": sb.is_on(periods) if len(periods) else np.zeros(0, bool)}
    out["jobs"], out["response"] = _means(periods, job_p, job_response_s)
    _, out["exposure"] = _means(periods, job_p, job_exposure)
    out["maps"], out["node_locality"] = _means(periods, map_p, map_node_local)
    _, out["delay_wait_s"] = _means(periods, map_p, map_delay_wait_s)
    _, out["map_s"] = _means(periods, map_p, map_s)
    return out


def settled(table: dict[str, np.ndarray], sb: Switchback, now_ms: int) -> dict[str, np.ndarray]:
    """The periods of ``table`` whose block ended at least a period before ``now_ms``: the
    guard's view. Only finished jobs are recorded, so a block that just ended holds its short
    jobs and not yet its long ones; a period later most of those have finished too."""
    period_ms = int(round(sb.period_s * 1000))
    block_end = sb.start_ms + (table["period"] // 2 * 2 + 2) * period_ms
    keep = block_end <= now_ms - period_ms
    return {k: v[keep] for k, v in table.items()}


def job_exposure(sb: Switchback, job_ids, map_job_ids, map_launch_ms) -> np.ndarray:
    """Per job, the share of its maps that launched with the policy on (NaN: none of its maps
    known). A job counts in the period it was submitted in, but a job longer than a period, or
    one that waits behind an earlier period's backlog, runs maps in the next: its period's arm
    is not all the treatment it got, and the on-minus-off difference shrinks with it."""
    jobs = np.asarray(job_ids).astype(str)
    out = np.full(len(jobs), np.nan)
    launch = np.asarray(map_launch_ms, np.int64)
    if not len(launch) or not len(jobs):
        return out
    p = sb.period(launch)
    on = np.ones(len(launch), bool)  # before the start there is no experiment: the policy acts
    on[p >= 0] = sb.is_on(p[p >= 0])
    ids, index = np.unique(np.asarray(map_job_ids).astype(str), return_inverse=True)
    share = np.bincount(index, weights=on, minlength=len(ids)) / np.bincount(index, minlength=len(ids))
    at = np.minimum(np.searchsorted(ids, jobs), len(ids) - 1)
    found = ids[at] == jobs
    out[found] = share[at[found]]
    return out


def _counted(sb: Switchback, t_ms) -> np.ndarray:
    """Each time's period, -1 in a burn-in or before the start."""
    t = np.asarray(t_ms, np.int64)
    return np.where(sb.in_burn_in(t), -1, sb.period(t))


def _means(periods: np.ndarray, of: np.ndarray, values) -> tuple[np.ndarray, np.ndarray]:
    """Per period: how many entries fall in it, and the mean of their values (NaNs left out;
    no values at all: NaN for each entry)."""
    v = np.asarray(values, float)
    if not v.size:
        v = np.full(len(of), np.nan)
    counted = of >= 0
    keep = counted & ~np.isnan(v)
    rows = np.searchsorted(periods, of[keep])
    n = np.bincount(rows, minlength=len(periods))
    total = np.bincount(rows, weights=v[keep], minlength=len(periods))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
    return np.bincount(np.searchsorted(periods, of[counted]), minlength=len(periods)), mean


def block_differences(table: dict[str, np.ndarray], metric: str,
                      ratio: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(block, on minus off) of every block whose two periods both have ``metric``; with
    ``ratio`` (the default for the response), of the logarithms (a ratio: an hour of heavy
    load weighs no more than a light one, and a ratio of two noisy means is skewed where its
    logarithm is not)."""
    if ratio is None:
        ratio = metric == "response"
    period, on, value = table["period"], table["on"], table[metric]
    ok = ~np.isnan(value)
    on_val = {int(p) // 2: v for p, v, o, k in zip(period, value, on, ok) if o and k}
    off_val = {int(p) // 2: v for p, v, o, k in zip(period, value, on, ok) if not o and k}
    blocks = np.array(sorted(set(on_val) & set(off_val)), np.int64)
    a = np.array([on_val[b] for b in blocks.tolist()], float)
    b = np.array([off_val[b] for b in blocks.tolist()], float)
    if ratio:
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.log(a) - np.log(b)
        keep = np.isfinite(diff)
        return blocks[keep], diff[keep]
    return blocks, a - b


def estimate(tables: dict[str, np.ndarray] | list[dict[str, np.ndarray]],
             min_pairs: int = MIN_PAIRS) -> dict:
    """Per metric: the complete blocks, the mean on-minus-off difference, its 95% interval
    (None below ``min_pairs`` blocks) and how many more blocks the interval needs to exclude
    zero at the measured spread; for the response, relative (the geometric mean ratio minus
    one) and with a 99% interval too (the guard's); a verdict line on the response. Several
    tables (runs, or switchbacks one after another) pool their blocks."""
    tables = [tables] if isinstance(tables, dict) else tables

    def pooled(metric: str, ratio: bool | None = None) -> np.ndarray:
        return (np.concatenate([block_differences(t, metric, ratio)[1] for t in tables])
                if tables else np.zeros(0))

    out: dict = {"periods": {"on": sum(int(np.sum(t["on"])) for t in tables),
                             "off": sum(int(np.sum(~t["on"])) for t in tables)},
                 "min_pairs": min_pairs}
    for metric in METRICS:
        diff = pooled(metric)
        out[metric] = _summary(diff, min_pairs, relative=metric == "response")
        if metric == "response":
            ci99 = mean_t_interval(diff, 0.99)
            enough = ci99 is not None and len(diff) >= min_pairs
            out[metric]["ci99"] = [_r(np.expm1(ci99[1])), _r(np.expm1(ci99[2]))] if enough else None
    out["response"]["contrast"] = _contrast(tables)
    # the map time as a ratio as well, with the guard's 99% interval
    ratios = pooled("map_s", ratio=True)
    ci99 = mean_t_interval(ratios, 0.99)
    enough = ci99 is not None and len(ratios) >= min_pairs
    out["map_s"] |= {"relative": _r(np.expm1(float(ratios.mean()))) if len(ratios) else None,
                     "relative_ci99": [_r(np.expm1(ci99[1])), _r(np.expm1(ci99[2]))]
                     if enough else None}
    out["verdict"] = verdict(out["response"])
    return out


def queue_adjusted_blocks(sb: Switchback, *, job_ids, job_submit_ms, job_response_s, map_job_ids,
                          map_launch_ms, map_s, slots: int | None = None) -> tuple[np.ndarray, dict]:
    """Per block, the mean response's log ratio on against off with the shared queue's bias
    taken out (dsbra.experiment.queue_replay): the observed log ratio minus the replay's as run,
    plus the replay's always-on against never-on log ratio, plus that term's slope in the map
    time ratio times the block's own map time log ratio's deviation from their mean (so the
    ratio's uncertainty, which the blocks estimate, is in the blocks' spread: the delta
    method). ``map_job_ids``: each map's job (one not among ``job_ids``, as one still running,
    holds slots and is not averaged); ``map_s``: NaN for a map
    without a finish, left out; ``slots``: the cluster's map slots, by default the most maps
    the records show running at once. Returns the block values and what the replay used."""
    submit = np.asarray(job_submit_ms, np.int64)
    response = np.asarray(job_response_s, float)
    ran = ~np.isnan(np.asarray(map_s, float))
    launch = np.asarray(map_launch_ms, np.int64)[ran]
    dur = np.asarray(map_s, float)[ran]
    job = _job_index(job_ids, map_job_ids)[ran]
    if slots is None:
        slots = peak_running(launch, launch + np.round(dur * 1000).astype(np.int64))
    n = len(submit)
    unknown = job < 0
    job = np.where(unknown, n + np.cumsum(unknown) - 1, job)
    order = np.argsort(launch, kind="stable")
    replay_submit_s = np.concatenate([submit, launch[unknown]]) / 1000.0
    replay_job, replay_s = job[order], dur[order]
    replay_on = sb.is_on(sb.period(launch[order]))
    counted = np.flatnonzero(_counted(sb, submit) >= 0)
    info = {"slots": int(slots), "slot_overhead_s": None, "job_start_s": None,
            "job_end_s": None, "map_ratio": None,
            "replayed_full": None, "replayed_read_out": None}
    observed = period_means(sb, job_submit_ms=submit, job_response_s=response,
                            map_launch_ms=launch, map_s=dur)
    map_blocks, map_logs = block_differences(observed, "map_s", ratio=True)
    if not np.isin(counted, job[~unknown]).any():
        return np.zeros(0), info | {"skipped": "no recorded map of a job outside the burn-ins "
                                               "to replay"}
    if not len(map_logs):
        return np.zeros(0), info | {"skipped": "no block with map times in both its periods"}
    log_ratio = float(map_logs.mean())
    latency = job_latency(submit / 1000.0, response, job, launch / 1000.0,
                          launch / 1000.0 + dur)
    overhead = slot_overhead(replay_submit_s, replay_job, replay_s, slots,
                             float(response[counted].mean()), counted=counted, latency=latency)

    def worlds_at(log_r: float) -> dict[str, np.ndarray]:
        return replayed_worlds(replay_submit_s, replay_job, replay_s, replay_on,
                               float(np.exp(log_r)), slots, overhead, latency)

    def full_at(worlds: dict[str, np.ndarray]) -> float:
        return float(np.log(worlds["always_on"][counted].mean()
                            / worlds["never_on"][counted].mean()))

    full = full_at(worlds_at(log_ratio))
    slope = (full_at(worlds_at(log_ratio + RATIO_STEP))
             - full_at(worlds_at(log_ratio - RATIO_STEP))) / (2 * RATIO_STEP)
    as_run = replayed_response(replay_submit_s, replay_job, replay_s, slots, latency, overhead)
    replayed = period_means(sb, job_submit_ms=submit, job_response_s=as_run[:n])
    blocks_o, logs_o = block_differences(observed, "response")
    blocks_m, logs_m = block_differences(replayed, "response")
    common, io, im = np.intersect1d(blocks_o, blocks_m, return_indices=True)
    map_dev = dict(zip(map_blocks.tolist(), (map_logs - log_ratio).tolist()))
    values = (logs_o[io] - logs_m[im] + full
              + slope * np.array([map_dev.get(b, 0.0) for b in common.tolist()]))
    info |= {"slot_overhead_s": _r(overhead), "job_start_s": _r(latency[0]),
             "job_end_s": _r(latency[1]), "map_ratio": _r(np.exp(log_ratio)),
             "replayed_full": _r(np.expm1(full)),
             "replayed_read_out": _r(np.expm1(float(logs_m.mean()))) if len(logs_m) else None}
    return values, info


def _job_index(job_ids, map_job_ids) -> np.ndarray:
    """Each map's job as an index into ``job_ids``; -1 for a job not among them."""
    jobs = np.asarray(job_ids).astype(str)
    maps = np.asarray(map_job_ids).astype(str)
    if not len(jobs):
        return np.full(len(maps), -1, np.int64)
    order = np.argsort(jobs, kind="stable")
    at = np.minimum(np.searchsorted(jobs[order], maps), len(jobs) - 1)
    return np.where(jobs[order][at] == maps, order[at], -1).astype(np.int64)


def queue_adjusted(values: np.ndarray, min_pairs: int = MIN_PAIRS) -> dict:
    """The queue-adjusted response from blocks' values (:func:`queue_adjusted_blocks`, several
    switchbacks' pooled): the relative difference, its 95% interval over the blocks (None
    below ``min_pairs``) and how many more blocks it needs to exclude zero, as the read-out's."""
    return _summary(np.asarray(values, float), min_pairs, relative=True)


def _summary(diff: np.ndarray, min_pairs: int, relative: bool) -> dict:
    """The blocks' mean difference with its 95% t interval (None below ``min_pairs``) and how
    many more blocks the interval needs to exclude zero; ``relative``: of log ratios, given as
    ratios minus one."""
    scale = np.expm1 if relative else (lambda v: v)
    ci = mean_t_interval(diff)
    enough = ci is not None and len(diff) >= min_pairs
    more = None
    if len(diff) < min_pairs:
        more = min_pairs - len(diff)
    elif ci[1] <= 0 <= ci[2]:
        more = pairs_needed(len(diff), ci[0], ci[3])
    return {"pairs": int(len(diff)),
            "diff": _r(scale(float(diff.mean()))) if len(diff) else None,
            "ci95": [_r(scale(ci[1])), _r(scale(ci[2]))] if enough else None,
            "more_pairs_needed": more}


def _contrast(tables: list[dict[str, np.ndarray]]) -> float | None:
    """The mean over blocks of the on period's jobs' exposure minus the off period's
    (:func:`job_exposure`): 1 when every job ran all its maps in its own period's arm; None
    where the tables have no exposure."""
    c = np.concatenate([block_differences(t, "exposure", ratio=False)[1] for t in tables
                        if "exposure" in t] or [np.zeros(0)])
    c = c[~np.isnan(c)]
    return _r(float(c.mean())) if len(c) else None


def verdict(r: dict) -> str:
    """One line on the response: faster, slower, no difference shown, or too few blocks."""
    if r["ci95"] is None:
        return (f"too few blocks for an interval: {r['pairs']} of an on and an off period, "
                f"{r['more_pairs_needed']} more needed")
    lo, hi = r["ci95"]
    span = f"{100 * r['diff']:+.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}] over {r['pairs']} blocks"
    if hi < 0:
        return f"jobs faster with the policy on: mean response {span}"
    if lo > 0:
        return f"jobs slower with the policy on: mean response {span}"
    more = r["more_pairs_needed"]
    return (f"no difference shown: mean response {span}"
            + (f"; about {more} more blocks would separate it at this spread" if more else ""))


def queue_verdict(q: dict) -> str:
    """One line on the queue-adjusted response (:func:`queue_adjusted`): the total effect an
    always-on policy would have had, which the on-minus-off read-out understates where the
    cluster queues."""
    skipped = {i["skipped"] for i in q.get("replays", []) if i.get("skipped")}
    if not q["pairs"] and skipped:
        return f"queue-adjusted: none: {'; '.join(sorted(skipped))}"
    return f"queue-adjusted: {verdict(q)}"


def _r(v: float | None) -> float | None:
    return None if v is None else round(float(v), 4)


def _recorded_runs(states: list[Path]):
    """Each recorded switchback of daemon state dirs (a change of its settings starts another)
    with the columns of its own time's jobs and maps."""
    import pyarrow.compute as pc

    from dsbra.experiment.assignment import recorded_switchbacks
    from dsbra.experiment.records import JOBS_DIR, MAPS_DIR, read_job_records, read_map_records

    for state in states:
        jobs, maps = read_job_records(state / JOBS_DIR), read_map_records(state / MAPS_DIR)
        submit = jobs.column("submit_ms").to_numpy()
        response = (jobs.column("finish_ms").to_numpy() - submit) / 1000.0
        launch = maps.column("launch_ms").to_numpy()
        finish = np.asarray(maps.column("finish_ms").to_pylist(), float)  # None -> nan
        local = pc.fill_null(maps.column("replica_local"), False).to_numpy(zero_copy_only=False)
        wait = maps.column("delay_wait_s").to_numpy()
        job_ids = jobs.column("job_id").to_numpy().astype(str)
        map_job_ids = maps.column("job_id").to_numpy().astype(str)
        runs = recorded_switchbacks(state)
        for k, sb in enumerate(runs):
            end = runs[k + 1].start_ms if k + 1 < len(runs) else np.iinfo(np.int64).max
            j = (submit >= sb.start_ms) & (submit < end)
            m = (launch >= sb.start_ms) & (launch < end)
            yield sb, {"job_id": job_ids[j], "submit_ms": submit[j], "response_s": response[j],
                       "map_job_id": map_job_ids[m], "launch_ms": launch[m],
                       "node_local": local[m].astype(float), "delay_wait_s": wait[m],
                       "map_s": (finish[m] - launch[m]) / 1000.0,
                       "exposure": job_exposure(sb, job_ids[j], map_job_ids, launch)}


def _table(sb: Switchback, c: dict[str, np.ndarray], settled_at_ms: int | None) -> dict[str, np.ndarray]:
    """One recorded switchback's per-period table (:func:`period_means`); ``settled_at_ms``:
    only the blocks :func:`settled` by then (the guard's)."""
    table = period_means(
        sb, job_submit_ms=c["submit_ms"], job_response_s=c["response_s"],
        map_launch_ms=c["launch_ms"], map_node_local=c["node_local"],
        map_delay_wait_s=c["delay_wait_s"], map_s=c["map_s"], job_exposure=c["exposure"])
    return table if settled_at_ms is None else settled(table, sb, settled_at_ms)


def _pooled_queue_adjusted(runs, slots: int | None) -> dict:
    """The queue-adjusted response (:func:`queue_adjusted_blocks`) of recorded switchbacks, their
    blocks pooled (``logs``: each block's value), with what each switchback's replay used."""
    values, replays = [], []
    for sb, c in runs:
        v, info = queue_adjusted_blocks(
            sb, job_ids=c["job_id"], job_submit_ms=c["submit_ms"], job_response_s=c["response_s"],
            map_job_ids=c["map_job_id"], map_launch_ms=c["launch_ms"], map_s=c["map_s"],
            slots=slots)
        values.append(v)
        replays.append(info)
    pooled = np.concatenate(values) if values else np.zeros(0)
    return queue_adjusted(pooled) | {"logs": [round(float(v), 5) for v in pooled],
                                     "replays": replays}


def read_tables(states: list[Path], settled_at_ms: int | None = None) -> list[dict[str, np.ndarray]]:
    """The per-period tables of daemon state dirs: one for each recorded switchback, over the
    jobs and maps of its own time (:func:`_table`)."""
    return [_table(sb, c, settled_at_ms) for sb, c in _recorded_runs(states)]


def read_queue_adjusted(states: list[Path], slots: int | None = None) -> dict:
    """The queue-adjusted response of daemon state dirs (:func:`_pooled_queue_adjusted`)."""
    return _pooled_queue_adjusted(_recorded_runs(states), slots)


def read_out(states: list[Path], settled_at_ms: int | None = None, *, adjust_queue: bool = False,
             slots: int | None = None) -> dict:
    """The switchback read-out of daemon state dirs: their recorded switchbacks' blocks pooled;
    with ``adjust_queue`` (`dsbra impact`; too heavy for the status page and the guard's every
    round), also ``response_queue_adjusted`` from the same records (:func:`read_queue_adjusted`,
    ``slots`` as there)."""
    runs = list(_recorded_runs(states))
    tables = [_table(sb, c, settled_at_ms) for sb, c in runs]
    out = estimate(tables)
    out["design"] = "switchback"
    out["dirs"] = [str(s) for s in states]
    out["switchbacks"] = len(tables)
    out["jobs"] = sum(int(t["jobs"].sum()) for t in tables)
    out["maps"] = sum(int(t["maps"].sum()) for t in tables)
    if adjust_queue:
        out["response_queue_adjusted"] = _pooled_queue_adjusted(runs, slots)
    return out


def text(r: dict) -> str:
    """The read-out as `dsbra impact` prints it."""
    lines = [f"{', '.join(r['dirs'])}: switchback, periods on {r['periods']['on']}, off "
             f"{r['periods']['off']}; jobs {r['jobs']}, maps {r['maps']} outside the burn-ins"]
    for m in METRICS:
        x = r[m]
        ci = "n/a" if x["ci95"] is None else f"[{x['ci95'][0]}, {x['ci95'][1]}]"
        what = "relative" if m == "response" else "on - off"
        lines.append(f"  {m:14} blocks {x['pairs']}  {what} {x['diff']}  95% CI {ci}")
    x = r["response"]
    if x.get("contrast") is not None:
        lines.append(f"  contrast       {x['contrast']} (the on periods' jobs' share of maps launched "
                     f"with the policy on, minus the off periods' jobs')")
    q = r.get("response_queue_adjusted")
    if q is not None and q["pairs"]:
        ci = "n/a" if q["ci95"] is None else f"[{q['ci95'][0]}, {q['ci95'][1]}]"
        used = "; ".join(f"{i['slots']} slots, maps holding them {i['slot_overhead_s']} s longer, "
                         f"map time ratio {i['map_ratio']}" for i in q["replays"])
        lines.append(f"  {'queue-adjusted':14} blocks {q['pairs']}  relative {q['diff']}  95% CI {ci}"
                     f"  (the response with the shared queue's bias taken out: {used})")
    lines.append(r["verdict"])
    if q is not None:
        lines.append(queue_verdict(q))
    if x.get("contrast") is not None and x["contrast"] < MIN_CONTRAST:
        lines.append(f"periods short for these jobs: a contrast of {x['contrast']} (below "
                     f"{MIN_CONTRAST}) means many jobs ran maps in the other arm's periods, and the "
                     "response difference understates the total effect; lengthen "
                     "experiment.period_s"
                     + ("" if q is None or not q["pairs"] else
                        ", and read the queue-adjusted response meanwhile"))
    return "\n".join(lines)


def judge_finished_jobs(sb: Switchback, submit_s, finish_s, now_s: float, margin: float,
                        map_launch_s=(), map_finish_s=()) -> str | None:
    """The guard's verdict at ``now_s`` on jobs known by their submit and finish times (s;
    a finish < 0 or after ``now_s``: not finished yet) and on maps by their launch and finish
    times (a launch < 0 or after ``now_s``: not launched; a finish < 0 or after it: running),
    as the daemon judges its records: the jobs finished by then and the maps launched by then
    (running ones without a map time), in the blocks :func:`settled` by then."""
    submit, finish = np.asarray(submit_s, float), np.asarray(finish_s, float)
    done = (finish >= 0) & (finish <= now_s)
    launch, ended = np.asarray(map_launch_s, float), np.asarray(map_finish_s, float)
    launched = (launch >= 0) & (launch <= now_s)
    run_s = np.where((ended[launched] >= 0) & (ended[launched] <= now_s),
                     ended[launched] - launch[launched], np.nan)
    table = period_means(sb, job_submit_ms=np.round(submit[done] * 1000).astype(np.int64),
                         job_response_s=finish[done] - submit[done],
                         map_launch_ms=np.round(launch[launched] * 1000).astype(np.int64),
                         map_s=run_s)
    return guard_reason(estimate(settled(table, sb, int(round(now_s * 1000)))), margin)


def guard_reason(r: dict, margin: float) -> str | None:
    """The do-no-harm guard's verdict on a switchback read-out: why to stop, else None.

    It stops when, with the policy on, the mean job response or the mean map time is worse
    by more than ``margin`` (relative), the whole 99% interval beyond it: the guard looks again
    at every block, and a 95% interval, or a mean past the margin, looked at that often would
    stop a harmless policy by chance. The map time is there because the response cannot show
    harm quickly: on and off periods share one queue, so an on period's slow maps delay the
    jobs of the off period after it too, and the blocks' response differences shrink and
    scatter (a policy made to churn, 3-6 times slower than static, was stopped in 1 of 10
    seeds over 40 minutes by the response alone), while a map's own time is its period's:
    the copies' load on the DataNodes shows in it at once. No interval (too few blocks) never
    stops it."""
    x = r["response"]
    if x.get("ci99") is not None and x["ci99"][0] > margin:
        return (f"jobs slower with the policy on: mean response {100 * x['diff']:+.1f}% (99% "
                f"interval [{100 * x['ci99'][0]:+.1f}, {100 * x['ci99'][1]:+.1f}]) over "
                f"{x['pairs']} blocks, beyond the guard's margin of {100 * margin:.0f}%")
    m = r.get("map_s", {})
    if m.get("relative_ci99") is not None and m["relative_ci99"][0] > margin:
        lo, hi = m["relative_ci99"]
        return (f"maps slower with the policy on: mean map time {100 * m['relative']:+.1f}% (99% "
                f"interval [{100 * lo:+.1f}, {100 * hi:+.1f}]) over {m['pairs']} blocks, beyond "
                f"the guard's margin of {100 * margin:.0f}%")
    return None
