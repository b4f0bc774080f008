"""The attribution rule and the per-block folding, on hand-built timelines (pure functions)."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsbra.signals import AttributionParams, Containers, MapTasks, attribute, block_metrics
from dsbra.signals.attribution import Samples, allocation_leads, measured_lead
from dsbra.signals.blocks import peak_concurrency

CAP = np.array([2048, 2048, 2048])  # three nodes, two 1024 MB containers each
P = AttributionParams(delay_threshold_s=4.0, grace_s=2.0, settle_s=2.0)


def tasks(rows, apps=None):
    """rows: (scheduled_ms, launch_ms, node, split_nodes); apps: each task's application."""
    indptr = np.r_[0, np.cumsum([len(r[3]) for r in rows])]
    return MapTasks(np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64),
                    np.array([r[2] for r in rows], np.int32), np.full(len(rows), 1024, np.int64),
                    indptr.astype(np.int64),
                    np.array([n for r in rows for n in r[3]], np.int32),
                    None if apps is None else np.array(apps, np.int32))


def containers(rows, apps=None):
    """rows: (node, start_ms, end_ms); apps: each container's application."""
    app = None if apps is None else np.array(apps, np.int32)
    if not rows:
        z = np.zeros(0, np.int64)
        return Containers(z.astype(np.int32), z, z, z, app)
    a = np.array(rows, np.int64)
    return Containers(a[:, 0].astype(np.int32), a[:, 1], a[:, 2], np.full(len(rows), 1024, np.int64), app)


def test_waiting_for_a_busy_local_node_while_another_is_idle_is_delay():
    # node 0 (the split's only replica) is full until 6 s; node 2 idle all along
    t = tasks([(0, 6500, 0, [0])])
    c = containers([(0, -10_000, 6000), (0, -10_000, 6000), (1, -10_000, 20_000),
                    (1, -10_000, 20_000)])
    delay, delayed, local, wait, _ = attribute(t, c, CAP, P, end_ms=20_000)
    assert delayed[0] and local[0]
    assert delay[0] == 4.0  # room on node 2 for the whole 6.5 s wait, capped at D
    assert wait[0] == 6.5


def test_waiting_while_the_whole_cluster_is_full_is_not_delay():
    t = tasks([(0, 9000, 1, [0])])
    c = containers([(n, -5000, 8000) for n in range(3) for _ in range(2)])
    delay, delayed, local, _, _ = attribute(t, c, CAP, P, end_ms=20_000)
    assert not delayed[0] and delay[0] == 0 and not local[0]


def test_a_short_wait_is_the_allocation_round_trip_not_delay():
    t = tasks([(0, 1900, 0, [0])])
    delay, delayed, _, _, _ = attribute(t, containers([]), CAP, P, end_ms=5000)
    assert not delayed[0] and delay[0] == 0


def test_a_node_being_filled_one_container_per_heartbeat_is_not_idle():
    # job ramp-up: node 1 and 2 each receive a container every second; the task waits 3.5 s
    starts = [(n, s, 30_000) for n in (1, 2) for s in (500, 1500)]
    t = tasks([(0, 3500, 0, [0])])
    c = containers(starts + [(0, -1000, 3000), (0, -1000, 3000)])
    delay, delayed, _, _, _ = attribute(t, c, np.array([2048, 2048, 2048]), P, end_ms=30_000)
    assert not delayed[0]


def test_non_local_launch_after_about_d_counts():
    t = tasks([(0, 4200, 2, [0])])  # gave up on node 0, ran on idle node 2
    c = containers([(0, -10_000, 20_000), (0, -10_000, 20_000)])
    delay, delayed, local, _, _ = attribute(t, c, CAP, P, end_ms=20_000)
    assert delayed[0] and not local[0] and delay[0] == 4.0


# Passed over: a slot the waiting task's application declined goes at once to another one.
# Nodes 0-2 hold two 1024 MB containers each: app 0 holds one (node 0), app 1 three (node 0
# until 11.5 s, node 1), app 2 two (node 2, one of them until 4 s).
FULL = [(0, -10_000, 30_000), (0, -10_000, 11_500), (1, -10_000, 30_000), (1, -10_000, 30_000),
        (2, -10_000, 30_000), (2, -10_000, 4000)]
FULL_APPS = [0, 1, 1, 1, 2, 2]


def test_a_slot_going_to_an_application_that_holds_more_is_a_declined_slot():
    # node 2's slot frees at 4 s and goes to app 1 (holding 3, two more than app 0) at 5 s: app 0
    # declined it (node 2 was never idle: the slot was taken within the settle time)
    t = tasks([(0, 12_000, 0, [0])], apps=[0])
    c = containers(FULL + [(2, 5000, 30_000)], apps=FULL_APPS + [1])
    delay, delayed, local, _, _ = attribute(t, c, CAP, P, end_ms=30_000)
    assert delayed[0] and local[0]
    assert delay[0] == 4.0  # 7 s from the declined slot to the launch, capped at D


