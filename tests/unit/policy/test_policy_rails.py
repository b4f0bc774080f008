"""Block decisions -> file plan, through the rails (hand-computed)."""

from __future__ import annotations

import numpy as np
import pytest

from dsbra.errors import InputError
from dsbra.policy.api import Decision, FileTable, RULE_COOL, RULE_HOT
from dsbra.experiment.design import CONTROL, TREATMENT, Holdout
from dsbra.policy.rails import (STATUS_BUDGET, STATUS_CAP, STATUS_CLAMPED, STATUS_OK,
                                STATUS_HELD_OUT, STATUS_PROTECTED, Rails, plan_files)
from policy_helpers import make_round

NODES = ["dn1", "dn2", "dn3", "dn4", "dn5"]
MB = 1_000_000


def scenario():
    """Files: /a (blocks a0, a1), /b (b0), /c (c0), /d (d0, d1)."""
    blocks = [dict(id="a0", nodes=["dn1"], base=1, file=0),
              dict(id="a1", nodes=["dn2"], base=1, file=0),
              dict(id="b0", nodes=["dn1", "dn2", "dn3"], base=2, file=1),
              dict(id="c0", nodes=["dn2"], base=1, file=2),
              dict(id="d0", nodes=["dn1", "dn2"], base=1, file=3),
              dict(id="d1", nodes=["dn3", "dn4"], base=1, file=3)]
    files = FileTable(paths=np.array(["/a", "/b", "/c", "/d"], dtype=object),
                      base_replication=[1, 2, 1, 1], current_replication=[1, 3, 1, 2],
                      length_bytes=[10 * MB, 5 * MB, 4 * MB, 8 * MB], block_count=[2, 1, 1, 2])
    ri = make_round(NODES, blocks, files=files)
    # a0 +3 (dn3, dn4, dn5), a1 +1 (dn5), c0 +2 (dn1, dn3); b0 -1 (dn3); d0 -1 (dn2) only
    d = Decision(policy="dsbra", replicate_block=[0, 1, 3], replicate_indptr=[0, 3, 4, 6],
                 replicate_nodes=[2, 3, 4, 4, 0, 2], dereplicate_block=[2, 4],
                 dereplicate_node=[2, 1], rf=[0.9, 0.5, 0.1, 0.7, 0.05, 0.3],
                 rule=[RULE_HOT, RULE_HOT, RULE_COOL, RULE_HOT, RULE_COOL, 0], gavg=0.3,
                 dn_avg=np.zeros(5))
    return ri, d


def by_file(plan):
    return {r["file"]: r for r in plan.to_records(NODES)}


def test_file_target_is_max_over_blocks_and_shrinks_only_when_all_blocks_do():
    ri, d = scenario()
    plan = by_file(plan_files(ri, d, Rails()))
    assert plan["/a"]["target"] == 4  # 1 + max(3, 1)
    assert plan["/a"]["placement"] == ["dn3", "dn4", "dn5"]  # the driving block's order
    assert plan["/a"]["reason"] == {"policy": "dsbra", "rule": "hot", "rf": 0.9, "gavg": 0.3}
    assert plan["/b"]["target"] == 2 and plan["/b"]["status"] == "ok"
    assert plan["/c"]["target"] == 3
    assert "/d" not in plan  # only d0 of /d shrinks: the file keeps its replication


def test_range_clamps_to_max_and_to_base():
    ri, d = scenario()
    plan = plan_files(ri, d, Rails(max_replication=3, min_replication=3))
    rec = by_file(plan)
    assert rec["/a"]["target"] == 3 and rec["/a"]["status"] == "clamped"
    assert rec["/a"]["placement"] == ["dn3", "dn4"]
    assert rec["/b"]["target"] == 3 and rec["/b"]["status"] == "at-limit"  # min 3 > base 2


def test_protected_paths_do_not_move():
    ri, d = scenario()
    rec = by_file(plan_files(ri, d, Rails(protected=("/a", "/b*"))))
    assert rec["/a"]["target"] == 1 and rec["/a"]["status"] == "protected"
    assert rec["/b"]["target"] == 3 and rec["/b"]["status"] == "protected"
    assert rec["/c"]["target"] == 3


