"""The switchback's queue adjustment: what the shared queue hides from its read-out.

On and off periods share one queue. Where the cluster queues, the policy's shorter maps drain
a backlog that the next period inherits, so the off periods gain from the on ones and the
on-minus-off read-out misses the part of the effect that comes through the queue (in the
simulator, 11-94% of the response gain on hot-spot loads; docs/daemon.md, "The queue
adjustment"). The adjustment replays the run's own jobs through a model of the queue three
times, with map slots handed out in fair shares to whichever job runs fewest: with the maps
as they ran, with every map as the on periods' map times would have it (policy always on), and
with every map as the off periods' would (never on). The replay's own switchback read-out,
against its always-on and never-on runs, gives the bias the shared queue puts in a read-out;
the adjusted estimate is the observed read-out with that bias taken out, per block:

    log(on / off) observed - log(on / off) replayed as run + log(always on / never on) replayed

The replay knows only map times, slots and each job's time outside them (no locality wait, no
AM container), which is why it corrects the read-out rather than replacing it: what the policy
does besides shortening maps stays in the observed part, and the replay's own noise (the same
jobs, the same periods) cancels there.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

#: halvings of the search for the slot overhead (:func:`slot_overhead`): 2^-12 of its bracket
OVERHEAD_STEPS = 12
#: the percentile of submission to first map launch over the jobs taken for the AM's start
#: (:func:`job_latency`): low, as the jobs that found a map slot at once show it
START_PERCENTILE = 5.0


def fair_share_replay(submit_s, map_job, map_s, slots: int) -> np.ndarray:
    """Each job's response when its maps (``map_job``: the job's index, in launch order;
    ``map_s``: how long each holds a slot) run on ``slots`` slots, a free slot going to the
    job with fewest maps running (then the earliest submitted): the Fair Scheduler's share
    between jobs of one queue, without its locality wait. A job without maps: 0."""
    submit = np.asarray(submit_s, float)
    n = len(submit)
    maps: list[list[float]] = [[] for _ in range(n)]
    for j, d in zip(np.asarray(map_job, np.int64).tolist(), np.asarray(map_s, float).tolist()):
        maps[j].append(d)
    running, started = [0] * n, [0] * n
    finish = submit.copy()
    done: list[tuple[float, int]] = []  # (time a map ends, its job)
    ready: list[tuple[int, float, int]] = []  # (maps running, submit, job); stale ones skipped
    arrivals = np.argsort(submit, kind="stable").tolist()
    free, a = int(slots), 0
    while a < n or done:
        if a < n and (not done or submit[arrivals[a]] <= done[0][0]):
            j = arrivals[a]
            a += 1
            now = float(submit[j])
        else:
            now, j = heapq.heappop(done)
            free += 1
            running[j] -= 1
            finish[j] = max(finish[j], now)
        if started[j] < len(maps[j]):
            heapq.heappush(ready, (running[j], float(submit[j]), j))
        while free and ready:
            r, _, k = heapq.heappop(ready)
            if r != running[k] or started[k] >= len(maps[k]):
                continue  # stale: the job's share changed since it was queued
            heapq.heappush(done, (now + maps[k][started[k]], k))
            started[k] += 1
            running[k] += 1
            free -= 1
            if started[k] < len(maps[k]):
                heapq.heappush(ready, (running[k], float(submit[k]), k))
    return finish - submit


def peak_running(launch_ms, finish_ms) -> int:
    """The most maps running at once: the cluster's map slots as its records show them, where
    the cluster queued at least once (a map ending as another starts is not counted twice)."""
    start, end = np.asarray(launch_ms, np.int64), np.asarray(finish_ms, np.int64)
    if not len(start):
        return 0
    times = np.concatenate([start, end])
    steps = np.concatenate([np.ones(len(start), np.int64), -np.ones(len(end), np.int64)])
    order = np.lexsort((steps, times))  # at one instant, ends before starts
    return int(np.cumsum(steps[order]).max())


def job_latency(submit_s, response_s, map_job, launch_s, finish_s) -> tuple[float, float]:
    """What a job spends outside map slots, as the records show it: from submission to the
    earliest its first map could start (the AM's start, which the 5th percentile over the jobs
    of submission to first map launch bounds from above: those jobs found a slot at once), and
    from its last map's end to its own (the AM's commit: the median). The replay starts a job's
    maps that long after its submission and ends the job that long after its last map."""
    submit = np.asarray(submit_s, float)
    job = np.asarray(map_job, np.int64)
    first = np.full(len(submit), np.inf)
    last = np.full(len(submit), -np.inf)
    known = (job >= 0) & (job < len(submit))
    np.minimum.at(first, job[known], np.asarray(launch_s, float)[known])
    np.maximum.at(last, job[known], np.asarray(finish_s, float)[known])
    ran = np.isfinite(first)
    if not ran.any():
        return 0.0, 0.0
    start = max(0.0, float(np.percentile(first[ran] - submit[ran], START_PERCENTILE)))
    end = submit[ran] + np.asarray(response_s, float)[ran] - last[ran]
    return start, max(0.0, float(np.median(end)))


def replayed_response(submit_s, map_job, map_s, slots: int, latency: tuple[float, float] = (0.0, 0.0),
                      overhead_s: float = 0.0) -> np.ndarray:
    """:func:`fair_share_replay` with each job's ``latency`` (:func:`job_latency`) before its
    maps and after them, and every map holding its slot ``overhead_s`` longer."""
    start, end = latency
    return fair_share_replay(np.asarray(submit_s, float) + start, map_job,
                             np.asarray(map_s, float) + overhead_s, slots) + start + end


def slot_overhead(submit_s, map_job, map_s, slots: int, mean_response_s: float,
                  counted=None, latency: tuple[float, float] = (0.0, 0.0)) -> float:
    """The seconds each map holds its slot beyond its own time (the heartbeat before a freed
    slot is offered again, the container's start and clean-up) that make the replay of the
    maps as they ran give the run's own mean response over the ``counted`` jobs: the one
    parameter the replay fits to the run rather than reads from its records. 0 where the
    replay without it is already as slow as the run."""
    d = np.asarray(map_s, float)
    keep = slice(None) if counted is None else counted
    mean_at = lambda h: float(  # noqa: E731
        replayed_response(submit_s, map_job, d, slots, latency, h)[keep].mean())
    if not len(d) or mean_at(0.0) >= mean_response_s:
        return 0.0
    low, high = 0.0, float(np.mean(d))
    while mean_at(high) < mean_response_s and high < 1e6:
        low, high = high, 2 * high
    for _ in range(OVERHEAD_STEPS):
        mid = (low + high) / 2
        low, high = (mid, high) if mean_at(mid) < mean_response_s else (low, mid)
    return (low + high) / 2


def replayed_worlds(submit_s, map_job, map_s, map_on, map_ratio: float, slots: int,
                    overhead_s: float = 0.0,
                    latency: tuple[float, float] = (0.0, 0.0)) -> dict[str, np.ndarray]:
    """Per job, the replayed response ``always_on`` (the off periods' maps times ``map_ratio``,
    the on periods' mean map time over the off ones') and ``never_on`` (the on periods' maps
    divided by it); each map holds its slot ``overhead_s`` longer (:func:`slot_overhead`), each
    job has its ``latency``. The maps as they ran are :func:`replayed_response` of ``map_s``."""
    d = np.asarray(map_s, float)
    on = np.asarray(map_on, bool)
    if not math.isfinite(map_ratio) or map_ratio <= 0:
        raise ValueError(f"map time ratio must be positive, not {map_ratio}")
    run = lambda v: replayed_response(submit_s, map_job, v, slots, latency, overhead_s)  # noqa: E731
    return {"always_on": run(np.where(on, d, d * map_ratio)),
            "never_on": run(np.where(on, d / map_ratio, d))}
