"""Refusal logic on the NameNode health read from captured JMX replies of the real cluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dsbra.act.health import HealthLimits, refusals

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "observe"))
from observe_captured import VERSIONS, replay_endpoints  # noqa: E402


@pytest.mark.parametrize("version", VERSIONS)
def test_a_healthy_captured_cluster_is_not_refused(version):
    """Captured while jobs ran: their submission files (replication 10 on 4 nodes) are
    under-replicated, which the default limit must tolerate."""
    ep, _ = replay_endpoints(f"{version}/endpoints")
    health = ep.jmx.namenode_health()
    assert 0 < health["under_replicated_blocks"] <= HealthLimits().max_under_replicated_blocks
    assert refusals(health, HealthLimits()) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_each_rail_names_its_reason(version):
    ep, _ = replay_endpoints(f"{version}/endpoints")
    health = ep.jmx.namenode_health()
    limits = HealthLimits(max_under_replicated_blocks=health["under_replicated_blocks"])
    cases = {
        "safe-mode": {**health, "safe_mode": True},
        "missing-blocks": {**health, "missing_blocks": 1},
        "under-replicated": {**health, "under_replicated_blocks": health["under_replicated_blocks"] + 1},
        "dead-datanodes": {**health, "num_dead": 1},
    }
    for name, h in cases.items():
        assert [r.split(":")[0] for r in refusals(h, limits)] == [name]
    assert [r.split(":")[0] for r in refusals(health, limits, pending_actions=1)] == [
        "pending-replication"]
    assert [r.split(":")[0] for r in refusals(health, limits, observation_age_s=301)] == [
        "stale-observations"]
