"""Per-block delay-scheduling counters from task records: pure, columnar (numpy), no I/O.

``attribution`` decides which part of each map task's wait was delay scheduling;
``blocks`` folds the per-task results into the per-block N, M, DT, non-local count and peak
concurrent readers that ``dsbra plan`` and the baselines consume.
"""

from dsbra.signals.attribution import AttributionParams, Containers, MapTasks, Samples, attribute
from dsbra.signals.blocks import BlockMetrics, block_metrics

__all__ = ["AttributionParams", "Containers", "MapTasks", "Samples", "attribute", "BlockMetrics",
           "block_metrics"]
