"""A benchmark sitting on the bundled cluster (run_bench_matrix.py and the scripts that share its
cluster): the cluster brought up as the sittings run it (4 workers, links shaped to 40 Mbit/s,
replication 2, 64 MiB blocks, D = 10 s) with the data set in it, `dsbra` commands run
as a child process the way an operator types them, the arms' order and job settings, and the
wait for a quiet machine before a run."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

from dsbra.cluster import cluster as cl
from dsbra.cluster.confdir import DEFAULT_QUEUES, allocation_file
from dsbra.cluster.paths import StateLayout, default_state_dir
from dsbra.cluster.spec import ClusterSpec
from dsbra.daemon.config import bundled_cluster_section, bundled_spark_section
from dsbra.hadoop import locality
from dsbra.hadoop.hdfs import HdfsActor

WORKERS = 4
DELAY_MS = 10_000
NET_MBIT = 40.0
SIZE, BLOCK = "1g", "64m"  # the data set: 16 one-block files
LAYOUT = StateLayout(default_state_dir())
#: the AM start-up arms: static with one setting changed in every job's conf (arm_job_conf)
JOB_CONF_ARMS = ["static-uber", "static-am256", "static-am-jvm-default", "static-am-hb100"]
#: the Spark arms that are ``static`` with Spark properties of their own (`bench replay --spark-conf`):
#: ``static-wait10``, spark.locality.wait 10 s instead of Spark's 3 s (docs/benchmark.md 6.20)
SPARK_CONF_ARMS = {"static-wait10": {"spark.locality.wait": "10s"}}
#: the job property of the ApplicationMaster's heartbeat to the ResourceManager
AM_HEARTBEAT = "yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms"
#: the AM JVM options of the bundled cluster that static-am-jvm-default leaves out
AM_START_UP_OPTS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
AM_OPTS = "yarn.app.mapreduce.am.command-opts"


def dsbra(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`dsbra ARGS` in a child process, echoed first as an operator would type it (so a sitting's
    log reads as its commands); with ``check`` a failure raises."""
    print("$ dsbra " + " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", "dsbra", *args], check=check, text=True)


