"""The Capacity Scheduler's own record of the nodes an application skipped for locality.

``/ws/v1/cluster/scheduler/app-activities/{app}?actions=refresh,get&maxTime=S`` (Hadoop 3.3+):
``refresh`` keeps the ResourceManager recording the application's allocation attempts for S
seconds (``ActivitiesManager.turnOnAppActivitiesRecording``), ``get`` returns the latest it
kept (``yarn.resourcemanager.activities-manager.app-activities.max-queue-length``, 100 by
default). When ``RegularContainerAllocator.assignOffSwitchContainers`` declines a node because
``canAssign`` refuses (Hadoop 3.4.2), the attempt carries the node-level diagnostic
``Node skipped because of off-switch delay``
(``ActivityDiagnosticConstant.NODE_SKIPPED_BECAUSE_OF_OFF_SWITCH_DELAY``): the application
declined that node for locality at that moment, which is what the attribution rule otherwise
infers. A rack-local skip (``assignRackLocalContainers``) records nothing, so on a cluster of
one rack there is nothing to read; the declines read are a lower bound. Checked against the
scheduler's DEBUG log on the bundled cluster: benchmarks/validate_attribution.py, docs/metrics.md.
"""

from __future__ import annotations

from typing import Any

from dsbra.hadoop import shapes

OFF_SWITCH_DELAY = "Node skipped because of off-switch delay"
#: how long one refresh keeps the RM recording an application: longer than a poll interval,
#: so recording never lapses between polls
RECORD_S = 30.0


def locality_skips(reply: Any) -> list[tuple[int, str]]:
    """(ms, host) of every allocation attempt in an app-activities reply whose node-level
    diagnostic is the off-switch delay; malformed entries are skipped."""
    doc = reply.get("appActivities") if isinstance(reply, dict) else None
    out = []
    for attempt in shapes.as_list(doc.get("allocations") if isinstance(doc, dict) else None):
        if not isinstance(attempt, dict):
            continue
        ms = shapes.as_int(attempt.get("timestamp"))
        host = str(attempt.get("nodeId") or "").split(":")[0]
        if ms is None or not host:
            continue
        if any(d == OFF_SWITCH_DELAY for d in _node_diagnostics(attempt)):
            out.append((ms, host))
    return out


def _node_diagnostics(attempt: dict) -> list[str]:
    """The diagnostics of an attempt's node-level entries (request -> node in the tree)."""
    out = []
    for request in shapes.as_list(attempt.get("children")):
        if not isinstance(request, dict):
            continue
        for node in shapes.as_list(request.get("children")) or [request]:
            if isinstance(node, dict) and node.get("diagnostic"):
                out.append(str(node["diagnostic"]))
    return out
