#!/usr/bin/env python3
"""Which replica does HDFS drop when the daemon lowers a file's replication, against DSBRA's
wish (drop the replica on the hottest node)?

    .venv/bin/python benchmarks/measure_lowering.py [--state-dir DIR --prefix P --subnet S
        --port-offset N] [--hot 4] [--jobs 6] [--window 45] [--keep]
        [--placement default|heat --reps N]

SETREPLICATION lets the NameNode choose the replica to delete (BlockPlacementPolicyDefault:
not by heat); published work (WBRD, HaRD, Ciritoglu et al.) found that choice unbalances data
and heat. On the bundled cluster (its own, 4 workers, time-based delay scheduling D = 10 s),
this script
1. writes ``--hot`` hot and 4 cold one-block files at replication 1;
2. runs grep jobs reading every hot file four times (and one cold file) while the daemon
   (`dsbra run --apply`, a real process) raises the hot files; the heat of each DataNode is
   its BlocksRead counter (DataNode JMX) over that window;
3. stops the daemon once the copies are made: blocks per DataNode and heat *before*;
4. restarts the daemon with short quiet windows: it lowers each raised file one replica per
   round; every second the block locations are read, so each replica HDFS dropped is seen,
   with the heat rank of its node among the block's holders (0 = the hottest, DSBRA's wish);
5. blocks per DataNode *after*, and (unless --no-after-replay) the same jobs again without
   the daemon, for the heat per DataNode after the cool-down.
Results: benchmarks/results/lowering.json and lowering.md.

``--placement heat|default`` (issue 24) runs the NameNode with dsbra's placement plugin
(placement/) or HDFS's default, ``--reps`` repetitions on one cluster (fresh files and daemon
state each), and also judges every add and drop by dsbra's own heat, read from the heat
document the daemon published at that moment: a drop is on the hottest holder, an add on the
least heated non-holders. Prints and writes lowering-<p>.json (in ``--out``,
benchmarks/results/placement/ by default) with ``{"dropped", "dropped_on_hottest", "added",
"added_on_least_heated", "heat_max_over_mean_after"}`` per repetition and summed, and each
drop judged among the holders HDFS's rack rule lets a deletion take (the plugin keeps that
rule; ``dropped_on_hottest_rack_rule``, and ``dropped_where_heat_differs`` with its hits: a
tie is the hottest whatever is dropped); with the plugin also its own DEBUG line for every
deletion (by heat, or HDFS's default and why). ``--rejudge FILE...`` scores committed results
files again by the rack rule, without a cluster (docs/placement.md, "Measured again").
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import yaml

from dsbra.act.journal import Journal
from dsbra.bench.placement_log import log_plugin_at_debug, plugin_deletions
from dsbra.cluster import cluster as cl
from dsbra.cluster.jobs import grep_lines, submit_spaced
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from dsbra.daemon.config import bundled_cluster_section
from dsbra.hadoop.rest import Jmx
from dsbra.observe.collector import Endpoints
from dsbra.policy.profiles import PRE_HOLD_PROFILE

ROOT = Path(__file__).resolve().parents[1]
DIR = "/lowering"
COLD = 4


def datanode_reads(env: dict) -> dict[str, int]:
    """BlocksRead of every DataNode (its JMX), by worker address."""
    out = {}
    for w in env["workers"]:
        beans = Jmx(w["datanode"]).beans("Hadoop:service=DataNode,name=DataNodeActivity-*")
        out[w["host"]] = int(sum(b.get("BlocksRead", 0) for b in beans))
    return out


def holders(ep, path: str) -> list[str]:
    """The DataNodes holding the (one) block of ``path`` now."""
    blocks = ep.hdfs.block_locations(path)["locatedBlocks"]
    return sorted(loc["ipAddr"] for loc in blocks[0]["locations"])


def blocks_per_node(env: dict, ep, paths: list[str]) -> dict:
    """Replicas per DataNode: of the measured files, and of the whole file system (NameNode)."""
    data = {w["host"]: 0 for w in env["workers"]}
    for p in paths:
        for h in holders(ep, p):
            data[h] += 1
    info = Jmx(env["namenode"]).bean("Hadoop:service=NameNode,name=NameNodeInfo")
    every = {v["xferaddr"].split(":")[0]: int(v["numBlocks"])
             for v in json.loads(info["LiveNodes"]).values()}
    return {"measured_files": data, "all_blocks": every}


def read_heat(path: Path) -> tuple[dict[str, float], int | None]:
    """The per-DataNode heat of the daemon's last heat document and its round ({} and None
    before the first)."""
    try:
        doc = json.loads(path.read_text())
        return doc["nodes"], doc.get("round")
    except (OSError, ValueError, KeyError):
        return {}, None


class Watcher:
    """Block holders of the hot files, read every second; each add and drop judged by the heat
    the daemon published when it was seen (dsbra's heat), each drop also by BlocksRead."""

    def __init__(self, ep, hot: list[str], heat_file: Path):
        self.ep, self.hot, self.heat_file = ep, hot, heat_file
        self.now = {p: holders(ep, p) for p in hot}
        self.adds: list[dict] = []
        self.drops: list[dict] = []
        self.live = sorted({h for hs in self.now.values() for h in hs})

    def poll(self, reads_heat: dict | None = None) -> None:
        heat, round_ = read_heat(self.heat_file)
        for p in self.hot:
            h = holders(self.ep, p)
            before = self.now[p]
            added = sorted(set(h) - set(before))
            gone = sorted(set(before) - set(h))
            non_holders = [n for n in heat if n not in before]
            for node in added:
                self.adds.append({
                    "file": p, "holders": before, "added": node,
                    "heat": {n: heat.get(n) for n in sorted(set(non_holders) | {node})},
                    # 0 = among the least heated non-holders (one add per step: the least)
                    "rank": (sum(heat[n] < heat[node] for n in non_holders) - (len(added) - 1))
                    if node in heat else None})
            for node in gone:
                d = {"file": p, "holders": before, "dropped": node, "heat_round": round_,
                     "dsbra_heat": {x: heat.get(x) for x in before},
                     "dsbra_rank": rank(node, before, heat) if all(x in heat for x in before)
                     else None}
                if reads_heat is not None:
                    d.update(heat={x: reads_heat[x] for x in before},
                             rank=rank(node, before, reads_heat),
                             hottest=max(before, key=lambda x: (reads_heat[x], x)))
                self.drops.append(d)
            self.now[p] = h


def replay(layout, hot: list[str], cold: list[str], jobs: int, label: str) -> None:
    args = [["grep", ",".join(hot * 4 + [cold[i % len(cold)]]),
             f"{DIR}/out-{label}-{i}-{time.time_ns()}", "XYZ"] for i in range(jobs)]
    runs = submit_spaced(args, 3.0, lambda runs: None, state_dir=layout.root)
    for r in runs:
        r.wait(timeout=900, check=True)


def start_daemon(config: Path, log: Path) -> subprocess.Popen:
    with open(log, "a") as fh:
        return subprocess.Popen([sys.executable, "-m", "dsbra", "run", "--config", str(config),
                                 "--apply"], stdout=subprocess.DEVNULL, stderr=fh)


def stop_daemon(proc: subprocess.Popen, log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=600)
    if rc != 0:
        raise SystemExit(f"the daemon exited with status {rc} on SIGTERM; see {log}")


def journal_settled(state_dir: Path) -> bool:
    """No change of the daemon's journal still waits for the NameNode."""
    return not Journal.open(state_dir / "journal.jsonl").pending()


def rank(node: str, among: list[str], heat: dict[str, int]) -> int:
    """0 = the hottest of ``among`` (ties: the same rank as the hottest of equal heat)."""
    return sum(heat[h] > heat[node] for h in among)


def rack_rule_allows(holders: list[str], rack_of: dict[str, str]) -> list[str]:
    """The holders a deletion may take under HDFS's rack rule (BlockPlacementPolicyDefault's
    pickupReplicaSet, which the plugin keeps): those on a rack holding more than one replica,
    if any, else all; so a block never loses its last replica on a rack by a deletion."""
    per_rack = Counter(rack_of[h] for h in holders)
    shared = [h for h in holders if per_rack[rack_of[h]] > 1]
    return shared or list(holders)


def judge_drops(drops: list[dict], rack_of: dict[str, str]) -> dict:
    """Drops judged by dsbra's heat among the holders the rack rule allows: on the hottest of
    those, and the same over the drops where their heat differs (a tie is the hottest by any
    choice, so only these tell a heat-aware choice from another)."""
    judged = [d for d in drops if d["dsbra_rank"] is not None]
    hit = differs = differs_hit = outside = 0
    for d in judged:
        allowed = rack_rule_allows(d["holders"], rack_of)
        heat = d["dsbra_heat"]
        if d["dropped"] not in allowed:
            outside += 1
            continue
        on_hottest = rank(d["dropped"], allowed, heat) == 0
        hit += on_hottest
        if len({heat[h] for h in allowed}) > 1:
            differs += 1
            differs_hit += on_hottest
    return {"dropped": len(judged), "dropped_on_hottest_rack_rule": hit,
            "dropped_outside_rack_rule": outside, "dropped_where_heat_differs": differs,
            "dropped_on_hottest_where_heat_differs": differs_hit}


def bundled_racks(subnet: str) -> dict[str, str]:
    """The rack of each of measure()'s four workers on ``subnet``, for files written before
    the racks were recorded."""
    return {w.host: w.rack for w in ClusterSpec(workers=4, subnet=subnet).worker_list}


def rejudge(paths: list[str], subnet: str) -> None:
    """Each placement results file judged again by the rack rule, printed per repetition and
    summed."""
    for path in paths:
        doc = json.loads(Path(path).read_text())
        per = [judge_drops(r["drops"], r.get("racks") or bundled_racks(subnet))
               for r in doc["repetitions"]]
        total = {k: sum(p[k] for p in per) for k in per[0]}
        print(json.dumps({"file": path, "placement": doc["placement"], "total": total,
                          "per_repetition": per}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state-dir", default=str(ROOT / ".dsbra" / "measure-lowering"))
    ap.add_argument("--prefix", default="dsbrl")
    ap.add_argument("--subnet", default="10.82.0.0/24")
    ap.add_argument("--port-offset", type=int, default=4500)
    ap.add_argument("--hot", type=int, default=4, help="hot one-block files")
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--window", type=int, default=45, help="daemon window while jobs run, s")
    ap.add_argument("--hot-factor", type=float, default=1.2,
                    help="policy.params.hot_factor: the default 2 (2x the window's mean delay "
                         "pressure) hardly flags several equally hot files read with few cold "
                         "ones")
    ap.add_argument("--min-pressure", type=float, default=0.4,
                    help="policy.params.min_pressure (default profile: 0.3 delayed-map equivalents; a loaded "
                         "machine runs few maps per window)")
    ap.add_argument("--placement", choices=("default", "heat"), default=None,
                    help="the NameNode's block placement (dsbra cluster up --placement); "
                         "results then go to benchmarks/results/placement/")
    ap.add_argument("--reps", type=int, default=1, help="repetitions on one cluster")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "placement"),
                    help="where --placement's lowering-<placement>.json goes")
    ap.add_argument("--lead-s", type=float, default=3.0,
                    help="placement.lead_s of the daemon with --placement heat (the plugin "
                         "reads the heat every second)")
    ap.add_argument("--rejudge", nargs="+", metavar="FILE",
                    help="judge placement results files again by the rack rule (no cluster)")
    ap.add_argument("--no-after-replay", action="store_true")
    ap.add_argument("--keep", action="store_true", help="leave the cluster up")
    args = ap.parse_args()
    if args.rejudge:
        rejudge(args.rejudge, args.subnet)
        return

    spec = ClusterSpec(workers=4, replication=1, prefix=args.prefix, subnet=args.subnet,
                       port_offset=args.port_offset, continuous_scheduling=True,
                       locality_delay_node_ms=10_000, locality_delay_rack_ms=10_000,
                       block_placement=args.placement or "default")
    layout = StateLayout(Path(args.state_dir).resolve())
    cl.up(spec, layout, timeout=400, log=lambda m: print(m, file=sys.stderr))
    results = []
    out = ROOT / "benchmarks" / "results"
    try:
        for rep in range(args.reps):
            print(f"repetition {rep + 1} of {args.reps}: load {os.getloadavg()[0]:.2f}",
                  file=sys.stderr)
            results.append(measure(args, layout, rep))
            if args.placement is not None:  # each repetition kept as it ends
                write_placement(Path(args.out), args.placement, results)
    finally:
        if not args.keep:
            cl.down(layout)
    if args.placement is None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "lowering.json").write_text(json.dumps(results[0], indent=1) + "\n")
        (out / "lowering.md").write_text(markdown(results[0]))
        print(markdown(results[0]))
        return
    print(json.dumps(placement_summary(results), indent=1))


