"""A switchback of the daemon on the bundled real cluster, set beside the arms of the same
sitting (issue 45): does the switchback's estimate agree with static against dsbra?

One `dsbra run --apply` runs throughout, its experiment a switchback (``experiment.design:
switchback``, the default policy). Its periods start at its first round; the schedule is
replayed once at the start of every period (a replay that overruns its period starts the next
one late, recorded as that period's lag), so a block's two periods carry the same jobs at the
same offsets, as two arms' repetitions do, with one daemon whose off periods take its copies
back through its rails. At the end the daemon is stopped (SIGTERM) and `dsbra impact` reads its
state dir, as an operator would.

Run the arms first, into the same OUT (their schedule.json is the one replayed here):

    python benchmarks/run_bench_matrix.py --out OUT --schedule S --max-am-share 0.75 \\
        --arms static dsbra-hold --reps 2
    python benchmarks/bench_switchback.py --out OUT --max-am-share 0.75 --period-s 480 \\
        --burn-in-s 60 --blocks 4

Writes OUT/switchback[-amshare<x>]/: daemon.yaml, daemon.log, daemon-state/, period<k>/ (each
period's replay), impact.json and impact.txt (`dsbra impact`), sitting.json (each period's arm,
start lag and load); then OUT/switchback-vs-arms.json and .md (dsbra.bench.switchback_sitting).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from dsbra.bench.replay import daemon_command, stop_daemon
from dsbra.bench.sitting import (LAYOUT, cluster_up, daemon_config, data_seed, dsbra,
                                 set_data_replication, set_max_am_share, wait_for_quiet)
from dsbra.bench.switchback_sitting import compare, table
from dsbra.cluster import cluster as cl
from dsbra.experiment import switchback
from dsbra.experiment.assignment import recorded_switchbacks
from dsbra.hadoop.hdfs import HdfsActor


def wait_for_start(state: Path, daemon: subprocess.Popen, timeout_s: float = 300):
    """The switchback the daemon recorded at its first round."""
    deadline = time.monotonic() + timeout_s
    while not (state / "switchback.jsonl").exists() or not recorded_switchbacks(state):
        if daemon.poll() is not None:
            raise SystemExit(f"the daemon exited with {daemon.returncode} before its first round")
        if time.monotonic() > deadline:
            raise SystemExit(f"no switchback recorded in {state} within {timeout_s:.0f} s")
        time.sleep(1)
    return recorded_switchbacks(state)[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True,
                    help="the sitting's directory: its schedule.json and the arms run_bench_matrix.py ran")
    ap.add_argument("--period-s", type=float, default=480.0,
                    help="one period: the schedule's replay and its drain must fit it")
    ap.add_argument("--burn-in-s", type=float, default=60.0)
    ap.add_argument("--blocks", type=int, default=4, help="blocks of an on and an off period")
    ap.add_argument("--seed", type=int, default=0, help="experiment.seed: each block's order")
    ap.add_argument("--interval-s", type=float, default=30.0, help="the daemon's round")
    ap.add_argument("--max-am-share", type=float, default=None)
    ap.add_argument("--max-load", type=float, default=1.0)
    ap.add_argument("--arm", default="dsbra-hold", help="the arms' daemon arm to set it beside")
    a = ap.parse_args()
    schedule = a.out / "schedule.json"
    if not schedule.exists():
        ap.error(f"{schedule} does not exist: run the arms into {a.out} first")
    suffix = "" if a.max_am_share is None else f"-amshare{a.max_am_share:g}"
    run_dir = a.out / f"switchback{suffix}"
    if (run_dir / "impact.json").exists():
        print(f"{run_dir}: done before, kept", flush=True)
    else:
        run(a, schedule, run_dir)
    doc = compare(a.out, run_dir, baseline=f"static{suffix}", arm=f"{a.arm}{suffix}")
    (a.out / "switchback-vs-arms.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.out / "switchback-vs-arms.md").write_text(table(doc))
    print(table(doc))


def run(a, schedule: Path, run_dir: Path) -> None:
    if run_dir.exists() and any(run_dir.iterdir()):
        raise SystemExit(f"{run_dir} holds an unfinished switchback: move it away and rerun")
    cluster_up(delay=True, seed=data_seed(schedule))
    set_max_am_share(a.max_am_share)
    env = cl.env(LAYOUT)
    actor = HdfsActor(cl.hdfs_client(env["namenode"]))
    data = json.loads(schedule.read_text())["dataset"]
    paths = [f"{data['path']}/{n}" for n in actor.client.list(data["path"]) if n.startswith("part-")]
    set_data_replication(actor, paths, data["replication"])
    run_dir.mkdir(parents=True, exist_ok=True)
    experiment = {"design": "switchback", "period_s": a.period_s, "burn_in_s": a.burn_in_s,
                  "seed": a.seed}
    config = daemon_config(run_dir, env, {"experiment": experiment}, a.interval_s)
    state = run_dir / "daemon-state"
    load_before = wait_for_quiet(a.max_load)
    with (run_dir / "daemon.log").open("w") as log:
        daemon = subprocess.Popen(daemon_command(config), stdout=log, stderr=log, start_new_session=True)
    t0 = time.monotonic()
    sb = wait_for_start(state, daemon)
    periods = []
    try:
        for k in range(2 * a.blocks):
            start_ms = sb.start_ms + int(k * a.period_s * 1000)
            time.sleep(max(0.0, start_ms / 1000 - time.time()))
            lag_s = round(time.time() - start_ms / 1000, 1)
            arm = "on" if sb.is_on(k) else "off"
            print(f"period {k} ({arm}): replay starts {lag_s:+.1f} s after the period's start", flush=True)
            load = [round(x, 2) for x in os.getloadavg()]
            dsbra("bench", "replay", str(schedule), "--out", str(run_dir / f"period{k}"),
                  "--label", f"switchback-period{k}-{int(time.time())}")
            periods.append({"period": k, "arm": arm, "lag_s": lag_s, "load_avg_start": load,
                            "load_avg_end": [round(x, 2) for x in os.getloadavg()]})
        # the last period's jobs are recorded as they finish: let it end as the others did
        time.sleep(max(0.0, (sb.start_ms / 1000 + 2 * a.blocks * a.period_s) - time.time()))
    finally:
        cpu_s = stop_daemon(daemon)
    if daemon.returncode not in (0, None):
        raise SystemExit(f"the daemon exited with {daemon.returncode}; see {run_dir / 'daemon.log'}")
    sitting = {"period_s": a.period_s, "burn_in_s": a.burn_in_s, "seed": a.seed, "blocks": a.blocks,
               "start_ms": sb.start_ms, "wall_s": round(time.monotonic() - t0, 1),
               "daemon_cpu_s": cpu_s, "load_avg_start": load_before,
               "load_avg_end": [round(x, 2) for x in os.getloadavg()], "periods": periods}
    (run_dir / "sitting.json").write_text(json.dumps(sitting, indent=1) + "\n")
    out = subprocess.run([sys.executable, "-m", "dsbra", "impact", str(state), "--json"],
                         check=True, capture_output=True, text=True).stdout
    (run_dir / "impact.json").write_text(out)
    text = switchback.text(json.loads(out))  # as `dsbra impact` prints it, without reading again
    (run_dir / "impact.txt").write_text(text + "\n")
    print(text, flush=True)


if __name__ == "__main__":
    main()