def test_a_slot_going_to_an_application_that_holds_less_is_fair_sharing_not_delay():
    # the freed slot on node 2 goes to app 3, which holds nothing: it ranked before app 0
    t = tasks([(0, 12_000, 0, [0])], apps=[0])
    c = containers(FULL + [(2, 5000, 30_000)], apps=FULL_APPS + [3])
    delay, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000)
    assert not delayed[0] and delay[0] == 0


def test_ranking_allows_for_launches_trailing_allocations():
    # app 1 holds 3, app 0 holds 1, but app 0's next container launches 1 s after app 1's, within
    # the allocation round trip (grace 2 s): app 0 may have been served first, so no evidence
    t = tasks([(0, 12_000, 0, [0])], apps=[0])
    more_for_0 = [(0, 6000, 30_000), (0, 6000, 30_000)]  # two more for app 0 (over-full node 0)
    c = containers(FULL + [(2, 5000, 30_000)] + more_for_0, apps=FULL_APPS + [1, 0, 0])
    _, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000)
    assert not delayed[0]
    # ... nor when app 1 held no more than app 0 at some point of the round trip before its
    # launch (its two containers on node 1 ended at 3.5 s; app 3 took those slots at 4 s)
    shrinking = list(FULL)
    shrinking[2] = shrinking[3] = (1, -10_000, 3500)
    c = containers(shrinking + [(1, 4000, 30_000), (1, 4000, 30_000), (2, 5000, 30_000)],
                   apps=FULL_APPS + [3, 3, 1])
    _, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000)
    assert not delayed[0]


def test_without_the_passed_over_evidence_a_slot_going_to_a_bigger_application_is_not_delay():
    # the Capacity Scheduler's setting: the slot of the test above proves nothing there
    t = tasks([(0, 12_000, 0, [0])], apps=[0])
    c = containers(FULL + [(2, 5000, 30_000)], apps=FULL_APPS + [1])
    no_passed_over = AttributionParams(delay_threshold_s=4.0, grace_s=2.0, settle_s=2.0,
                                       passed_over=False)
    assert not attribute(t, c, CAP, no_passed_over, end_ms=30_000)[1][0]


def test_a_slot_going_to_the_same_application_or_a_replica_node_is_not_a_declined_slot():
    same_app = containers(FULL + [(2, 5000, 30_000)], apps=FULL_APPS + [0])
    on_replica = containers(FULL + [(2, 5000, 30_000), (0, 11_600, 30_000)], apps=FULL_APPS + [3, 1])
    for c in (same_app, on_replica):
        _, delayed, _, _, _ = attribute(tasks([(0, 12_000, 0, [0])], apps=[0]), c, CAP, P,
                                        end_ms=30_000)
        assert not delayed[0]


def test_without_applications_only_idle_nodes_count():
    t = tasks([(0, 12_000, 0, [0])])
    c = containers(FULL + [(2, 5000, 30_000)])
    _, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000)
    assert not delayed[0]


def test_a_slot_taken_before_the_round_trip_is_not_a_declined_slot():
    t = tasks([(0, 12_000, 0, [0])], apps=[0])
    early = [(2, -10_000, 1000) if row == (2, -10_000, 4000) else row for row in FULL]
    c = containers(early + [(2, 1500, 30_000)], apps=FULL_APPS + [1])
    _, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000)
    assert not delayed[0]


def test_down_nodes_are_not_room():
    t = tasks([(0, 6500, 0, [0])])
    c = containers([(0, -10_000, 6000), (0, -10_000, 6000)])
    up = np.array([True, False, False])
    delay, delayed, _, _, _ = attribute(t, c, CAP, P, node_up=up, end_ms=20_000)
    assert not delayed[0]


def _samples(times, free_by_node):
    return Samples(np.array(times, np.int64), np.array(free_by_node, np.int64).T.copy())


