#!/usr/bin/env python3
"""Validate the delay attribution of ``dsbra observe`` on a real cluster.

    .venv/bin/python benchmarks/validate_attribution.py --tag busy --mode off
    .venv/bin/python benchmarks/validate_attribution.py --tag busy --mode on
    .venv/bin/python benchmarks/validate_attribution.py --recompute  # re-attribute recorded runs
    .venv/bin/python benchmarks/validate_attribution.py --report     # table of every run

Each run brings up its *own* bundled cluster (state dir ``.dsbra/validate``, bridge ``dsv0``,
subnet 10.93.0.0/24, master ports +300; the main cluster is not touched). By default it uses
continuous scheduling, whose delay is time-based: "on" sets the Fair Scheduler's node and rack
delays to ``--delay-ms``, "off" to -1 (no delay scheduling); ``--scheduling heartbeat`` uses the
counted thresholds (1.0 / -1) instead. Workload: 3 hot one-block files (replication 1) read by
every job, 24 cold one-block files (replication 2), ``--jobs`` grep jobs each reading the 3
hot files and 3 cold ones drawn with a fixed seed, submitted ``--gap-s`` apart. A
``Collector`` polls while they run. Everything it gathered (map observations, every job's
containers, the RM's free-memory samples, nodes, block locations) is written to
``benchmarks/results/validate_attribution-<tag>-<mode>.raw.json.gz``; the summary
(``...-<tag>-<mode>.json``) attributes that record with the current rule and the "on" D in
both modes, so the two runs are measured with the same ruler, and ``--recompute`` redoes it
without a cluster. Expected: M and DT near zero with delay scheduling off; with it on they
rise and concentrate on the hot blocks.

Capacity Scheduler (issue 22)::

    .venv/bin/python benchmarks/validate_attribution.py --scheduler capacity --mode on \
        --ground-truth --tag cs-busy          # node-locality-delay 4 (--node-locality-delay N)
    .venv/bin/python benchmarks/validate_attribution.py --scheduler capacity --mode off \
        --ground-truth --tag cs-busy          # node-locality-delay -1

brings the validation cluster up with ``dsbra cluster up --scheduler capacity
--node-locality-delay N`` ("on": N, default 4 = the workers, so ``min(nodes, N)`` does not cut
it; "off": -1; heartbeat scheduling, no asynchronous or multi-node placement, as
conf-templates/capacity-scheduler.xml.j2 sets). D for both modes is the "on" run's
``min(nodes, N) x heartbeat``. ``--report`` prints these runs in their own tables. Ground truth
(Hadoop 3.4.2, read with ``javap -c -p`` on hadoop-yarn-server-resourcemanager-3.4.2.jar):

* The Capacity Scheduler logs *no* line when an application skips a node for locality.
  ``RegularContainerAllocator.assignContainersOnNode`` tries NODE_LOCAL (only when the node
  has a local ask), RACK_LOCAL and OFF_SWITCH in turn; ``assignNodeLocalContainers`` and
  ``assignRackLocalContainers`` return ``ContainerAllocation.LOCALITY_SKIPPED`` silently when
  ``canAssign`` refuses (rack-local: missed opportunities must exceed ``min(nodes,
  node-locality-delay)``), and ``assignOffSwitchContainers`` returns ``APP_SKIPPED`` after
  ``FiCaSchedulerApp.updateAppSkipNodeDiagnostics("Skipping assigning to Node as request
  locality is not matching.")`` (the AM-launch diagnostics) and
  ``ActivitiesLogger.APP.recordSkippedAppActivityWithoutAllocation(..., "Node skipped because
  of off-switch delay")`` (off-switch: missed > ``min(nodes, outstanding asks x locality wait
  factor)`` with rack-locality-additional-delay -1). ``tryAllocateOnNode`` counts the
  opportunity (``addSchedulingOpportunity``) before; a NODE_LOCAL allocation resets it
  (``doAllocation``, DEBUG "Resetting scheduling opportunities"). So the declines are read from
  what is missing in three DEBUG loggers raised through ``/logLevel?log=<class>&level=DEBUG``
  (``capacity_log``): ``...scheduler.capacity.CapacityScheduler`` ("Trying to schedule on node:
  <host>, available: <memory:M, vCores:V>", ``allocateContainerOnSingleNode``, once per node
  heartbeat), ``...scheduler.capacity.AbstractLeafQueue`` ("post-assignContainers for
  application <app id>", ``assignContainers``, after each application in the queue's FIFO
  order was offered the node) and ``...capacity.allocator.RegularContainerAllocator``
  ("assignContainers: node=<host> application=<app id> priority=<p> pendingAsk=<...>
  type=NODE_LOCAL|RACK_LOCAL|OFF_SWITCH", ``assignContainer``, only when ``canAssign`` let it
  take the node at that level; "Skip app_attempt=<attempt id>, because it doesn't need more
  resource", ``assignContainers``). An offer that ends with neither line for that application
  is a decline; its room is the heartbeat's available memory less one container per try
  before it in the heartbeat. The lines carry the application id and the host, not the
  locality level (there is none: every level was refused) nor the priority.
* The activities REST API records the same skip directly. ``GET
  /ws/v1/cluster/scheduler/app-activities/{appid}?actions=refresh,get&maxTime=S`` (the
  ``refresh`` calls ``ActivitiesManager.turnOnAppActivitiesRecording(app, S)``, default 3 s;
  ``get`` returns the allocation attempts kept, at most
  ``yarn.resourcemanager.activities-manager.app-activities.max-queue-length`` (100, raised with
  many nodes) per application, for ``app-activities.ttl-ms`` (600000); ``groupBy=diagnostic``,
  ``summarize``, ``limit``, ``requestPriorities``, ``allocationRequestIds`` filter; an ended
  application answers "fail to get application activities after finished"). An attempt has
  ``nodeId``, ``timestamp``, ``allocationState`` and children request -> node, whose
  ``diagnostic`` for a locality skip is ActivityDiagnosticConstant
  ``NODE_SKIPPED_BECAUSE_OF_OFF_SWITCH_DELAY`` = "Node skipped because of off-switch delay"
  (the node-local and rack-local skips record nothing in 3.4.2). Other constants an
  application can show there: "Node skipped because relax locality is not allowed", "Node
  skipped because node/rack locality cannot be satisfied", "Node does not have sufficient
  resource for request", "Request does not need more resource", "Queue skipped to respect FIFO
  of applications". ``/ws/v1/cluster/scheduler/activities`` (``nodeId``, ``groupBy``) records
  only the next node heartbeat after each call (``recordNextNodeUpdateActivities``), too sparse
  for a run. ``AppActivities`` polls every running application at each collector poll
  (``maxTime`` 10 s, longer than the poll interval, so the recording never lapses) and the raw
  record keeps every attempt once (``cs_activities``), so the two truths can be compared
  (``truths_agree`` in the summary).

``score_against_capacity`` scores the rule against each truth as the Fair Scheduler's runs
are scored (precision, recall, and nothing flagged with delay scheduling off). Limits: the log
truth is read from an absence, so a silent skip of another kind (every request key
PRIORITY_SKIPPED while the application still has asks) reads as a decline; with
rack-locality-additional-delay -1, node-locality-delay -1 turns off the rack-local wait only,
and an application whose rack ask is spent still waits ``min(nodes, outstanding asks x
locality wait factor)`` opportunities for off-switch (``canAssign(OFF_SWITCH)``); the
activities cover an application only from the poll that first saw it (the poll interval, 2 s,
later under load), so the two truths differ at the start of each application.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from dsbra.bench.attribution_scoring import CAPACITY_FROZEN, HELD_OUT, attribute_record
from dsbra.bench.ground_truth import (AppActivities, capacity_log, debug_capacity_scheduler,
                                      scheduler_log, trace_scheduler)
from dsbra.cluster.jobs import grep_lines, submit_spaced
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.window import LAUNCH_ALLOWANCE_S, read_files

ROOT = Path(__file__).resolve().parents[1]
STATE_DIR = ROOT / ".dsbra" / "validate"
CLUSTER = ["--prefix", "dsv", "--subnet", "10.93.0.0/24", "--port-offset", "300"]
RESULTS = ROOT / "benchmarks" / "results"
DSBRA = [sys.executable, "-m", "dsbra"]


def sh(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True)
    if check and proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc


def cluster_down() -> None:
    """Our own validation cluster only; a second try finishes a partly failed tear-down."""
    if sh(DSBRA + ["cluster", "down", "--state-dir", str(STATE_DIR)], check=False).returncode:
        sh(DSBRA + ["cluster", "down", "--state-dir", str(STATE_DIR)])


def cluster_up(mode: str, scheduling: str, delay_ms: int, scheduler: str = "fair",
               node_delay: int = 4) -> dict:
    """"on": delay scheduling with D = delay_ms (time-based, continuous scheduling) or threshold
    1.0 (heartbeat-counted); "off": the same scheduling with delay scheduling off (-1). With
    ``scheduler="capacity"``: the Capacity Scheduler, node-locality-delay ``node_delay`` ("on")
    or -1 with an additional rack delay of 0 ("off")."""
    status = sh(DSBRA + ["cluster", "status", "--json", "--state-dir", str(STATE_DIR)], check=False)
    if status.returncode == 0 and '"down"' not in status.stdout:
        cluster_down()
    if scheduler == "capacity":
        # off: no rack-local wait (-1) and no off-switch one either (an additional rack delay of
        # 0; at -1 the off-switch wait would fall back to the locality wait factor)
        delay = ["--scheduler", "capacity", "--node-locality-delay",
                 str(node_delay if mode == "on" else -1), "--rack-locality-additional-delay",
                 "-1" if mode == "on" else "0"]
    elif scheduling == "continuous":
        ms = str(delay_ms if mode == "on" else -1)
        delay = ["--continuous-scheduling", "--locality-delay-node-ms", ms,
                 "--locality-delay-rack-ms", ms, "--locality-delay-node", "-1",
                 "--locality-delay-rack", "-1"]
    else:
        threshold = "1.0" if mode == "on" else "-1"
        delay = ["--locality-delay-node", threshold, "--locality-delay-rack", threshold]
    sh(DSBRA + ["cluster", "up", "--state-dir", str(STATE_DIR), *CLUSTER, *delay])
    return json.loads(sh(DSBRA + ["cluster", "env", "--json", "--state-dir", str(STATE_DIR)]).stdout)


def make_data(nn_url: str, hot: int, cold: int, lines: int) -> tuple[list[str], list[str]]:
    from hdfs import InsecureClient

    client = InsecureClient(nn_url, user="root")
    client.delete("/validate", recursive=True)
    client.makedirs("/validate")
    hot_paths = [f"/validate/hot-{i}" for i in range(hot)]
    cold_paths = [f"/validate/cold-{i}" for i in range(cold)]
    for i, p in enumerate(hot_paths):
        client.write(p, grep_lines(lines, i, match_rate=0.0), replication=1)
    for i, p in enumerate(cold_paths):
        client.write(p, grep_lines(lines, 100 + i, match_rate=0.0), replication=2)
    return hot_paths, cold_paths


def run(mode: str, scheduling: str, delay_ms: int, jobs: int, gap_s: float, lines: int,
        keep: bool, tag: str, ground_truth: bool, scheduler: str = "fair",
        node_delay: int = 4) -> dict:
    capacity = scheduler == "capacity"
    env = cluster_up(mode, scheduling, delay_ms, scheduler, node_delay)
    activities = AppActivities(env["rm"]) if capacity and ground_truth else None
    if ground_truth:
        (debug_capacity_scheduler if capacity else trace_scheduler)(env["rm"])
    hot, cold = make_data(env["namenode"], 3, 24, lines)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    start_ms = int(time.time() * 1000)
    collector = Collector(ep, since_ms=start_ms,
                          node_locality_delay=(node_delay if mode == "on" else -1)
                          if capacity else None)
    settings = collector.settings()
    # the "on" D for both modes, so that the two runs are measured with the same ruler
    if capacity:  # min(nodes, node-locality-delay) missed opportunities, one per heartbeat
        cap = min(settings.nodes, node_delay) * settings.heartbeat_s
    else:
        cap = (delay_ms / 1000 if scheduling == "continuous"
               else settings.nodes * settings.heartbeat_s)
    rnd = random.Random(7)
    args = [["grep", ",".join(hot + rnd.sample(cold, 3)), f"/validate/out-{i}", "XYZ"]
            for i in range(jobs)]
    polls = 0

    def tick(_runs) -> None:
        nonlocal polls
        collector.poll()
        if activities is not None:
            activities.poll()
        polls += 1

    runs = submit_spaced(args, gap_s, tick, state_dir=STATE_DIR)
    results = [r.wait(timeout=60, check=False) for r in runs]
    polls += collector.poll_until_read([j for r in results for j in r.job_ids], timeout_s=120)
    obs = collector.take()
    end_ms = int(time.time() * 1000)
    settings = collector.settings(refresh=True)
    files = read_files(ep, [o.path for o in obs if o.path])
    raw = {"tag": tag, "mode": mode, "scheduling": "heartbeat" if capacity else scheduling,
           "delay_ms": delay_ms, "jobs": jobs,
           "gap_s": gap_s, "D_cap_s": cap, "hot": hot,
           "round_trip_s": settings.heartbeat_s + collector.am_heartbeat_s + LAUNCH_ALLOWANCE_S,
           "window_ms": [start_ms, end_ms], "polls": polls, "http_requests": ep.stats.requests,
           "failed_jobs": sum(1 for r in results if not r.ok),
           "settings": asdict(settings), "rm_nodes": collector.nodes(refresh=True),
           "samples": collector.samples, "obs": [asdict(o) for o in obs],
           "containers": {j: [asdict(c) for c in cs] for j, cs in collector.containers.items()},
           # the Capacity Scheduler's locality skips as the Collector read them (the daemon's
           # path), and what each kind of request cost
           "skips": collector.skips, "http": asdict(ep.stats),
           "files": files}
    if capacity:
        raw |= {"scheduler": "capacity", "node_delay": node_delay if mode == "on" else -1}
    if ground_truth and capacity:
        with open(env["logs"]["resourcemanager"], errors="replace") as f:
            raw["cs_log"] = capacity_log(f, start_ms)
        raw["cs_activities"] = activities.as_json()
    elif ground_truth:
        raw |= scheduler_log(env["logs"]["resourcemanager"], start_ms)
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw_path = RESULTS / f"validate_attribution-{tag}-{mode}.raw.json.gz"
    with gzip.open(raw_path, "wt") as f:
        json.dump(raw, f, separators=(",", ":"))
    if not keep:
        cluster_down()
    return summarize(raw_path)


def summarize(raw_path: Path) -> dict:
    """Attribute a recorded run with the current rule (no cluster needed); write its summary."""
    summary, tasks = attribute_record(raw_path, with_tasks=True)
    out = RESULTS / raw_path.name.replace(".raw.json.gz", ".json")
    out.write_text(json.dumps({"summary": summary, "tasks": tasks}, indent=1) + "\n")
    print(json.dumps(summary))
    return summary


def _spread(values: list[float]) -> str:
    values = sorted(values)
    mid = values[len(values) // 2] if len(values) % 2 else \
        (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2
    return f"{mid:.3g} [{values[0]:.3g}, {values[-1]:.3g}]" if len(values) > 1 else f"{mid:.3g}"


def report() -> None:
    """Markdown: one row per run, then median [min, max] over the runs of each workload."""
    runs = [json.loads(p.read_text())["summary"]
            for p in sorted(RESULTS.glob("validate_attribution-*-o[nf]*.json"))]
    capacity = [r for r in runs if r.get("scheduler") == "capacity"]
    runs = [r for r in runs if r.get("scheduler") != "capacity"]
    _report_fair(runs)
    if capacity:
        _report_capacity(capacity)


def _report_fair(runs: list[dict]) -> None:
    print("| run | D (s) | delay scheduling | N | M hot / cold | M/N | DT (s) hot / cold "
          "| DT per block (s) hot / cold | non-local hot / cold | MR job span p50 / max (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        h, c, a = r["hot"], r["cold"], r["all"]
        print(f"| {r['tag']} | {r['D_cap_s']:g} | {r['mode']} | {a['N']} | {h['M']} / {c['M']} | "
              f"{a['M_over_N']} | {h['DT_s']} / {c['DT_s']} | {h['DT_per_block_s']} / "
              f"{c['DT_per_block_s']} | {h['nonlocal']} / {c['nonlocal']} | "
              f"{' / '.join(f'{x:.0f}' for x in r['mr_job_span_s_p50_max'])} |")
    print()
    print("| workload | D (s) | delay scheduling | runs | M/N | M/N hot | M/N cold "
          "| DT per hot block (s) | DT per cold block (s) | non-local maps |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        workload = re.sub(r"-?\d+$", "", r["tag"])  # busy1, busy2 -> busy; busyD6-1 -> busyD6
        groups.setdefault((workload, r["D_cap_s"], r["mode"]), []).append(r)
    for (workload, d, mode), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                          kv[0][2] != "off")):
        print(f"| {workload} | {d:g} | {mode} | {len(rs)} | "
              f"{_spread([r['all']['M_over_N'] for r in rs])} | "
              f"{_spread([r['hot']['M_over_N'] for r in rs])} | "
              f"{_spread([r['cold']['M_over_N'] for r in rs])} | "
              f"{_spread([r['hot']['DT_per_block_s'] for r in rs])} | "
              f"{_spread([r['cold']['DT_per_block_s'] for r in rs])} | "
              f"{_spread([r['all']['nonlocal'] for r in rs])} |")
    scored = [r for r in runs if "truth" in r]
    if scored:
        print()
        print("| run | delay scheduling | usable map declines | M true (hot / cold) | M rule | both "
              "| precision | recall | recall, waits > grace | DT true (s) | DT rule (s) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in scored:
            t = r["truth"]
            print(f"| {r['tag']} | {r['mode']} | {t['usable_map_declines']} | {t['M_true']} "
                  f"({t['M_true_hot']} / {t['M_true_cold']}) | {t['M_rule']} | {t['both']} | "
                  f"{_cell(t['precision'])} | {_cell(t['recall'])} | "
                  f"{_cell(t['recall_waits_over_grace'])} | {t['DT_true_s']} | {t['DT_rule_s']} |")
        print()
        print("| ground-truth runs | runs | M true | M rule | both | precision | recall "
              "| precision, off runs' flags counted |")
        print("|---|---|---|---|---|---|---|---|")
        for name, keep in (("designed on", lambda r: r["tag"] not in HELD_OUT),
                           ("held out (recorded after the rule was frozen)",
                            lambda r: r["tag"] in HELD_OUT)):
            rs = [r for r in scored if keep(r)]
            on = [r["truth"] for r in rs if r["mode"] == "on"]
            false_off = sum(r["truth"]["M_rule"] for r in rs if r["mode"] == "off")
            true, flagged, both = (sum(t[k] for t in on) for k in ("M_true", "M_rule", "both"))
            print(f"| {name} | {len(rs)} | {true} | {flagged} (+{false_off} off) | {both} | "
                  f"{_cell(round(both / flagged, 3) if flagged else None)} | "
                  f"{_cell(round(both / true, 3) if true else None)} | "
                  f"{_cell(round(both / (flagged + false_off), 3) if flagged + false_off else None)} |")


def _report_capacity(runs: list[dict]) -> None:
    """The Capacity Scheduler's runs, in their own tables: the counts, then the rule against
    its DEBUG log and against the app-activities API."""
    print()
    print("Capacity Scheduler runs (D = min(nodes, node-locality-delay) x heartbeat)")
    print()
    print("| run | node-locality-delay | D (s) | N | M hot / cold | M/N | DT (s) hot / cold "
          "| non-local hot / cold | MR job span p50 / max (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        h, c, a = r["hot"], r["cold"], r["all"]
        span = r["mr_job_span_s_p50_max"] or []
        print(f"| {r['tag']} {r['mode']} | {r['node_delay']} | {r['D_cap_s']:g} | {a['N']} | "
              f"{h['M']} / {c['M']} | {a['M_over_N']} | {h['DT_s']} / {c['DT_s']} | "
              f"{h['nonlocal']} / {c['nonlocal']} | {' / '.join(f'{x:.0f}' for x in span)} |")
    scored = [r for r in runs if "truth" in r]
    if not scored:
        return
    print()
    print("| run | truth | usable declines | M true (hot / cold) | M rule | both | precision "
          "| recall | recall, waits > grace | DT true (s) | DT rule (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in scored:
        for name, t, usable in (("log", r["truth"], r["truth"]["usable_map_declines"]),
                                ("activities", r["truth"]["activities"],
                                 r["truth"]["activities"]["usable_declines"])):
            print(f"| {r['tag']} {r['mode']} | {name} | {usable} | {t['M_true']} "
                  f"({t['M_true_hot']} / {t['M_true_cold']}) | {t['M_rule']} | {t['both']} | "
                  f"{_cell(t['precision'])} | {_cell(t['recall'])} | "
                  f"{_cell(t['recall_waits_over_grace'])} | {t['DT_true_s']} | {t['DT_rule_s']} |")
    print()
    print("| capacity ground-truth runs (log) | runs | M true | M rule | both | precision "
          "| recall | precision, off runs' flags counted "
          "| truths agree (both / log only / activities only) |")
    print("|---|---|---|---|---|---|---|---|---|")
    frozen = [r for r in scored if r["tag"] in CAPACITY_FROZEN]
    before = [r for r in scored if r["tag"] not in CAPACITY_FROZEN]
    for name, group in (("recorded before the rule was frozen", before),
                        ("recorded after (" + ", ".join(CAPACITY_FROZEN) + ")", frozen)):
        if not group:
            continue
        on = [r["truth"] for r in group if r["mode"] == "on"]
        false_off = sum(r["truth"]["M_rule"] for r in group if r["mode"] == "off")
        true, flagged, both = (sum(t[k] for t in on) for k in ("M_true", "M_rule", "both"))
        agree = [sum(r["truth"]["truths_agree"][k] for r in group)
                 for k in ("both", "log_only", "activities_only")]
        print(f"| {name} | {len(group)} | {true} | {flagged} (+{false_off} off) | {both} | "
              f"{_cell(round(both / flagged, 3) if flagged else None)} | "
              f"{_cell(round(both / true, 3) if true else None)} | "
              f"{_cell(round(both / (flagged + false_off), 3) if flagged + false_off else None)} | "
              f"{' / '.join(map(str, agree))} |")
    costs = [r["app_activities"] for r in runs if r.get("app_activities", {}).get("requests")]
    if costs:
        print()
        print("| app-activities reads by the Collector | runs | requests (of all) | seconds | "
              "KiB | skips read |")
        print("|---|---|---|---|---|---|")
        tot = {k: sum(c[k] for c in costs) for k in costs[0]}
        print(f"| all | {len(costs)} | {tot['requests']} ({tot['all_requests']}) | "
              f"{tot['seconds']:.2f} | {tot['bytes'] / 1024:.0f} | {tot['skips']} |")


def _cell(value) -> str:
    return "-" if value is None else str(value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mode", choices=["on", "off"])
    ap.add_argument("--scheduling", choices=["continuous", "heartbeat"], default="continuous",
                    help="time-based delay (continuous scheduling) or heartbeat-counted thresholds")
    ap.add_argument("--delay-ms", type=int, default=6000,
                    help="D with --scheduling continuous (node and rack delay), and the cap")
    ap.add_argument("--scheduler", choices=["fair", "capacity"], default="fair",
                    help="the Fair Scheduler (the rule's design) or the Capacity Scheduler")
    ap.add_argument("--node-locality-delay", type=int, default=4,
                    help="--scheduler capacity: yarn.scheduler.capacity.node-locality-delay with "
                         "--mode on (default: the bundled cluster's 4 workers, so the "
                         "min(nodes, delay) cap does not cut it); -1 with --mode off")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--gap-s", type=float, default=8.0)
    ap.add_argument("--lines", type=int, default=4000, help="grep lines per input file")
    ap.add_argument("--keep", action="store_true", help="leave the validation cluster up")
    ap.add_argument("--tag", default="busy", help="names the result files")
    ap.add_argument("--ground-truth", action="store_true",
                    help="also record every offer the Fair Scheduler declined (RM TRACE log) and "
                         "score the rule against it")
    ap.add_argument("--recompute", action="store_true",
                    help="re-attribute every recorded run (*.raw.json.gz) with the current rule")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    if args.recompute:
        for path in sorted(RESULTS.glob("validate_attribution-*.raw.json.gz")):
            summarize(path)
    if args.report:
        report()
    elif args.mode:
        run(args.mode, args.scheduling, args.delay_ms, args.jobs, args.gap_s, args.lines,
            args.keep, args.tag, args.ground_truth, args.scheduler, args.node_locality_delay)
    elif not args.recompute:
        ap.error("give --mode on|off, --recompute or --report")


if __name__ == "__main__":
    main()
