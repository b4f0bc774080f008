"""Concurrent MapReduce jobs with Hadoop's job defaults: does the cluster keep them moving?

The workload of issue 27, where the bundled cluster once stalled for five minutes: a hot
one-block file at replication 1 and six cold ones at replication 2, then ``jobs`` example
``grep`` jobs (a search job and a sort job each, both with a reduce phase) ``gap_s`` apart,
each reading the hot file and two cold ones, with no job setting of their own. The
ResourceManager's cluster metrics are sampled every second while they run.

A *stall* is the scheduler standing still with work waiting: applications running or
pending while the number of allocated containers and of finished applications does not
change. On a healthy cluster that lasts seconds (a JVM start); the deadlock of early reducers
lasts until MapReduce preempts a reducer unconditionally, 300 s by default
(``mapreduce.job.reducer.unconditional-preempt.delay.sec``).

    dsbra cluster load --jobs 12 --gap-s 3
"""

from __future__ import annotations

import time
from pathlib import Path

import requests

from dsbra.cluster import cluster as cl
from dsbra.cluster.jobs import grep_lines, submit_spaced
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ClusterError, HadoopError
from dsbra.hadoop import shapes
from dsbra.hadoop.rest import ResourceManager

LOAD_DIR = "/dsbra-load"
COLD_FILES = 6
LINES = 2000  #: a file of the Hive grep format, 0.2 MB: one block


def cluster_clients(spec: ClusterSpec, session: requests.Session) -> tuple:
    """The ResourceManager and an HdfsCLI client over every RM and NameNode of the cluster
    (both of an --ha one), through ``session``: each follows the active one."""
    return ResourceManager(list(spec.rm_urls.values()), session=session), cl.hdfs_client(spec.namenode_urls.values(), session)


def write_inputs(client) -> tuple[str, list[str]]:
    """The hot file (replication 1) and the cold ones (replication 2), one block each, written
    through the HdfsCLI ``client``."""
    from hdfs.util import HdfsError

    try:
        client.delete(LOAD_DIR, recursive=True)
        hot = f"{LOAD_DIR}/in/hot.txt"
        client.write(hot, data=grep_lines(LINES, seed=0), replication=1)
        cold = [f"{LOAD_DIR}/in/cold-{i}.txt" for i in range(COLD_FILES)]
        for i, path in enumerate(cold):
            client.write(path, data=grep_lines(LINES, seed=i + 1), replication=2)
    except HdfsError as exc:
        raise HadoopError(f"cannot write the load check's inputs under {LOAD_DIR}: {exc}") from None
    return hot, cold


def longest_stall_s(samples: list[dict]) -> float:
    """The longest span over which applications were running or pending while neither the
    allocated containers nor the finished applications changed."""
    longest, since, last = 0.0, None, None
    for s in samples:
        key = (s["containers"], s["finished_apps"])
        waiting = s["running_apps"] + s["pending_apps"] > 0
        if not waiting or key != last:
            since = s["t_s"] if waiting else None
        elif since is not None:
            longest = max(longest, s["t_s"] - since)
        last = key
    return round(longest, 1)


def run(layout: StateLayout, jobs: int = 12, gap_s: float = 3.0, conf: dict | None = None,
        timeout_s: float = 900.0, tick=None) -> dict:
    """Run the workload on the cluster of ``layout``; the summary ``dsbra cluster load`` prints.
    ``conf``: job settings (-D) to add to every job, none by default; ``tick(samples)`` is
    called after each sample (a progress bar)."""
    current = cl.status(layout)
    if current.state != "up":
        raise ClusterError(f"the cluster is not up ({current.state}); start it with: dsbra cluster up")
    spec = ClusterSpec.from_dict(current.data["spec"])
    with cl.web_session(spec, layout) as session:
        rm, client = cluster_clients(spec, session)
        hot, cold = write_inputs(client)
        return _run_jobs(layout, rm, hot, cold, jobs, gap_s, conf, timeout_s, tick)


def _run_jobs(layout: StateLayout, rm: ResourceManager, hot: str, cold: list[str], jobs: int, gap_s: float,
              conf: dict | None, timeout_s: float, tick) -> dict:
    args = [["grep", ",".join([hot, cold[i % COLD_FILES], cold[(i + 1) % COLD_FILES]]),
             f"{LOAD_DIR}/out-{i}", "XYZ"] for i in range(jobs)]
    before = rm.metrics()
    finished0 = sum(shapes.as_int(before.get(k), 0) or 0
                    for k in ("appsCompleted", "appsFailed", "appsKilled"))
    samples: list[dict] = []
    t0 = time.monotonic()

    def sample(runs) -> None:
        if time.monotonic() - t0 > timeout_s:
            for r in runs:
                r.kill()
            raise HadoopError(f"the load check's jobs did not finish in {timeout_s:.0f} s")
        try:
            m = rm.metrics()
        except HadoopError:
            return  # a missed sample; the next one counts
        num = lambda key: shapes.as_int(m.get(key), 0) or 0  # noqa: E731
        samples.append({
            "t_s": round(time.monotonic() - t0, 1), "containers": num("containersAllocated"),
            "allocated_mb": num("allocatedMB"), "pending_mb": num("pendingMB"),
            "running_apps": num("appsRunning"), "pending_apps": num("appsPending"),
            "finished_apps": sum(num(k) for k in ("appsCompleted", "appsFailed", "appsKilled"))
            - finished0})
        if tick:
            tick(samples)

    runs = submit_spaced(args, gap_s, sample, interval_s=1.0, conf=conf, state_dir=layout.root)
    results = [r.wait(check=False) for r in runs]
    busy = [s for s in samples if s["containers"]]
    sizes = sorted({s["allocated_mb"] // s["containers"] for s in busy
                    if s["allocated_mb"] % s["containers"] == 0})
    return {
        "jobs": jobs, "gap_s": gap_s, "job_conf": conf or {},
        "failed_jobs": sum(not r.ok for r in results),
        "seconds": round(max(r.finished for r in runs) - t0, 1),
        "peak_containers": max((s["containers"] for s in samples), default=0),
        "peak_pending_mb": max((s["pending_mb"] for s in samples), default=0),
        # every sample's allocated memory over its containers: one size when all are granted
        # at the configured (equal) sizes
        "container_mb": sizes,
        "uneven_samples": sum(s["allocated_mb"] % s["containers"] != 0 for s in busy),
        "longest_stall_s": longest_stall_s(samples),
        "samples": samples,
        "logs": [str(Path(r.log_path)) for r in runs],
    }
