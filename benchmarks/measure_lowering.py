#!/usr/bin/env python3
"""Which replica does HDFS drop when the daemon lowers a file's replication, against DSBRA's
wish (drop the replica on the hottest node)?

    .venv/bin/python benchmarks/measure_lowering.py [--state-dir DIR --prefix P --subnet S
        --port-offset N] [--hot 4] [--jobs 6] [--window 45] [--keep]

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
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import requests
import yaml
from hdfs import InsecureClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsbra.act.journal import Journal  # noqa: E402
from dsbra.cluster import cluster as cl  # noqa: E402
from dsbra.cluster.jobs import grep_lines, submit_spaced  # noqa: E402
from dsbra.cluster.paths import StateLayout  # noqa: E402
from dsbra.cluster.spec import ClusterSpec  # noqa: E402
from dsbra.observe.collector import Endpoints  # noqa: E402

DIR = "/lowering"
COLD = 4


def datanode_reads(env: dict) -> dict[str, int]:
    """BlocksRead of every DataNode (its JMX), by worker address."""
    out = {}
    for w in env["workers"]:
        url = f"{w['datanode']}/jmx?qry=Hadoop:service=DataNode,name=DataNodeActivity-*"
        beans = requests.get(url, timeout=10).json()["beans"]
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
    info = requests.get(f"{env['namenode']}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo",
                        timeout=10).json()["beans"][0]
    every = {v["xferaddr"].split(":")[0]: int(v["numBlocks"])
             for v in json.loads(info["LiveNodes"]).values()}
    return {"measured_files": data, "all_blocks": every}


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
    if proc.wait(timeout=600) != 0:
        raise SystemExit(f"the daemon failed; see {log}")


def journal_settled(state_dir: Path) -> bool:
    """No change of the daemon's journal still waits for the NameNode."""
    return not Journal.open(state_dir / "journal.jsonl").pending()


def rank(node: str, among: list[str], heat: dict[str, int]) -> int:
    """0 = the hottest of ``among`` (ties: the same rank as the hottest of equal heat)."""
    return sum(heat[h] > heat[node] for h in among)


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
                    help="policy.params.min_pressure (default profile: 1 delayed map; a loaded "
                         "machine runs few maps per window)")
    ap.add_argument("--no-after-replay", action="store_true")
    ap.add_argument("--keep", action="store_true", help="leave the cluster up")
    args = ap.parse_args()

    spec = ClusterSpec(workers=4, replication=1, prefix=args.prefix, subnet=args.subnet,
                       port_offset=args.port_offset, continuous_scheduling=True,
                       locality_delay_node_ms=10_000, locality_delay_rack_ms=10_000)
    layout = StateLayout(Path(args.state_dir).resolve())
    cl.up(spec, layout, timeout=400, log=lambda m: print(m, file=sys.stderr))
    try:
        result = measure(args, layout)
    finally:
        if not args.keep:
            cl.down(layout)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "lowering.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "lowering.md").write_text(markdown(result))
    print(markdown(result))


def measure(args, layout) -> dict:
    env = cl.env(layout)
    client = InsecureClient(env["namenode"], user="root")
    ep = Endpoints.from_urls(env["rm"], env["namenode"], env["jhs"], user="root")
    client.delete(DIR, recursive=True)
    hot = [f"{DIR}/in/hot-{i}" for i in range(args.hot)]
    cold = [f"{DIR}/in/cold-{i}" for i in range(COLD)]
    for i, path in enumerate(hot + cold):
        client.write(path, grep_lines(3000, seed=i), overwrite=True, replication=1)
    state_dir = layout.root / "lowering-daemon"
    subprocess.run(["rm", "-rf", str(state_dir)], check=True)
    state_dir.mkdir(parents=True)
    base_cfg = {"poll_s": 3, "state_dir": str(state_dir), "http": {"enabled": False},
                "rails": {"max_files_per_round": 50, "max_replicas_per_round": 200},
                "policy": {"params": {"hot_factor": args.hot_factor,
                                      "min_pressure": args.min_pressure}},
                "cluster": {"rm": env["rm"], "webhdfs": env["namenode"], "jhs": env["jhs"],
                            "user": "root"}}
    log = state_dir / "daemon.log"
    hot_cfg = state_dir / "hot.yaml"
    hot_cfg.write_text(yaml.safe_dump({**base_cfg, "interval_s": args.window}))
    initial = {p: holders(ep, p) for p in hot}

    reads0 = datanode_reads(env)
    proc = start_daemon(hot_cfg, log)
    try:
        replay(layout, hot, cold, args.jobs, "hot")
        deadline = time.monotonic() + 3 * args.window
        while time.monotonic() < deadline and not any(
                client.status(p)["replication"] > 1 for p in hot):
            time.sleep(3)
        # the copies made (the journal's changes done), then no more decisions
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not journal_settled(state_dir):
            time.sleep(2)
    finally:
        stop_daemon(proc, log)
    reads1 = datanode_reads(env)
    heat = {h: reads1[h] - reads0[h] for h in reads0}
    raised = {p: client.status(p)["replication"] for p in hot}
    before = {"replication": raised, "holders": {p: holders(ep, p) for p in hot},
              "blocks_per_node": blocks_per_node(env, ep, hot + cold)}

    # cool-down: quiet short windows; watch every drop HDFS makes
    cool_cfg = state_dir / "cool.yaml"
    cool_cfg.write_text(yaml.safe_dump({**base_cfg, "interval_s": 5, "poll_s": 1}))
    now = dict(before["holders"])
    drops = []
    proc = start_daemon(cool_cfg, log)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            for p in hot:
                h = holders(ep, p)
                gone = sorted(set(now[p]) - set(h))
                for node in gone:
                    drops.append({"file": p, "holders": now[p], "dropped": node,
                                  "heat": {x: heat[x] for x in now[p]},
                                  "rank": rank(node, now[p], heat),
                                  "hottest": max(now[p], key=lambda x: (heat[x], x))})
                now[p] = h
            if all(len(now[p]) <= 1 for p in hot) and journal_settled(state_dir):
                break
            time.sleep(1)
    finally:
        stop_daemon(proc, log)
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
    return {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "setup": {"workers": 4, "hot_files": args.hot, "cold_files": COLD, "jobs": args.jobs,
                  "hot_factor": args.hot_factor, "min_pressure": args.min_pressure,
                  "window_s": args.window, "cool_down_window_s": 5,
                  "delay_threshold_s": 10, "base_replication": 1},
        "initial_holders": initial,
        "heat_before": heat, "heat_after": heat_after,
        "before": before, "after": after,
        "drops": drops,
        "summary": {
            "drops": n,
            "hottest_dropped": sum(d["rank"] == 0 for d in drops),
            "hottest_dropped_share": round(sum(d["rank"] == 0 for d in drops) / n, 3) if n
            else None,
            "random_choice_share": round(sum(
                sum(rank(h, d["holders"], heat) == 0 for h in d["holders"]) / len(d["holders"])
                for d in drops) / n, 3) if n else None,
            "mean_rank": round(sum(d["rank"] for d in drops) / n, 3) if n else None,
            "mean_heat_dropped_over_hottest": round(sum(
                d["heat"][d["dropped"]] / max(d["heat"][d["hottest"]], 1) for d in drops) / n, 3)
            if n else None,
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
