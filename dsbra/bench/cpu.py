"""What one map-only GrepScan job costs the machine in CPU, by process, on the bundled cluster:
the integration tests' jobs are these, and the suite is CPU-bound on 2 cores, so a job's cost
is what a test's replay costs (benchmarks/job_cpu_by_process.py; benchmarks/results/ci-durations.md)."""

from __future__ import annotations

import time

from dsbra.bench.grepjar import MAIN_CLASS, cluster_grep_jar
from dsbra.cluster import cluster as cl
from dsbra.cluster import state as st
from dsbra.cluster.jobs import grep_lines, submit_job
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.processes import CpuAccount

#: the Hadoop daemons' and JVMs' main classes, shortened for the table
SHORT = {"org.apache.hadoop.mapred.YarnChild": "map (YarnChild)",
         "org.apache.hadoop.mapreduce.v2.app.MRAppMaster": "ApplicationMaster",
         "org.apache.hadoop.util.RunJar": "job client (RunJar)"}
#: the job's own JVMs, whose exit ends its account
JOB_CLASSES = ("org.apache.hadoop.mapred.YarnChild", "org.apache.hadoop.mapreduce.v2.app.MRAppMaster")


def job_cpu(layout: StateLayout, maps: int, *, lines: int = 100, sample_s: float = 0.3,
            timeout_s: float = 600) -> dict[str, list[float]]:
    """Run one GrepScan job over ``maps`` one-block files of ``lines`` grep lines each, with
    /proc sampled every ``sample_s`` from its submission until its client, ApplicationMaster and
    maps have exited; the CPU seconds every Java process used over that time, by main class
    (shortened by SHORT)."""
    data = st.load(layout.state_file)
    client = cl.hdfs_client(cl.env(layout)["namenode"])
    root = f"/bench-cpu/{time.time_ns()}"
    inputs = [f"{root}/in/part-{i}" for i in range(maps)]
    for i, path in enumerate(inputs):
        client.write(path, grep_lines(lines, seed=i))
    jar = cluster_grep_jar(data)
    account = CpuAccount()
    account.sample()
    try:
        run = submit_job([MAIN_CLASS, ",".join(inputs), f"{root}/out"], jar=jar, state_dir=layout.root)
        deadline = time.monotonic() + timeout_s
        while run.poll() is None and time.monotonic() < deadline:
            time.sleep(sample_s)
            account.sample()
        run.wait(timeout=max(1.0, deadline - time.monotonic()))
        # the job's ApplicationMaster and last maps exit after its client does
        while any(account.alive(main) for main in JOB_CLASSES) and time.monotonic() < deadline:
            time.sleep(sample_s)
            account.sample()
    finally:
        client.delete(root, recursive=True)
    return {SHORT.get(main, main.rsplit(".", 1)[-1]): cpu for main, cpu in account.by_class().items()}