def test_budget_prefix_with_partial_grant():
    ri, d = scenario()
    # extra now: /b 1 x 5 MB + /d 1 x 8 MB = 13 MB; /b drops first (-5 MB) -> 8 MB.
    # budget 30 MB leaves 22 MB: /a (rf 0.9) wants 3 x 10 MB -> gets 2; /c (rf 0.7) refused.
    plan = plan_files(ri, d, Rails(storage_budget_bytes=30 * MB))
    rec = by_file(plan)
    assert plan.extra_bytes_before == 13 * MB
    assert rec["/b"]["target"] == 2
    assert rec["/a"]["target"] == 3 and rec["/a"]["status"] == "budget"
    assert rec["/a"]["placement"] == ["dn3", "dn4"]
    assert rec["/c"]["target"] == 1 and rec["/c"]["status"] == "budget"
    assert plan.extra_bytes_after == 28 * MB


def test_round_caps():
    ri, d = scenario()
    rec = by_file(plan_files(ri, d, Rails(max_replicas_per_round=4)))
    assert rec["/a"]["target"] == 4 and rec["/c"]["target"] == 2  # 3 + 1 partial
    assert rec["/c"]["status"] == "round-cap"
    rec = by_file(plan_files(ri, d, Rails(max_bytes_per_round=30 * MB)))
    assert rec["/a"]["target"] == 4 and rec["/c"]["target"] == 1
    rec = by_file(plan_files(ri, d, Rails(max_files_per_round=2)))
    # the decrease (/b) goes first, then /a; /c is refused
    assert [rec[f]["target"] for f in ("/a", "/b", "/c")] == [4, 2, 1]
    assert rec["/c"]["status"] == "round-cap"


def test_status_codes_are_distinct():
    assert len({STATUS_OK, STATUS_CLAMPED, STATUS_PROTECTED, STATUS_CAP, STATUS_BUDGET,
                STATUS_HELD_OUT}) == 6


def test_bad_rails_are_input_errors():
    with pytest.raises(InputError):
        Rails(storage_budget_bytes=-1)
    with pytest.raises(InputError, match=r"^min_replication must be >= 1, got 0$"):
        Rails(min_replication=0)
    with pytest.raises(InputError, match=r"^max_replication must be >= min_replication \(3\), got 2$"):
        Rails(min_replication=3, max_replication=2)


def test_rails_within_a_policys_maximum():
    """None takes the policy's own maximum; a lower rail stays; never below the floor."""
    assert Rails().within(5).max_replication == 5
    assert Rails(max_replication=3).within(5).max_replication == 3
    assert Rails(max_replication=8).within(5).max_replication == 5
    assert Rails(min_replication=4).within(3).max_replication == 4


def test_held_out_raises_are_not_made_and_use_no_budget():
    """/a (rf 0.9) is held out: unchanged, with the target it would have had, and the
    budget that would have gone to it goes to /c (the next raise in priority)."""
    ri, d = scenario()
    holdout = Holdout(0.5, assigned={"/a": CONTROL, "/c": TREATMENT, "/b": CONTROL})
    plan = plan_files(ri, d, Rails(storage_budget_bytes=30 * MB), holdout)
    rec = by_file(plan)
    assert rec["/a"]["target"] == 1 and rec["/a"]["status"] == "held-out"
    assert rec["/a"]["would_target"] == 4 and rec["/a"]["placement"] == []
    # extra 13 MB, /b drops to 8 MB (a decrease is never held out); /c +2 x 4 MB fits
    assert rec["/b"]["target"] == 2 and rec["/b"]["status"] == "ok"
    assert rec["/c"]["target"] == 3 and rec["/c"]["status"] == "ok"
    assert plan.summary["files_held_out"] == 1 and list(plan.held_out()) == [0]
    assert plan.extra_bytes_after == 16 * MB


def test_no_holdout_and_a_disabled_one_plan_alike():
    ri, d = scenario()
    plain = by_file(plan_files(ri, d, Rails()))
    off = by_file(plan_files(ri, d, Rails(), Holdout(0.0, assigned={"/a": CONTROL})))
    assert plain == off and "would_target" not in off["/a"]
