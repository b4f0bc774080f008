"""The reproduction benchmark's arms on the bundled real cluster, repeated (issue 11 item 5).

One schedule, one data set, several arms, each run ``--reps`` times:

- ``static``: replication 2, delay scheduling on (D = 10 s, time-based);
- ``static-nodelay``: replication 2, delay scheduling off;

(with ``--scheduler capacity`` the cluster runs the Capacity Scheduler instead: delay on is
``--node-locality-delay`` missed opportunities, Hadoop's 40 by default, capped by the 4 nodes;
off is -1 for the node delay and 0 for the additional rack delay, so no off-switch wait either);
- ``dsbra``: the daemon (`dsbra run --apply`) beside the jobs, with the ``adaptive`` profile
  (the default until 2026-12-02, which every committed ``dsbra`` run ran);
- ``calibrated``, ``paper-literal``: the daemon with those named profiles;
- ``dsbra-hold``: the daemon with ``adaptive-hold``, the default from 2026-12-02 to 2026-12-07
  (a hot block on at most 3/4 of the workers, every worker the ceiling otherwise; an extra
  replica held 3 rounds without heat);
- ``dsbra-hold-idle0`` (``--engine spark``): the same with ``spark.min_idle_s: 0``: a Spark task
  counts as delayed when a core elsewhere was free for any time while it waited, not for half
  a second (docs/spark.md: in a busy shared application a declined core goes to another job's
  task at once, so it is never idle for long);
- ``dsbra-popular``: the daemon with ``adaptive-popular``, the default since 2026-12-07:
  ``adaptive-hold`` raising only blocks read at least twice as often as the window's average
  read block (docs/spark.md, "Cold files");
- ``scarlett``, ``dare``: the daemon running those baselines instead of DSBRA (`policy.name`;
  dsbra/policy/baselines.py), on the same observed signals;
- ``dsbra-holdout``: the daemon with ``experiment.holdout: 0.5`` (half of the files it decides
  to raise held out), its ``experiment.seed`` the repetition's number, so each run draws the
  groups anew: `dsbra impact OUT/dsbra-holdout*/rep*` (the dir takes --max-am-share's suffix)
  reads the runs together, a file of each run a draw of its own (a schedule's hot files are
  few, and one draw of them is few units);
- ``dsbra-dry-run``: the daemon deciding every round and changing nothing: its own cost on the
  machine (polling, rounds) without its copies';
- ``dsbra-fast-poll-dry-run``: the same with the fast poll on (``demand.enabled``, every 3 s,
  docs/daemon.md "The fast poll"): what acting when demand arrives costs the machine (issue
  68's target: the daemon's own CPU at most 1% of the two cores);
- ``oracle``: every data file on every worker before the run (the physical limit);
- ``static-per-job``: ``static`` with a waiting client JVM per job (`bench replay --clients
  per-job`, how result sets before 2026-11-25 ran) instead of the one submitter JVM every
  other arm uses: what the submitter changes, side by side (issue 26);
- ``static-uber``, ``static-am256``, ``static-am-jvm-default``: ``static`` with one
  ApplicationMaster start-up setting changed in every job's conf (`bench replay --job-conf`,
  see ``arm_job_conf``), to measure what each does (issue 26): uber mode (a job of one
  block-sized file runs its map inside its AM, no map container), a 256 MB AM (-Xmx166m, so
  twice as many AMs fit the queues' maxAMShare), and the AM JVM without the bundled cluster's
  start-up options (-XX:+UseSerialGC -XX:TieredStopAtLevel=1, so the JVM's own defaults);
- ``static-wait10`` (``--engine spark``): ``static`` with spark.locality.wait 10 s instead of
  Spark's 3 s (`bench replay --spark-conf`): the simulator predicted it would keep the shared
  application's tasks node-local on the shaped links where replicas do not; docs/benchmark.md
  6.20 measured it;
- ``static-am-hb100``: ``static`` with the ApplicationMaster heartbeating every 100 ms instead
  of the cluster's 500 (issue 42: in the simulator the shorter heartbeat nearly removes the maps
  handed on; with ``--record-grants`` this arm measures it on the cluster).

Before every run the data set is put back at its base replication (or, for the oracle, on every
worker) and the script waits until the NameNode reports exactly that many live replicas per
block, so no arm inherits another's copies. The delay-on arms run repetition by repetition
(rep 1 of every arm, then rep 2...), so a change of machine load falls on every arm alike, and
each repetition's order is the last one's rotated by one, so no arm always runs first (result
sets up to docs/benchmark.md 6.6 ran in a fixed order, static first: ``--fixed-order``); the
delay-off arm needs the ResourceManager restarted with other settings and runs last. A run
whose ``summary.json`` exists is kept, so an interrupted matrix resumes. At the end,
``dsbra report`` writes OUT/report/.

    python benchmarks/run_bench_matrix.py --out benchmarks/results/bench-fb2009-20 --jobs 20 --slots 8
    python benchmarks/run_bench_matrix.py --out benchmarks/results/bench-fb2009-40-loaded --jobs 40 \
        --slots 20 --inter-arrival-s 3 --arms static dsbra oracle static-nodelay
    python benchmarks/run_bench_matrix.py --out benchmarks/results/bench-fb2009-20-capacity --jobs 20 \
        --slots 8 --scheduler capacity --arms static static-nodelay
    python benchmarks/run_bench_matrix.py --out benchmarks/results/bench-hotspot-amshare0.75 \
        --schedule benchmarks/results/hotspot-choice-amshare0.75/1g-20jobs-gap6s-share0.5/schedule.json \
        --max-am-share 0.75 --arms static dsbra scarlett oracle --reps 3

``--engine hive`` runs every job as the Hive grep query through the cluster's HiveServer2
(`bench replay --engine hive`, the paper's benchmark) on a cluster with YARN's shared cache, so
hive-exec is not shipped with every query (bench_hive_shared_cache.py measures what that saves).

``--engine spark`` runs every job as a Spark grep job (`bench replay --engine spark`, issue 69)
on a cluster up with ``--spark``, the way ``--spark-mode`` says: ``shared``, one long-running
application with its executors held (``--executors``, two one-core executors a worker less the
ApplicationMaster's place by default), each job in a Fair pool of its own; or ``per-job``, an
application per job with dynamic allocation. The daemon arms read Spark through its Spark
collector (the config's ``spark:`` section, the History Server and the NameNode's audit log).

    python benchmarks/run_bench_matrix.py --out benchmarks/results/bench-spark-hotspot \
        --schedule benchmarks/results/spark-choice/schedule-60jobs-gap2s-share0.9.json \
        --engine spark --spark-mode shared --arms static oracle dsbra-hold-idle0 --reps 3

``--record-grants`` records, beside each run, the locality level at which the Fair Scheduler
granted every container of its jobs and the map attempt each went to (RUN/grants.json,
container_grants.py: why a map ran off its data).

``--max-am-share 0.5 0.75`` runs every arm once per share within each repetition, as arms of
their own (``static-amshare0.5``, ``static-amshare0.75``): the queues' maxAMShare is changed the
way an operator changes it, by rewriting fair-scheduler.xml, which the Fair Scheduler reloads
without a restart (issue 26: does a larger AM share shorten the first-map wait?).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from dsbra.bench import grants
from dsbra.bench.sitting import (BLOCK, JOB_CONF_ARMS, LAYOUT, SIZE, SPARK_CONF_ARMS, WORKERS, arm_job_conf,
                                 arm_order, claims_arm, cluster_up, daemon_config, data_seed, dsbra, set_data_replication, set_max_am_share,
                                 wait_for_quiet)
from dsbra.cluster import cluster as cl
from dsbra.hadoop.hdfs import HdfsActor
from dsbra.observe.collector import Endpoints
from dsbra.observe.hadoop_conf import read_site
from dsbra.policy.profiles import PRE_HOLD_PROFILE

#: arm -> the daemon's config sections beyond the cluster's (policy, experiment); ``dsbra`` and
#: its holdout and dry run name the profile every committed sitting of theirs ran (the default
#: until 2026-12-02), ``dsbra-hold`` the default since
_ADAPTIVE = {"profile": PRE_HOLD_PROFILE}
DAEMON_ARMS = {"dsbra": {"policy": _ADAPTIVE}, "calibrated": {"policy": {"profile": "calibrated"}},
               "paper-literal": {"policy": {"profile": "paper-literal"}},
               "scarlett": {"policy": {"name": "scarlett"}}, "dare": {"policy": {"name": "dare"}},
               "dsbra-holdout": {"policy": _ADAPTIVE, "experiment": {"holdout": 0.5}},
               "dsbra-dry-run": {"policy": _ADAPTIVE, "mode": "dry-run"},
               "dsbra-fast-poll-dry-run": {"policy": _ADAPTIVE, "mode": "dry-run",
                                           "demand": {"enabled": True, "poll_s": 3}},
               "dsbra-hold": {"policy": {"profile": "adaptive-hold"}},
               "dsbra-hold-idle0": {"policy": {"profile": "adaptive-hold"}, "spark": {"min_idle_s": 0.0}},
               "dsbra-popular": {"policy": {"profile": "adaptive-popular"}}}
ARMS = ["static", "dsbra", "dsbra-hold", "dsbra-hold-idle0", "dsbra-popular", "oracle", "calibrated", "paper-literal", "scarlett", "dare",
        "dsbra-holdout", "dsbra-dry-run", "dsbra-fast-poll-dry-run", "static-per-job",
        *JOB_CONF_ARMS, *SPARK_CONF_ARMS, "static-nodelay"]
#: the directory of --warm-up's run, which no report reads
WARM_UP = "warm-up"


def arm_name(arm: str, max_am_share: float | None) -> str:
    """The arm's directory: ``<arm>``, or ``<arm>-amshare<x>`` at a maxAMShare of its own."""
    return arm if max_am_share is None else f"{arm}-amshare{max_am_share:g}"


