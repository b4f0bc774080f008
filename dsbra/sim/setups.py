"""Named simulator setups: a cluster (SimConfig fields) and a workload (WorkloadSpec fields).

The uncalibrated setups keep the values the published results were run with, so old and new
results stay comparable; the calibrated ones (``paper-h1``, ``fb2009-day-calibrated``,
``fb2010-calibrated``) take their task model from measurements (docs/simulator.md, "Calibrated
task model"): the bundled cluster's map times (benchmarks/fit_task_model.py before issue 66)
and the delay scheduling paper's Facebook medians (map 19 s, job 84 s). The simulator's fit to
a real sitting is dsbra/sim/calibration.py's (dsbra/sim/fitted.py sets it up).
"""

from __future__ import annotations

from pathlib import Path

from dsbra.errors import InputError
from dsbra.sim.config import BUNDLED_AM_HEARTBEAT_S, SPARK_APPS, SimConfig, SparkSettings
from dsbra.validate import one_of

TRACES = Path("/work/shared/traces")
FB2009_TRACE = TRACES / "FB-2009_samples_24_times_1hr_0.tsv"
FB2010_TRACE = TRACES / "FB-2010_withInputPaths_hours00-11.tsv"

# the paper's testbed (20 nodes x 2 slots), its slower-task variant, and a Facebook-size cluster
PAPER_CLUSTER = dict(nodes=20, slots_per_node=2, racks=2, replication=2, block_size_mb=64)
LONG_TASKS = dict(task_overhead_s=4.0, read_mbps_local=10.0, read_mbps_rack=5.0,
                  read_mbps_remote=2.5)
FB_CLUSTER = dict(nodes=600, slots_per_node=8, racks=20, replication=3, block_size_mb=128)
PAPER_WORKLOAD = dict(source="fb2009-bins", jobs=100, inter_arrival_s=14.0, hot_fraction=0.1,
                      dataset_gb=100.0)

# Hadoop 1.0.4 as the DSBRA paper ran it: TaskTrackers heartbeat every 3 s, 2 map slots per
# node, HFS waits in seconds, the JobTracker hands a free slot to a task (no containers, no
# ApplicationMaster); the per-map overhead is the bundled cluster's node-local intercept
# (3.1 s: the least-squares line benchmarks/fit_task_model.py fitted to the recorded maps before
# issue 66; the one fit, dsbra/sim/calibration.py, puts their overhead at 5.1 s,
# benchmarks/results/task-model-fit.json), kept so paper-h1's results stay comparable; reads at
# the default rates
HADOOP1 = dict(heartbeat_s=3.0, task_overhead_s=3.1, binding="task")
# Facebook-era maps: the delay scheduling paper's median map of 19 s (seed 001, section 2).
# A full 128 MB block costs 0.02 s/MB x 128 + 128 / 40 MB/s = 5.8 s at the default rates, so
# the rest of the median is a fixed per-map cost (JVM start, the map function itself).
FB_MAPS = dict(task_overhead_s=13.0)

SETUPS: dict[str, dict] = {
    "paper": {"cluster": PAPER_CLUSTER, "workload": PAPER_WORKLOAD,
              "seeds": 5, "keep_tasks": True},
    "paper-long-tasks": {"cluster": {**PAPER_CLUSTER, **LONG_TASKS}, "workload": PAPER_WORKLOAD,
                         "seeds": 5, "keep_tasks": False},
    "hotspot-stress": {
        "cluster": {**PAPER_CLUSTER, **LONG_TASKS},
        "workload": dict(source="fb2009-bins", jobs=300, inter_arrival_s=3.0,
                         hot_fraction=0.003, hot_share=0.8, dataset_gb=100.0, bin_scale=0.03),
        "seeds": 5, "keep_tasks": False,
    },
    # the hot-spot stress setup of issue 9's headroom table: maps of 15 s overhead plus a slow
    # remote read (the oracle gains 17% there)
    "hotspot-stress-long": {
        "cluster": {**PAPER_CLUSTER, "task_overhead_s": 15.0, "read_mbps_local": 10.0,
                    "read_mbps_rack": 5.0, "read_mbps_remote": 2.5},
        "workload": dict(source="fb2009-bins", jobs=300, inter_arrival_s=3.0,
                         hot_fraction=0.003, hot_share=0.8, dataset_gb=100.0, bin_scale=0.03),
        "seeds": 5, "keep_tasks": False,
    },
    "bundled": {
        "cluster": dict(nodes=4, slots_per_node=2, racks=2, replication=2, block_size_mb=8,
                        task_overhead_s=3.0, read_mbps_local=50.0, read_mbps_rack=50.0,
                        read_mbps_remote=50.0, copy_mbps=50.0,
                        am_heartbeat_s=BUNDLED_AM_HEARTBEAT_S),
        "workload": {**PAPER_WORKLOAD, "dataset_gb": 1.6},
        "seeds": 5, "keep_tasks": True,
    },
    "fb2009-day": {
        "cluster": FB_CLUSTER,
        "workload": dict(source=f"swim:{FB2009_TRACE}", hot_fraction=0.1, dataset_gb=100.0),
        "seeds": 1, "keep_tasks": False,
    },
    "fb2010": {
        "cluster": FB_CLUSTER,
        "workload": dict(source=f"swim:{FB2010_TRACE}"),
        "seeds": 1, "keep_tasks": False,
    },
    # calibrated setups (docs/simulator.md, "Calibrated task model")
    "paper-h1": {"cluster": {**PAPER_CLUSTER, **HADOOP1}, "workload": PAPER_WORKLOAD,
                 "seeds": 5, "keep_tasks": True},
    "fb2009-day-calibrated": {
        "cluster": {**FB_CLUSTER, **FB_MAPS},
        "workload": dict(source=f"swim:{FB2009_TRACE}", hot_fraction=0.1, dataset_gb=100.0),
        "seeds": 1, "keep_tasks": False,
    },
    "fb2010-calibrated": {
        "cluster": {**FB_CLUSTER, **FB_MAPS},
        "workload": dict(source=f"swim:{FB2010_TRACE}"),
        "seeds": 1, "keep_tasks": False,
    },
}


def setup(name: str) -> dict:
    """The named setup; a one-line error naming the known ones otherwise."""
    if name not in SETUPS:
        raise InputError(f"unknown setup {name!r}; known: {', '.join(SETUPS)}")
    return SETUPS[name]


def spark_binding(cluster: dict, app: str) -> dict:
    """The setup's cluster run by Spark instead of MapReduce: its task model unchanged, so the
    two bindings differ only in who binds a free slot to a task. Each slot is a one-core
    executor (spark.executor.cores' default on YARN, 1); spark.locality.wait 3 s, Spark's
    default. ``shared``: one application holding an executor on every slot of the cluster (a
    Thrift server sized to it), a Fair pool per job. ``per-job``: an application per job with
    dynamic allocation from 0 executors, unbounded (Spark's defaults), as batch pipelines run.
    The fields to merge over the setup's cluster."""
    one_of("spark-app", app, SPARK_APPS)
    slots = cluster.get("nodes", SimConfig.nodes) * cluster.get("slots_per_node",
                                                                SimConfig.slots_per_node)
    settings = (SparkSettings(app="shared", executors=slots) if app == "shared"
                else SparkSettings(app="per-job", executors=0, dynamic=True))
    return {"binding": "spark", "spark": settings}
