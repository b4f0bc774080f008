"""The live demand's rule (dsbra.signals.demand) on small columns."""

from __future__ import annotations

import numpy as np
import pytest

from dsbra.signals.demand import PendingMaps, block_demand, host_capacity


def maps(rows: list[tuple[int, list[int]]], n_blocks: int, n_hosts: int) -> PendingMaps:
    ptr = np.cumsum([0] + [len(h) for _, h in rows])
    return PendingMaps(np.array([b for b, _ in rows], np.int64), ptr.astype(np.int64),
                       np.array([h for _, hs in rows for h in hs], np.int64),
                       [(f"/f{b}", 0) for b in range(n_blocks)], [f"h{h}" for h in range(n_hosts)])


def test_a_block_on_one_holder_with_one_free_container_is_short_by_the_rest():
    d = block_demand(maps([(0, [0])] * 5, 1, 2), host_capacity(np.array([1, 4]), np.array([4, 0]), 10, None))
    assert d.pending.tolist() == [5] and d.can_serve.tolist() == [1.0]
    assert d.short.tolist() == [True] and d.excess.tolist() == [4.0]


def test_containers_ending_within_d_count_as_their_chance():
    cap = host_capacity(np.array([0, 2]), np.array([4, 0]), delay_s=10, task_s=20)
    assert cap.tolist() == [2.0, 2.0]  # half of the four running ones end within 10 s
    assert host_capacity(np.array([-1]), np.array([3]), 10, 5).tolist() == [3.0]  # all of them; no negative free


def test_blocks_on_one_holder_share_its_containers_by_their_maps():
    d = block_demand(maps([(0, [0])] * 3 + [(1, [0])], 2, 1), np.array([2.0]))
    assert d.can_serve.tolist() == [1.5, 0.5] and d.short.tolist() == [True, True]


def test_a_block_with_holders_enough_is_not_short():
    d = block_demand(maps([(0, [0, 1, 2])] * 3, 1, 3), np.array([1.0, 1.0, 1.0]))
    assert d.can_serve.tolist() == [3.0] and d.short.tolist() == [False] and d.excess.tolist() == [0.0]


def test_a_holder_loaded_by_another_blocks_maps_serves_less():
    # block 0 on hosts 0 and 1; block 1's two maps also want host 1, which has the only container
    d = block_demand(maps([(0, [0, 1]), (0, [0, 1]), (1, [1]), (1, [1])], 2, 2), np.array([0.0, 1.0]))
    # host 1's container: a third to block 0 (two half-maps), two thirds to block 1 (two maps)
    assert d.can_serve[0] == pytest.approx(1 / 3) and d.can_serve[1] == pytest.approx(2 / 3)
    assert d.short.all()


def test_no_pending_map_no_row():
    d = block_demand(maps([], 0, 2), np.array([1.0, 1.0]))
    assert d.rows() == []
