"""The placement plugin's DEBUG lines as its JUnit test pins them
(TestBlockPlacementPolicyDsbraHeat.theLogSaysWhichPathEachDeletionTook) and docs/placement.md
shows them from the bundled cluster: each deletion's path and each placement's refusals."""

from __future__ import annotations

from dsbra.bench.placement_log import heat_placements, plugin_deletions

LOG = """\
2026-12-07 10:00:01,000 DEBUG blockmanagement.BlockPlacementPolicyDsbraHeat: dsbra heat unusable: deletion from [d1] by HDFS's default (holders [d1, d2, d3] down to 2)
2026-12-07 10:00:02,000 DEBUG blockmanagement.BlockPlacementPolicyDsbraHeat: dsbra heat round 4 deletion from [d2] by heat, a lowering of /warm (holders [d1, d2, d3] down to 2)
2026-12-07 10:00:03,000 DEBUG blockmanagement.BlockPlacementPolicyDsbraHeat: dsbra heat round 4 deletion from [d1, d2] by HDFS's default, no lowering of the heat document (holders [d1, d2, d3] down to 1)
2026-12-07 10:00:04,000 DEBUG blockmanagement.BlockPlacementPolicyDsbraHeat: dsbra heat round 1 placed /data/hot on [10.82.0.14] (coolest first; HDFS's checks refused {10.82.0.13=too busy (2 xceivers)})
2026-12-07 10:00:05,000 DEBUG blockmanagement.BlockPlacementPolicyDsbraHeat: dsbra heat round 1 placed /data/hot on [10.82.0.12] (coolest first; HDFS's checks refused {})
"""


def test_each_deletion_says_its_round_nodes_and_path():
    assert plugin_deletions(LOG) == [
        {"round": None, "dropped": ["d1"], "holders": ["d1", "d2", "d3"], "down_to": 2,
         "by": "default: heat unusable"},
        {"round": 4, "dropped": ["d2"], "holders": ["d1", "d2", "d3"], "down_to": 2, "by": "heat"},
        {"round": 4, "dropped": ["d1", "d2"], "holders": ["d1", "d2", "d3"], "down_to": 1,
         "by": "default: no lowering matched"}]


def test_each_placement_by_heat_names_the_nodes_hdfs_refused():
    assert heat_placements(LOG) == {(1, "/data/hot"): {"10.82.0.13"}}