def run_arm(arm: str, rep: int, out: Path, schedule: Path, interval_s: float,
            scheduler: str = "fair", node_delay: int = 40, max_load: float = 1.0,
            max_am_share: float | None = None, engine: str = "mapreduce",
            name: str | None = None, record_grants: bool = False, spark_mode: str = "shared",
            executors: int | None = None) -> None:
    name = name or arm_name(arm, max_am_share)
    run_dir = out / name / f"rep{rep}"
    if (run_dir / "summary.json").exists():
        print(f"{name} rep{rep}: done before, kept", flush=True)
        return
    cluster_up(delay=arm != "static-nodelay", seed=data_seed(schedule),
               scheduler=scheduler, node_delay=node_delay, shared_cache=engine == "hive",
               spark=engine == "spark")
    if scheduler == "fair":
        set_max_am_share(max_am_share)
    env = cl.env(LAYOUT)
    actor = HdfsActor(cl.hdfs_client(env["namenode"]))
    data = json.loads(schedule.read_text())["dataset"]
    paths = [f"{data['path']}/{name}" for name in actor.client.list(data["path"])
             if name.startswith("part-")]
    n = WORKERS if arm == "oracle" else data["replication"]
    took = set_data_replication(actor, paths, n)
    print(f"{name} rep{rep}: {len(paths)} files at {n} live replicas ({took:.0f} s)", flush=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    args = ["bench", "replay", str(schedule), "--out", str(run_dir), "--label", f"{name}-rep{rep}-{int(time.time())}"]
    if arm == "static-per-job":
        args += ["--clients", "per-job"]
    if arm in JOB_CONF_ARMS:
        for key, value in arm_job_conf(arm, read_site(LAYOUT.conf("client") / "mapred-site.xml")).items():
            args += ["--job-conf", f"{key}={value}"]
    if engine == "hive":
        args += ["--engine", "hive", "--job-timeout-s", "900"]
    if engine == "spark":
        args += ["--engine", "spark", "--spark-mode", spark_mode]
        args += ["--executors", str(executors)] if executors else []
        for key, value in SPARK_CONF_ARMS.get(arm, {}).items():
            args += ["--spark-conf", f"{key}={value}"]
    if arm in DAEMON_ARMS:
        sections = DAEMON_ARMS[arm]
        if "experiment" in sections:
            sections = sections | {"experiment": sections["experiment"] | {"seed": rep}}
        args += ["--daemon-config", str(daemon_config(run_dir, env, sections, interval_s))]
    if record_grants:
        grants.debug_allocations(env["rm"])
    load_before = wait_for_quiet(max_load)
    t0 = time.monotonic()
    dsbra(*args)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    summary["load_avg_start"] = load_before
    summary["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    if max_am_share is not None:
        summary["max_am_share"] = max_am_share
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if record_grants:
        grants.record(run_dir, env, Endpoints.from_urls(env["rm"], env["namenode"], env["jhs"], user="root"))
    print(f"{name} rep{rep}: mean response {summary.get('mean_response_s')} s, "
          f"node locality {summary.get('node_locality')}, {summary['wall_s']} s wall", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--slots", default="20",
                    help="the schedule's --slots (job sizes scale to it), or 'auto': the map slots "
                         "the running ResourceManager reports")
    ap.add_argument("--inter-arrival-s", type=float, default=14.0, help="the schedule's mean gap between jobs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--first-rep", type=int, default=1,
                    help="number the repetitions from this one: the holdout arm's experiment.seed "
                         "is its repetition's number, so a sitting that continues another's "
                         "(`dsbra impact` over both) draws new groups rather than the same ones")
    ap.add_argument("--arms", nargs="+", default=ARMS, choices=ARMS)
    ap.add_argument("--fixed-order", action="store_true",
                    help="run the arms in the order given in every repetition (as result sets up to "
                         "docs/benchmark.md 6.6 did) rather than rotated by one each repetition")
    ap.add_argument("--max-load", type=float, default=1.0,
                    help="a run starts only once the 1-minute load average is below this (waits up "
                         "to 10 min, then stops); recorded in summary.json as load_avg_start")
    ap.add_argument("--interval-s", type=float, default=30.0, help="the daemon arms' round length")
    ap.add_argument("--scheduler", choices=("fair", "capacity"), default="fair",
                    help="the cluster's scheduler (capacity: delay on is --node-locality-delay)")
    ap.add_argument("--node-locality-delay", type=int, default=40,
                    help="with --scheduler capacity: missed opportunities, capped by the nodes")
    ap.add_argument("--schedule", type=Path, default=None,
                    help="replay this schedule.json (for instance the one choose_hotspot_schedule.py "
                         "chose; its data set must be SIZE/BLOCK's) instead of making one from "
                         "--jobs/--slots/--inter-arrival-s")
    ap.add_argument("--max-am-share", type=float, nargs="+", default=None,
                    help="run every arm at each of these Fair Scheduler maxAMShare values (arms "
                         "<arm>-amshare<x>), set by rewriting fair-scheduler.xml")
    ap.add_argument("--engine", choices=("mapreduce", "hive", "spark"), default="mapreduce",
                    help="each job a map-only MapReduce grep, the Hive grep query through the "
                         "cluster's HiveServer2 (the cluster then runs YARN's shared cache), or a "
                         "Spark grep job (the cluster then runs Spark; --spark-mode)")
    ap.add_argument("--spark-mode", choices=("shared", "per-job"), default="shared",
                    help="--engine spark: one long-running application for the schedule, its "
                         "executors held, or an application per job with dynamic allocation")
    ap.add_argument("--executors", type=int, default=None,
                    help="--engine spark: the shared application's executors, or each per-job "
                         "application's most (bench replay's default when not given)")
    ap.add_argument("--warm-up", action="store_true",
                    help="one run of the first arm before repetition 1, in OUT/warm-up, read by no "
                         "report (the first run after the data set is written was a sitting's "
                         "slowest)")
    ap.add_argument("--record-grants", action="store_true",
                    help="record the level at which the Fair Scheduler granted each container and the map "
                         "it went to (RUN/grants.json; container_grants.py reads them)")
    ap.add_argument("--claims-arm", choices=[*DAEMON_ARMS, *SPARK_CONF_ARMS], default=None,
                    help="the arm the final `dsbra report`'s claims are about, a daemon's or one with Spark "
                         "properties of its own (default: dsbra where it ran, else dsbra-hold); one of --arms")
    a = ap.parse_args()
    if a.claims_arm is not None and a.claims_arm not in a.arms:
        ap.error(f"--claims-arm {a.claims_arm} is not among --arms")
    if a.reps < 1 or a.first_rep < 1:
        ap.error("--reps and --first-rep must be at least 1")
    if a.engine != "mapreduce" and {"static-per-job", *JOB_CONF_ARMS} & set(a.arms):
        ap.error(f"static-per-job and the AM start-up arms are the MapReduce engine's, not {a.engine}'s")
    if a.engine != "spark" and set(SPARK_CONF_ARMS) & set(a.arms):
        ap.error(f"{', '.join(SPARK_CONF_ARMS)}: Spark's arms, not {a.engine}'s")
    if a.engine == "spark" and a.record_grants:
        ap.error("--record-grants follows MapReduce's maps to their containers; Spark's tasks run in executors")
    if a.engine != "spark" and (a.spark_mode != "shared" or a.executors is not None):
        ap.error("--spark-mode and --executors are --engine spark's")
    if a.executors is not None and a.executors < 1:
        ap.error("--executors must be at least 1")
    if a.max_am_share and a.scheduler != "fair":
        ap.error("--max-am-share is the Fair Scheduler's")
    if a.record_grants and a.scheduler != "fair":
        ap.error("--record-grants reads the Fair Scheduler's allocation log")
    if a.max_am_share and not all(s == -1 or 0 < s <= 1 for s in a.max_am_share):
        ap.error("--max-am-share: each must be -1 (no limit) or within (0, 1]")
    a.out.mkdir(parents=True, exist_ok=True)
    schedule = a.out / "schedule.json"
    if a.schedule and not schedule.exists():
        schedule.write_text(a.schedule.read_text())
    sched = {"scheduler": a.scheduler, "node_delay": a.node_locality_delay}
    # a given schedule names its data set's seed, which need not be its own (`dsbra bench
    # schedule --seed 29` over data seed 0); a schedule made here uses --seed for both
    cluster_up(delay=a.arms != ["static-nodelay"], seed=data_seed(schedule) if schedule.exists() else a.seed,
               **sched, shared_cache=a.engine == "hive", spark=a.engine == "spark")
    sched |= {"max_load": a.max_load, "engine": a.engine, "record_grants": a.record_grants}
    if a.engine == "spark":
        sched |= {"spark_mode": a.spark_mode, "executors": a.executors}
    if not schedule.exists():
        dsbra("bench", "schedule", "--out", str(schedule), "--jobs", str(a.jobs), "--seed", str(a.seed),
              "--slots", str(a.slots), "--inter-arrival-s", str(a.inter_arrival_s),
              "--size", SIZE, "--block-size", BLOCK, "--data-seed", str(a.seed))
    delay_on = [arm for arm in a.arms if arm != "static-nodelay"]
    shares = a.max_am_share or [None]
    if a.warm_up:
        run_arm(delay_on[0], 1, a.out, schedule, a.interval_s, **sched, max_am_share=shares[0],
                name=WARM_UP)
    reps = range(a.first_rep, a.first_rep + a.reps)
    for rep in reps:
        for arm in delay_on if a.fixed_order else arm_order(delay_on, rep):
            for share in shares:
                run_arm(arm, rep, a.out, schedule, a.interval_s, **sched, max_am_share=share)
    if "static-nodelay" in a.arms:
        for rep in reps:
            for share in shares:
                run_arm("static-nodelay", rep, a.out, schedule, a.interval_s, **sched,
                        max_am_share=share)
    runs = [str(a.out / arm_name(arm, share)) for arm in ARMS for share in shares
            if (a.out / arm_name(arm, share)).is_dir()]
    ran = [arm for arm in ARMS if (a.out / arm_name(arm, shares[0])).is_dir()]
    arm = arm_name(claims_arm(ran, a.claims_arm), shares[0])
    dsbra("report", *runs, "--out", str(a.out / "report"), "--baseline", arm_name("static", shares[0]),
          "--arm", arm, "--oracle", arm_name("oracle", shares[0]))


if __name__ == "__main__":
    main()