def write_placement(out: Path, placement: str, results: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    doc = {"placement": placement, "command": results[0]["command"],
           "summary": placement_summary(results), "repetitions": results}
    (out / f"lowering-{placement}.json").write_text(json.dumps(doc, indent=1) + "\n")


def placement_summary(results: list[dict]) -> dict:
    """The issue's figures, summed over repetitions, and each repetition's."""
    per = [r["placement_summary"] for r in results]
    total = {k: sum(p[k] for p in per) for k in (
        "dropped", "dropped_on_hottest", "added", "added_on_least_heated",
        "dropped_on_hottest_rack_rule", "dropped_outside_rack_rule", "dropped_where_heat_differs",
        "dropped_on_hottest_where_heat_differs")}
    spreads = [p["heat_max_over_mean_after"] for p in per if p["heat_max_over_mean_after"]]
    return {**total, "heat_max_over_mean_after": round(sum(spreads) / len(spreads), 3)
            if spreads else None,
            "heat_max_over_mean_after_each": spreads, "per_repetition": per}


def measure(args, layout, rep: int = 0) -> dict:
    env = cl.env(layout)
    client = cl.hdfs_client(env["namenode"])
    ep = Endpoints.from_urls(env["rm"], env["namenode"], env["jhs"], user="root")
    base_dir = f"{DIR}/r{rep}"
    client.delete(DIR, recursive=True)
    hot = [f"{base_dir}/in/hot-{i}" for i in range(args.hot)]
    cold = [f"{base_dir}/in/cold-{i}" for i in range(COLD)]
    for i, path in enumerate(hot + cold):
        client.write(path, grep_lines(3000, seed=i), overwrite=True, replication=1)
    state_dir = layout.root / f"lowering-daemon-{rep}"
    subprocess.run(["rm", "-rf", str(state_dir)], check=True)
    state_dir.mkdir(parents=True)
    heat_file = Path(env["heat_file"])
    heat_file.unlink(missing_ok=True)
    base_cfg = {"poll_s": 3, "state_dir": str(state_dir), "http": {"enabled": False},
                "rails": {"max_files_per_round": 50, "max_replicas_per_round": 200},
                "policy": {"profile": PRE_HOLD_PROFILE,  # as lowering.json measured it
                           "params": {"hot_factor": args.hot_factor,
                                      "min_pressure": args.min_pressure}},
                "placement": {"heat_file": str(heat_file),
                              "lead_s": args.lead_s if args.placement == "heat" else 0.0},
                "cluster": bundled_cluster_section(env)}
    log = state_dir / "daemon.log"
    hot_cfg = state_dir / "hot.yaml"
    hot_cfg.write_text(yaml.safe_dump({**base_cfg, "interval_s": args.window}))
    initial = {p: holders(ep, p) for p in hot}
    watch = Watcher(ep, hot, heat_file)
    # with the plugin, its own line for each deletion (by heat, or HDFS's default and why)
    namenode_log = Path(env["logs"]["namenode"])
    log_offset = namenode_log.stat().st_size
    if args.placement == "heat":
        log_plugin_at_debug(env["namenode"])

    reads0 = datanode_reads(env)
    proc = start_daemon(hot_cfg, log)
    try:
        jobs = threading.Thread(target=replay, args=(layout, hot, cold, args.jobs, "hot"))
        jobs.start()
        while jobs.is_alive():
            watch.poll()
            time.sleep(1)
        jobs.join()
        deadline = time.monotonic() + 3 * args.window
        while time.monotonic() < deadline and not any(
                client.status(p)["replication"] > 1 for p in hot):
            watch.poll()
            time.sleep(1)
        # the copies made (the journal's changes done), then no more decisions
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not journal_settled(state_dir):
            watch.poll()
            time.sleep(1)
    finally:
        stop_daemon(proc, log)
    watch.poll()
    reads1 = datanode_reads(env)
    heat = {h: reads1[h] - reads0[h] for h in reads0}
    raised = {p: client.status(p)["replication"] for p in hot}
    before = {"replication": raised, "holders": {p: holders(ep, p) for p in hot},
              "blocks_per_node": blocks_per_node(env, ep, hot + cold)}

    # cool-down: quiet short windows; watch every drop HDFS makes
    cool_cfg = state_dir / "cool.yaml"
    cool_cfg.write_text(yaml.safe_dump({**base_cfg, "interval_s": 5, "poll_s": 1}))
    proc = start_daemon(cool_cfg, log)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            watch.poll(reads_heat=heat)
            if all(len(watch.now[p]) <= 1 for p in hot) and journal_settled(state_dir):
                break
            time.sleep(1)
    finally:
        stop_daemon(proc, log)
    drops = watch.drops
    with open(namenode_log, "rb") as fh:
        fh.seek(log_offset)
        deletions = plugin_deletions(fh.read().decode(errors="replace"))
    after = {"replication": {p: client.status(p)["replication"] for p in hot},
             "holders": {p: holders(ep, p) for p in hot},
             "blocks_per_node": blocks_per_node(env, ep, hot + cold)}
    # DSBRA's wish from the same raised state: drop the hottest holder until base
    wish = {}
    for p, hs in before["holders"].items():
        left = list(hs)
        while len(left) > 1:
            left.remove(max(left, key=lambda x: (heat[x], x)))
        wish[p] = left
    heat_after = None
    if not args.no_after_replay:
        r0 = datanode_reads(env)
        replay(layout, hot, cold, args.jobs, "after")
        r1 = datanode_reads(env)
        heat_after = {h: r1[h] - r0[h] for h in r0}

    n = len(drops)
    survivors = {p: after["holders"][p] for p in hot}
    judged = [d for d in drops if d["dsbra_rank"] is not None]
    racks = {w["host"]: w["rack"] for w in env["workers"]}
    adds = [a for a in watch.adds if a["rank"] is not None]
    return {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_1min": os.getloadavg()[0],
        "setup": {"workers": 4, "hot_files": args.hot, "cold_files": COLD, "jobs": args.jobs,
                  "hot_factor": args.hot_factor, "min_pressure": args.min_pressure,
                  "window_s": args.window, "cool_down_window_s": 5,
                  "delay_threshold_s": 10, "base_replication": 1,
                  "placement": args.placement or "default"},
        "racks": racks, "initial_holders": initial,
        "heat_before": heat, "heat_after": heat_after,
        "before": before, "after": after,
        "drops": drops, "adds": watch.adds, "plugin_deletions": deletions,
        "placement_summary": {
            "dropped": len(judged),
            "dropped_on_hottest": sum(d["dsbra_rank"] == 0 for d in judged),
            "added": len(adds),
            "added_on_least_heated": sum(a["rank"] <= 0 for a in adds),
            "heat_max_over_mean_after": round(max(heat_after.values()) / (
                sum(heat_after.values()) / len(heat_after)), 3)
            if heat_after and sum(heat_after.values()) else None,
            "dropped_on_hottest_by_blocks_read": sum(d.get("rank") == 0 for d in drops),
            **judge_drops(drops, racks),
            "plugin_deletions_by": {k: sum(d["by"] == k for d in deletions)
                                    for k in sorted({d["by"] for d in deletions})},
        },
        "summary": {
            "drops": n,
            "hottest_dropped": sum(d.get("rank") == 0 for d in drops),
            "hottest_dropped_share": round(sum(d.get("rank") == 0 for d in drops) / n, 3) if n
            else None,
            "random_choice_share": round(sum(
                sum(rank(h, d["holders"], heat) == 0 for h in d["holders"]) / len(d["holders"])
                for d in drops) / n, 3) if n else None,
            "mean_rank": round(sum(d.get("rank", 0) for d in drops) / n, 3) if n else None,
            "mean_heat_dropped_over_hottest": round(sum(
                d["heat"][d["dropped"]] / max(d["heat"][d["hottest"]], 1)
                for d in drops if "heat" in d) / n, 3) if n else None,
            "survivor_heat_hadoop": sum(heat[h] for hs in survivors.values() for h in hs),
            "survivor_heat_dsbra_wish": sum(heat[h] for hs in wish.values() for h in hs),
            "survivors_on_initial_holder": sum(survivors[p] == initial[p] for p in hot),
        },
        "dsbra_wish_survivors": wish,
        "command": "sudo .venv/bin/python benchmarks/measure_lowering.py " + " ".join(sys.argv[1:]),
    }


def markdown(r: dict) -> str:
    s = r["summary"]
    nodes = sorted(r["heat_before"])
    rows = ["| DataNode | heat before (blocks read) | measured-file replicas before | after | "
            "all blocks before | after | heat after |", "|---|---|---|---|---|---|---|"]
    for h in nodes:
        b, a = r["before"]["blocks_per_node"], r["after"]["blocks_per_node"]
        rows.append(f"| {h} | {r['heat_before'][h]} | {b['measured_files'][h]} | "
                    f"{a['measured_files'][h]} | {b['all_blocks'].get(h, '?')} | "
                    f"{a['all_blocks'].get(h, '?')} | "
                    f"{(r['heat_after'] or {}).get(h, '-')} |")
    lines = [
        "# Lowering replication: HDFS's choice of the replica to drop vs DSBRA's wish", "",
        f"`{r['command']}` ({r['when']})", "",
        f"{r['setup']['hot_files']} hot one-block files raised by the daemon, then lowered back "
        f"to base 1 in quiet {r['setup']['cool_down_window_s']} s rounds. Heat = BlocksRead of "
        "each DataNode over the hot window (JMX).", "",
        *rows, "",
        f"- replicas dropped by HDFS: {s['drops']}; on the hottest holder (DSBRA's wish): "
        f"{s['hottest_dropped']} ({s['hottest_dropped_share']}); a uniformly random choice would "
        f"hit it {s['random_choice_share']} of the time",
        f"- mean heat rank of the dropped replica's node among the holders (0 = hottest): "
        f"{s['mean_rank']}; its heat / the hottest holder's: {s['mean_heat_dropped_over_hottest']}",
        f"- heat of the nodes keeping the last replica: HDFS {s['survivor_heat_hadoop']}, DSBRA's "
        f"wish {s['survivor_heat_dsbra_wish']}; last replica back on the node that held it before "
        f"the raise: {s['survivors_on_initial_holder']} of {r['setup']['hot_files']}",
        "", "Drops:", "", "| file | holders (heat) | dropped | rank |", "|---|---|---|---|"]
    for d in r["drops"]:
        held = ", ".join(f"{h} ({d['heat'][h]})" for h in d["holders"])
        lines.append(f"| {d['file']} | {held} | {d['dropped']} | {d['rank']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
