"""The replication policy engine: pure, columnar rounds (DSBRA and baselines), rails, state.

Start at :mod:`dsbra.policy.api` (the interface) and :func:`make_policy` (:mod:`dsbra.policy.registry`).
"""

from dsbra.policy.api import BlockState, Decision, FileTable, Policy, RoundInput
from dsbra.policy.registry import make_policy

__all__ = ["BlockState", "Decision", "FileTable", "Policy", "RoundInput", "make_policy"]
