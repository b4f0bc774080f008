"""The schedulers' delay-scheduling settings, declared once: Hadoop's defaults and bounds.

The cluster spec (`dsbra cluster up`), values files and the simulator check a value with the
function here and name it their own way (a flag, a values key), so the reason reads the same
wherever it is given; `dsbra observe` and the daemon assume Hadoop's default node delay when a
ResourceManager's /conf does not show one (their own ``--node-locality-delay`` /
``cluster.node_locality_delay`` is a count >= 0, checked by their option types).

- Fair Scheduler: ``yarn.scheduler.fair.locality.threshold.node`` / ``.rack``, a fraction of the
  cluster's nodes as missed scheduling opportunities, -1 off; with continuous scheduling,
  ``yarn.scheduler.fair.locality-delay-node-ms`` / ``-rack-ms``, a time instead.
- Capacity Scheduler: ``yarn.scheduler.capacity.node-locality-delay`` and
  ``rack-locality-additional-delay``, counts of missed scheduling opportunities that
  RegularContainerAllocator.canAssign caps by the cluster's node count.
"""

from __future__ import annotations

#: a Fair Scheduler locality threshold that is off (Hadoop's default)
THRESHOLD_OFF = -1.0
#: yarn.scheduler.capacity.node-locality-delay when capacity-scheduler.xml does not set it
NODE_LOCALITY_DELAY = 40
#: yarn.scheduler.capacity.rack-locality-additional-delay when not set: the locality wait factor
RACK_LOCALITY_ADDITIONAL_DELAY = -1


def threshold_problem(value: float) -> str | None:
    """What is wrong with a Fair Scheduler locality threshold, or None."""
    if value != THRESHOLD_OFF and not 0.0 <= value <= 1.0:
        return f"must be -1 (off) or within 0..1, got {value}"
    return None


def timed_delays_problem(node_ms: int, rack_ms: int) -> str | None:
    """What is wrong with the pair of time-based delays (ms), or None: both >= 0, or both off."""
    if (node_ms < 0) != (rack_ms < 0) or min(node_ms, rack_ms) < -1:
        return f"go together: both >= 0 (time-based delay) or both -1 (off), got {node_ms} and {rack_ms}"
    return None


def opportunities_problem(value) -> str | None:
    """What is wrong with one of the Capacity Scheduler's delays, or None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        return ("must be a count of missed scheduling opportunities, >= 0, or -1 (node: off; "
                f"rack: the locality wait factor), got {value!r}")
    return None