def test_the_lead_is_measured_from_the_rm_samples():
    # node 1: the RM holds app 1's container from the poll at 3 s (allocated after the poll at
    # 0 s that showed room), the history launches it at 9 s: its lead is at most 9 s
    c = containers([(0, -10_000, 11_500), (0, -10_000, 11_500), (2, -10_000, 30_000),
                    (2, -10_000, 30_000), (1, -10_000, 30_000), (1, 9000, 30_000)],
                   apps=[2, 2, 2, 2, 2, 1])
    polls = [0, 3000, 6000, 9000, 12_000]
    s = _samples(polls, [[0, 0, 0, 0, 2048], [1024, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    leads = allocation_leads(c, CAP, s, 2000, 1000, 8000)
    assert leads.tolist() == [2000] * 5 + [9000]  # the others: no poll caught them early
    full = AttributionParams(4.0, 2.0, 2.0, lead_quantile=100.0)
    assert measured_lead(c, CAP, s, full) == 9000
    assert measured_lead(c, CAP, None, full) == 2000  # without samples: grace_s
    # so node 1's room before that launch is not certain: the task waiting for node 0 did not
    # decline it (on the history alone, with grace_s as the lead, it looks declined)
    t = tasks([(0, 12_000, 0, [0])], apps=[0])
    _, delayed, _, _, _ = attribute(t, c, CAP, full, end_ms=30_000, samples=s)
    assert not delayed[0]
    _, delayed, _, _, _ = attribute(t, c, CAP, full, end_ms=30_000)
    assert delayed[0]


def test_a_poll_showing_room_past_the_round_trip_is_a_declined_slot():
    # node 1 frees a container at 3.5 s and starts another at 4.4 s: too short to be idle or
    # certain room, but the RM's poll at 4 s shows the room while the task waits for node 0
    c = containers([(0, -10_000, 9500), (0, -10_000, 9500), (2, -10_000, 30_000),
                    (2, -10_000, 30_000), (1, -10_000, 30_000), (1, -10_000, 3500),
                    (1, 4400, 30_000)])
    t = tasks([(0, 10_000, 0, [0])])
    polls = [0, 2000, 4000, 6000, 8000, 10_000]
    room_at = lambda k: [0, 0, 1024 if k == 4000 else 0]  # noqa: E731
    s = _samples(polls, np.array([room_at(k) for k in polls]).T)
    delay, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000, samples=s)
    assert delayed[0] and delay[0] == 4.0  # from the poll to the launch, capped at D
    _, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000)
    assert not delayed[0]
    # within the task's own round trip (a poll at 1 s) it is not
    s = _samples([0, 1000, 2000, 6000, 8000, 10_000],
                 np.array([[0, 0, 1024 if k == 1000 else 0]
                           for k in [0, 1000, 2000, 6000, 8000, 10_000]]).T)
    _, delayed, _, _, _ = attribute(t, c, CAP, P, end_ms=30_000, samples=s)
    assert not delayed[0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20_000), st.integers(0, 20_000), st.integers(0, 2),
                          st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True)),
                min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 2), st.integers(-5000, 20_000), st.integers(1, 9000),
                          st.integers(0, 3)),
                max_size=12),
       st.integers(0, 3))
# issue 25: map 1 launched the moment it was scheduled while map 5 of its application waited
# past its round trip; it waited through no decline, so it is not delayed
@example(trows=[(0, 0, 0, [0]), (1, 1, 0, [0]), (0, 0, 0, [0]), (0, 0, 0, [0]), (0, 0, 0, [0]),
                (0, 2001, 0, [0])], crows=[], app_seed=0)
def test_invariants(trows, crows, app_seed):
    rows = [(min(a, b), max(a, b), n, s) for a, b, n, s in trows]
    t = tasks(rows, apps=[(i + app_seed) % 4 for i in range(len(rows))])
    c = containers([(n, s, s + d) for n, s, d, _ in crows], apps=[a for *_, a in crows])
    delay, delayed, local, wait, _ = attribute(t, c, CAP, P, end_ms=40_000)
    assert np.all(delay >= 0) and np.all(delay <= P.delay_threshold_s + 1e-9)
    assert np.all(delay <= wait + 1e-9)
    assert np.all(delay[~delayed] == 0)
    assert np.all(delay[delayed] > 0)
    # every decline comes from a map of the application that waited past its round trip; the
    # rule marks the application's other maps waiting then too (it delays an application)
    apps = np.array([(i + app_seed) % 4 for i in range(len(rows))])
    for k in np.flatnonzero(delayed):
        assert np.any(wait[apps == apps[k]] > P.grace_s)


def test_block_folding_and_peak_readers():
    block = np.array([0, 0, 0, 1, -1])
    delay = np.array([1.0, 0.0, 2.5, 4.0, 3.0])
    delayed = delay > 0
    local = np.array([True, False, True, False, True])
    launch = np.array([0, 5, 10, 0, 0])
    end = np.array([10, 15, 20, 1, 5])
    m = block_metrics(block, delay, delayed, local, launch, end, 3)
    assert m.tasks.tolist() == [3, 1, 0]
    assert m.delayed_tasks.tolist() == [2, 1, 0]
    assert m.delay_s.tolist() == [3.5, 4.0, 0.0]
    assert m.nonlocal_tasks.tolist() == [1, 1, 0]
    assert m.peak_readers.tolist() == [2, 1, 0]  # [0,10) [5,15) [10,20): ends before starts


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 100), st.integers(1, 50)), max_size=40))
def test_peak_concurrency_matches_brute_force(rows):
    b = np.array([r[0] for r in rows], np.int64)
    s = np.array([r[1] for r in rows], np.int64)
    e = s + np.array([r[2] for r in rows], np.int64)
    got = peak_concurrency(b, s, e, 4)
    for blk in range(4):
        sel = b == blk
        brute = max((int(np.sum((s[sel] <= t) & (e[sel] > t))) for t in range(0, 160)), default=0)
        assert got[blk] == brute

