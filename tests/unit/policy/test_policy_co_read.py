"""Issue 43's co-read options: what a hot block's jobs read with it (the round input's job
CSR) decides where its new replicas go, and which blocks grow beside it. Off by default;
without the job CSR they change nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dsbra.errors import InputError
from dsbra.policy.api import RULE_CO_READ, RULE_HOT, RULE_NAMES
from dsbra.policy.dsbra import DsbraPolicy
from dsbra.policy.placement import co_read_node_score, co_read_targets, preferred_non_holders
from dsbra.policy.profiles import params_for
from dsbra.policy.roundjson import plan_document, read_round
from dsbra.sim.policy_driver import window_jobs
from policy_helpers import make_round, replicate_map

NODES = [f"dn{j}" for j in range(1, 11)]
ROW = {"h": 0, "g": 1, "k": 2}


def window(jobs=(("h", "g"), ("h", "g"), ("h", "k"))):
    """Block h read 40 times, half its maps delayed (hot); g and k read once each, without
    delay, on nodes h is not on; twenty other blocks read once. ``jobs``: the blocks each job
    of the window read (each other block by a job of its own)."""
    blocks = [dict(id="h", nodes=["dn1", "dn2"], tasks=40, delayed=20, delay=200.0),
              dict(id="g", nodes=["dn5", "dn6"], tasks=2),
              dict(id="k", nodes=["dn7", "dn8"], tasks=1)]
    blocks += [dict(id=f"c{k}", nodes=[NODES[k % 10], NODES[(k + 3) % 10]], tasks=1)
               for k in range(20)]
    ri = make_round(NODES, blocks)
    rows = [[ROW[b] for b in job] for job in jobs] + [[3 + k] for k in range(20)]
    indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows])))
    return dataclasses.replace(ri, job_indptr=indptr, job_blocks=np.concatenate(rows))


def decide(ri, **params):
    # max_replication 3: h (on 2 nodes) gains one replica, so where it goes is a choice
    pol = DsbraPolicy(params_for("adaptive", delay_threshold_s=10, max_replication=3, **params))
    return pol.decide(ri, None)[0]


def test_a_hot_blocks_replica_goes_where_its_jobs_other_block_is_or_away_from_it():
    ri = window()
    default = replicate_map(ri, decide(ri))["h"]
    near = replicate_map(ri, decide(ri, co_read_placement="near"))["h"]
    away = replicate_map(ri, decide(ri, co_read_placement="away"))["h"]
    assert len(default) == len(near) == len(away) == 1
    # g's holders: two of h's jobs read g (score 2 each), k's one (score 1)
    assert near[0] in ("dn5", "dn6")
    assert away[0] not in ("dn5", "dn6", "dn7", "dn8", "dn1", "dn2")


def test_co_read_options_change_nothing_without_the_job_csr_or_when_off():
    ri = window()
    bare = dataclasses.replace(ri, job_indptr=None, job_blocks=None)
    plain = decide(bare)
    for params in ({"co_read_placement": "near"}, {"co_read_share": 0.5}):
        d = decide(bare, **params)
        assert replicate_map(bare, d) == replicate_map(bare, plain)
        assert np.array_equal(d.rule, plain.rule)
    with_jobs = decide(ri)
    assert replicate_map(ri, with_jobs) == replicate_map(bare, plain)


def test_a_block_most_of_a_hot_blocks_jobs_read_grows_to_its_target_beside_it():
    ri = window()
    d = decide(ri, co_read_share=0.5)
    raised = replicate_map(ri, d)
    assert set(raised) == {"h", "g"}  # g: 2 of h's 3 jobs; k: 1 of 3
    assert len(raised["g"]) == 1  # to h's target, 3
    assert d.rule[ROW["g"]] == RULE_CO_READ and RULE_NAMES[RULE_CO_READ] == "co-read"
    assert d.rule[ROW["h"]] == RULE_HOT and d.rule[ROW["k"]] != RULE_CO_READ
    assert set(replicate_map(ri, decide(ri, co_read_share=0.9))) == {"h"}


def test_a_co_read_block_keeps_its_extra_replica_while_the_hot_block_is_hot():
    ri = window()
    # g already at h's target (3) after an earlier round: the cool rule would take it back
    nodes = list(ri.replica_nodes)
    nodes.insert(ri.replica_indptr[ROW["g"] + 1], NODES.index("dn9"))
    indptr = ri.replica_indptr.copy()
    indptr[ROW["g"] + 1:] += 1
    grown = dataclasses.replace(ri, replica_indptr=indptr, replica_nodes=nodes)
    lowered = lambda d: [grown.block_ids[b] for b in d.dereplicate_block]  # noqa: E731
    # holder_share 1: g's two reads need one holder, so its extra replicas are up for removal
    assert "g" in lowered(decide(grown, holder_share=1.0))
    kept = decide(grown, holder_share=1.0, co_read_share=0.5)
    assert "g" not in lowered(kept) and kept.rule[ROW["g"]] == RULE_CO_READ


def test_placement_helpers_on_a_hand_checked_round():
    # blocks: 0 on n0; 1 on n2; 2 on n3. jobs: {0, 1}, {0, 2}, {0, 1}
    indptr, nodes = np.array([0, 1, 2, 3]), np.array([0, 2, 3])
    jp, jb = np.array([0, 2, 4, 6]), np.array([0, 1, 0, 2, 0, 1])
    score = co_read_node_score(jp, jb, indptr, nodes, np.array([0]), 3, 5)
    assert score.tolist() == [[3, 0, 2, 1, 0]]  # n0: block 0 itself in each job
    rank = np.array([4, 3, 2, 1, 0])  # n4 coolest
    _, chosen = preferred_non_holders(indptr, nodes, np.array([0]), np.array([3]), score, rank)
    assert chosen.tolist() == [2, 3, 4]  # the holder n0 never; then by score, ties by rank
    _, chosen = preferred_non_holders(indptr, nodes, np.array([0]), np.array([2]), -score, rank)
    assert chosen.tolist() == [4, 1]
    wanted = co_read_targets(jp, jb, np.array([0]), np.array([4]), 0.6, 3)
    assert wanted.tolist() == [0, 4, 0]  # block 1 with 2 of 3 jobs, block 2 with 1 of 3


def test_window_jobs_lists_each_block_once_per_job():
    indptr, blocks = window_jobs(np.array([1, 0, 1, 1, 3]), np.array([5, 2, 5, 4, 2]))
    assert indptr.tolist() == [0, 1, 3, 4] and blocks.tolist() == [2, 4, 5, 2]
    indptr, blocks = window_jobs(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert indptr.tolist() == [0] and blocks.tolist() == []


@pytest.mark.parametrize("change, message", [
    ({"job_blocks": None}, "come together"),
    ({"job_indptr": np.array([0, 2])}, "not a valid CSR index"),
    ({"job_indptr": np.array([0, 1]), "job_blocks": np.array([99])}, "out of range"),
])
def test_a_bad_job_csr_is_refused(change, message):
    ri = dataclasses.replace(window(), **change)
    with pytest.raises(InputError, match=message):
        ri.validate()


@pytest.mark.parametrize("params, message", [
    ({"co_read_placement": "nearby"}, "co_read_placement must be one of near, away"),
    ({"co_read_share": 0}, "co_read_share must be in"),
    ({"co_read_share": 1.5}, "co_read_share must be in"),
])
def test_bad_co_read_parameters_are_refused(params, message):
    with pytest.raises(InputError, match=message):
        params_for("adaptive", delay_threshold_s=10, **params)


def _document(jobs=None) -> dict:
    """window() as a `dsbra plan` / daemon round document, with its ``jobs`` section."""
    ri = window()
    blocks = [{"block_id": str(ri.block_ids[b]), "default_replicas": 2,
               "nodes": [NODES[j] for j in ri.replica_nodes[ri.replica_indptr[b]:
                                                             ri.replica_indptr[b + 1]]],
               "tasks": int(ri.tasks[b]), "delayed_tasks": int(ri.delayed_tasks[b]),
               "delay_s": float(ri.delay_s[b])} for b in range(len(ri))]
    doc = {"params": {"delay_threshold_s": 10, "max_replication": 3}, "live_nodes": NODES,
           "blocks": blocks}
    if jobs is not None:
        doc["jobs"] = jobs
    return doc


def test_the_round_documents_jobs_section_feeds_the_co_read_options():
    """What the daemon and `dsbra plan` read: job id -> the block ids its maps read."""
    jobs = {"job_1": ["h", "g"], "job_2": ["g", "h", "h"], "job_3": ["h", "k"]}
    plan = plan_document(_document(jobs), overrides={"co_read_share": 0.5})
    assert set(plan["replicate"]) == {"h", "g"}
    assert set(plan_document(_document(), overrides={"co_read_share": 0.5})["replicate"]) == {"h"}
    ri = read_round(_document(jobs))[0]
    assert ri.job_indptr.tolist() == [0, 2, 4, 6]  # job_2 reads h once
    assert ri.job_blocks.tolist() == [ROW["h"], ROW["g"], ROW["g"], ROW["h"], ROW["h"], ROW["k"]]


@pytest.mark.parametrize("jobs, message", [
    (["h"], "'jobs' must map job ids to lists of block ids"),
    ({"job_1": "h"}, "jobs['job_1'] must be a list of block ids"),
    ({"job_1": ["h", "nope"]}, "jobs['job_1']: unknown block nope"),
])
def test_a_bad_jobs_section_is_a_one_line_input_error(jobs, message):
    with pytest.raises(InputError) as err:
        read_round(_document(jobs))
    assert message in str(err.value) and "\n" not in str(err.value)
