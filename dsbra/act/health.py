"""Whether the cluster is fit to be changed: the refusals of operations.md, each with a reason.

Pure: it reads a NameNode health snapshot (``Jmx.namenode_health``) and the journal's pending
actions and returns the named reasons to refuse, empty when acting is safe.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HealthLimits:
    """The refusal thresholds; also the daemon config's ``health:`` section, key for key."""

    max_missing_blocks: int = 0
    #: a healthy cluster has some: job submission files ask for replication 10
    #: (mapreduce.client.submit.file.replication) and stay under-replicated on small clusters;
    #: replies captured from the bundled 4-node cluster while jobs ran show 24 and 8
    max_under_replicated_blocks: int = 100
    max_dead_datanodes: int = 0
    max_pending_actions: int = 0  #: earlier raises whose copies are not there yet
    max_observation_age_s: float = 300.0  #: since the last poll the ResourceManager answered


def refusals(health: dict, limits: HealthLimits, *, pending_actions: int = 0,
             observation_age_s: float = 0.0) -> list[str]:
    """Named reasons not to act this round ([] = go)."""
    out = []
    if health.get("safe_mode"):
        out.append("safe-mode: the NameNode is in safe mode")
    missing = int(health.get("missing_blocks") or 0)
    if missing > limits.max_missing_blocks:
        out.append(f"missing-blocks: {missing} > {limits.max_missing_blocks}")
    under = int(health.get("under_replicated_blocks") or 0)
    if under > limits.max_under_replicated_blocks:
        out.append(f"under-replicated: {under} blocks > {limits.max_under_replicated_blocks}")
    dead = int(health.get("num_dead") or 0)
    if dead > limits.max_dead_datanodes:
        out.append(f"dead-datanodes: {dead} > {limits.max_dead_datanodes}")
    if pending_actions > limits.max_pending_actions:
        out.append(f"pending-replication: {pending_actions} earlier raise(s) whose copies the "
                   "NameNode has not reported yet")
    if observation_age_s > limits.max_observation_age_s:
        out.append(f"stale-observations: {observation_age_s:.0f} s old > "
                   f"{limits.max_observation_age_s:.0f} s")
    return out


def refusal_name(reason: str) -> str:
    """A refusal's name as the decision lines say it (``refusal=paused``): the words before
    its colon, spaces as underscores (one key=value token)."""
    return reason.split(":")[0].replace(" ", "_")