def cluster_cli(*args: str, state: Path) -> subprocess.CompletedProcess:
    """`dsbra cluster ARGS` on ``state``, a benchmark's own cluster (so one other people use stays
    untouched), its output captured; a failure ends the benchmark."""
    proc = subprocess.run([sys.executable, "-m", "dsbra", "cluster", *args, "--state-dir", str(state)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"dsbra cluster {args[0]} failed: {proc.stderr.strip()}")
    return proc


def arm_order(arms: list[str], rep: int) -> list[str]:
    """Repetition ``rep``'s arms, ``arms`` rotated by rep - 1: over len(arms) repetitions each arm
    runs in each place once, so what a place brings (the previous run's load, a cold cache) falls
    on no one arm."""
    k = (rep - 1) % len(arms)
    return arms[k:] + arms[:k]


def claims_arm(ran: list[str], chosen: str | None = None) -> str:
    """The arm a sitting's report makes its claims about: ``chosen``, else the adaptive arm
    where it ran (every committed MapReduce sitting), else the default profile's."""
    return chosen or next((arm for arm in ("dsbra", "dsbra-hold") if arm in ran), "dsbra")


def cluster_up(delay: bool, seed: int, scheduler: str = "fair",
               node_delay: int = locality.NODE_LOCALITY_DELAY,
               shared_cache: bool = False, spark: bool = False) -> None:
    """The cluster with delay scheduling on or off (and YARN's shared cache or not, Spark or
    not), restarted when it runs otherwise, and the data set in it (a restarted cluster's HDFS
    starts empty; `bench data` keeps what is there)."""
    if scheduler == "capacity":
        want = {"scheduler": "capacity", "node_locality_delay": node_delay if delay else -1,
                "rack_locality_additional_delay": -1 if delay else 0}
        flags = ["--scheduler", "capacity",
                 "--node-locality-delay", str(want["node_locality_delay"]),
                 "--rack-locality-additional-delay", str(want["rack_locality_additional_delay"])]
    else:
        ms = DELAY_MS if delay else -1
        want = {"scheduler": "fair", "locality_delay_node_ms": ms}
        flags = ["--continuous-scheduling", "--locality-delay-node-ms", str(ms),
                 "--locality-delay-rack-ms", str(ms)]
    want |= {"net_mbit": NET_MBIT, "workers": WORKERS, "shared_cache": shared_cache, "spark": spark}
    flags += ["--shared-cache"] if shared_cache else []
    flags += ["--spark"] if spark else []
    current = cl.status(LAYOUT)
    running = ClusterSpec.from_dict(current.data["spec"]) if current.state == "up" else None
    if running is None or any(getattr(running, k) != v for k, v in want.items()):
        if current.state != "down":
            dsbra("cluster", "down")
        dsbra("cluster", "up", "--workers", str(WORKERS), "--replication", "2", "--block-size", BLOCK,
              "--net-mbit", str(NET_MBIT), *flags, "--timeout", "400")
    dsbra("bench", "data", "--size", SIZE, "--block-size", BLOCK, "--data-seed", str(seed))


def data_seed(schedule: Path) -> int:
    """The seed of the data set the schedule's jobs read (`dsbra bench data --data-seed`)."""
    return int(json.loads(schedule.read_text())["dataset"]["seed"])


def arm_job_conf(arm: str, mapred_site: dict[str, str]) -> dict[str, str]:
    """The job properties ``arm`` sets over the cluster's ``mapred_site`` (its client's
    mapred-site.xml), everything else as the cluster has it; {} for arms that set none."""
    if arm == "static-uber":
        # the uber limits stay Hadoop's: at most 9 maps, and input at most one block (64 MB), so
        # only the jobs of one file run uber
        return {"mapreduce.job.ubertask.enable": "true"}
    if arm == "static-am256":
        mb = 256
        return {"yarn.app.mapreduce.am.resource.mb": str(mb),
                AM_OPTS: re.sub(r"-Xmx\d+m", f"-Xmx{int(mb * 0.65)}m", mapred_site[AM_OPTS])}
    if arm == "static-am-jvm-default":
        return {AM_OPTS: " ".join(o for o in mapred_site[AM_OPTS].split() if o not in AM_START_UP_OPTS)}
    if arm == "static-am-hb100":  # the AM reads its allocator's heartbeat from the job's conf
        return {AM_HEARTBEAT: "100"}
    return {}


def wait_for_quiet(max_load: float, timeout_s: float = 600) -> list[float]:
    """Block until the 1-minute load average is below max_load (the idle cluster's own daemons
    stay well under 1 on this machine), and return the load averages then; refuse to start a
    run on a machine something else is using (issue 26: measure on a quiet machine only)."""
    t0 = time.monotonic()
    while (load := os.getloadavg())[0] >= max_load:
        if time.monotonic() - t0 > timeout_s:
            raise SystemExit(f"load {load[0]:.2f} still >= {max_load} after {timeout_s:.0f} s: "
                             "something else is running; stop it and rerun (done runs are kept)")
        time.sleep(10)
    return [round(x, 2) for x in load]


def set_data_replication(actor: HdfsActor, paths: list[str], n: int, timeout_s: float = 900) -> float:
    """Every file at replication n, and the NameNode reporting n live replicas of each block;
    the seconds it took."""
    t0 = time.monotonic()
    for p in paths:
        if actor.replication(p) != n:
            actor.set_replication(p, n)
    while True:
        off = [p for p in paths if any(r != n for r in actor.live_replicas(p))]
        if not off:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout_s:
            raise SystemExit(f"{len(off)} files still not at {n} live replicas after {timeout_s:.0f} s")
        time.sleep(5)


def set_max_am_share(share: float | None, timeout_s: float = 90) -> None:
    """The Fair Scheduler queues' maxAMShare (None: the cluster's own), by rewriting its
    fair-scheduler.xml; waits until the ResourceManager logs that it loaded the new file (it
    looks every 10 s, once the file is 5 s old)."""
    data = cl.status(LAYOUT).data
    spec = ClusterSpec.from_dict(data["spec"])
    if share is not None:
        spec = dataclasses.replace(spec, queues=[dict(q, max_am_share=share)
                                                 for q in (spec.queues or DEFAULT_QUEUES)])
    path = LAYOUT.conf("master") / "fair-scheduler.xml"
    text = allocation_file(spec)
    if path.read_text() == text:
        return
    log = Path(data["daemons"]["resourcemanager"]["log"])
    loads = log.read_text(errors="replace").count("Loading allocation file")
    path.write_text(text)
    deadline = time.monotonic() + timeout_s
    while log.read_text(errors="replace").count("Loading allocation file") == loads:
        if time.monotonic() > deadline:
            raise SystemExit(f"the ResourceManager did not reload {path} within {timeout_s:.0f} s")
        time.sleep(2)
    print(f"maxAMShare {share if share is not None else 'as the cluster was started'}: "
          f"{path} reloaded", flush=True)


def daemon_config(run_dir: Path, env: dict, sections: dict, interval_s: float) -> Path:
    cfg = {"mode": "apply", "interval_s": interval_s, "poll_s": 3,
           "state_dir": str(run_dir / "daemon-state"),
           "cluster": bundled_cluster_section(env), "spark": bundled_spark_section(env),
           "http": {"enabled": False}}
    for key, section in sections.items():  # an arm's section adds to the cluster's
        cfg[key] = cfg[key] | section if isinstance(cfg.get(key), dict) else section
    path = run_dir / "daemon.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path
