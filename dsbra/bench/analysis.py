"""A sitting's runs analysed offline, from the files `run_bench_matrix.py` kept (``tasks.parquet``,
``grants.json``): arms paired by repetition, the maps' locality on the hot file and the others,
the level each off-node map's container was granted at, and those measures of a simulated run
beside the real one's (benchmarks/compare_sim_real.py). The scripts in benchmarks/ that print
or write these are drivers over this module."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pyarrow.parquet as pq

from dsbra.errors import InputError
from dsbra.report.runs import Run
from dsbra.results_schema import LOCALITY_NAMES as GRANTS
from dsbra.sim.metrics import grant_counts
from dsbra.stats import mean_or_none, t_interval

#: the stages of a job's wait before its first map (benchmarks/first_map_wait.py)
STAGES = ("am_queue", "am_jvm", "am_init", "am_request", "map_wait")
#: the two counts the grant analysis is about: maps off their node, by the grant that put them there
CAUSES = {"handed_on": "off-node map in a container granted NODE_LOCAL (asked for another map)",
          "delay_expired": "off-node map in a container granted RACK_LOCAL or OFF_SWITCH"}
#: issue 42's targets on a sitting with grant records: the handed-on share of the off-node
#: maps within 15 points of the real one (static, dsbra), node locality within 5 (those and
#: the oracle), and the other files' maps losing locality when dsbra spreads the hot file
TARGET_HANDED_ON_POINTS, TARGET_LOCALITY_POINTS = 15.0, 5.0
CAUSE_KEYS = ("node_locality", "off_node_maps", "handed_on", "delay_expired",
              "hot_file_node_locality", "other_files_node_locality")


def paired_by_rep(rows: dict[str, dict], baseline: str, measures: dict) -> dict[str, dict]:
    """Per arm other than ``baseline`` (``rows`` keyed "<arm>/<rep>"): each measure (name ->
    a run's value) minus the baseline's in the same repetition, as the mean with its 95%
    t-interval over the pairs; arms with fewer than 2 pairs are left out."""
    arms: dict[str, dict[str, dict]] = {}
    for name, row in rows.items():
        arm, rep = name.split("/")
        arms.setdefault(arm, {})[rep] = row
    if baseline not in arms:
        raise InputError(f"--baseline {baseline}: no such arm among {', '.join(sorted(arms))}")
    out = {}
    for arm, reps in sorted(arms.items()):
        common = sorted(set(reps) & set(arms[baseline]))
        if arm == baseline or len(common) < 2:
            continue
        out[arm] = {"pairs": len(common)} | {
            name: [round(x, 2) for x in t_interval([value(reps[r]) - value(arms[baseline][r]) for r in common])]
            for name, value in measures.items()}
    return out


def paired_stages(rows: dict[str, dict], baseline: str) -> dict[str, dict]:
    """Per arm other than ``baseline``: each stage's (and the total's) median per run minus the
    baseline's in the same repetition, as the mean with its 95% t-interval over the pairs."""
    return paired_by_rep(rows, baseline, {stage: lambda row, stage=stage: row[stage]["median_s"]
                                          for stage in (*STAGES, "total")})


def most_ams_at_once(apps: list[dict]) -> int:
    """The most of ``apps`` whose AM container ran at one time (launchTime to finishedTime): how
    many AMs the queues' maxAMShare let in together."""
    events = sorted([(a["launchTime"], 1) for a in apps] + [(a["finishedTime"], -1) for a in apps])
    running = most = 0
    for _, step in events:  # at one instant, an end (-1) sorts before a start
        running += step
        most = max(most, running)
    return most


def read_tasks(tasks: Path) -> dict[str, list]:
    """The columns of a run's ``tasks.parquet`` the locality split reads, read once."""
    return pq.read_table(tasks, columns=["block_id", "locality", "wait_s"]).to_pydict()


def locality_split(t: dict[str, list], hot_block: int) -> tuple[float, float]:
    """Percent of node-local maps among the hot block's and among the others."""
    hot = [loc == 0 for b, loc in zip(t["block_id"], t["locality"]) if b == hot_block]
    rest = [loc == 0 for b, loc in zip(t["block_id"], t["locality"]) if b != hot_block]
    return 100 * sum(hot) / len(hot), 100 * sum(rest) / len(rest)


def off_node_by_wait(t: dict[str, list], delay_s: float) -> tuple[int, int]:
    """Maps that ran off their node, split by whether they launched within ``delay_s`` of
    becoming pending (before delay scheduling would relax their job's locality) or later."""
    waits = [w for loc, w in zip(t["locality"], t["wait_s"]) if loc != 0]
    return sum(w < delay_s for w in waits), sum(w >= delay_s for w in waits)


def classify(run_dir: Path) -> dict:
    """One run's maps by their locality and the level their container was granted at
    (RUN/grants.json, dsbra.bench.grants.record). A map is matched to its attempt by job, node
    and launch time (tasks.parquet's launch is the attempt's start). Maps of one job launched
    on one node in the same millisecond cannot be told apart that way: when their containers
    were granted at different levels they are ``ambiguous`` and left out; ``unmatched``: maps
    with no attempt or allocation found."""
    grants = json.loads((run_dir / "grants.json").read_text())
    t0 = grants["t0_wall_ms"]
    level = {container: lvl for _, container, _, _, lvl in grants["allocations"]}
    levels: dict[tuple, list] = {}
    for job, _, container, node, start in grants["attempts"]:
        levels.setdefault((job, node, start), []).append(level.get(container))
    tasks = pq.read_table(run_dir / "tasks.parquet", columns=["job_id", "node", "locality", "launch_s"]).to_pylist()
    locality, grant = [], []
    unmatched = ambiguous = 0
    for t in tasks:
        found = set(levels.get((t["job_id"], t["node"], t0 + round(t["launch_s"] * 1000)), [None]))
        if None in found:
            unmatched += 1
        elif len(found) > 1:
            ambiguous += 1
        else:
            locality.append(t["locality"])
            grant.append(GRANTS.index(found.pop()))
    return {"maps": len(tasks), "unmatched": unmatched, "ambiguous": ambiguous,
            **grant_counts(locality, grant)}


def paired_causes(rows: dict[str, dict], baseline: str) -> dict[str, dict]:
    """Per arm other than ``baseline``: each cause's count minus the baseline's in the same
    repetition, as the mean with its 95% t-interval over the pairs."""
    return paired_by_rep(rows, baseline, {cause: lambda row, cause=cause: row[cause] for cause in CAUSES})


def map_causes(run: Run, simulated: bool) -> dict:
    """One run's node locality (%), its off-node maps, those by cause (handed on, delay
    expired: None for a real run without grant records), and the node locality (%) of the hot
    file's maps (the file most of the run's maps read) and of the other files'."""
    t = run.tasks
    off = sum(loc != 0 for loc in t["locality"])
    hot = collections.Counter(t["block_id"]).most_common(1)[0][0]
    hot_pct, other_pct = locality_split(t, hot)
    causes = (json.loads((run.path / "summary.json").read_text())["container_grants"] if simulated
              else classify(run.path) if (run.path / "grants.json").exists() else {})
    return {"node_locality": 100 * (1 - off / len(t["locality"])), "off_node_maps": off,
            "handed_on": causes.get("handed_on"), "delay_expired": causes.get("delay_expired"),
            "hot_file_node_locality": hot_pct, "other_files_node_locality": other_pct}


def causes_by_arm(arms: dict[str, list[Run]], simulated: bool) -> dict[str, dict[str, list]]:
    """Arm -> run name -> map_causes of that run (runs by repetition or seed name)."""
    return {arm: {r.path.name: map_causes(r, simulated) for r in runs} for arm, runs in arms.items()}


def mean_causes(per_run: dict[str, dict]) -> dict:
    """Each measure's mean over the runs that have it (None where none has)."""
    return {k: mean_or_none([c[k] for c in per_run.values() if c[k] is not None]) for k in CAUSE_KEYS}


def handed_on_share(per_run: dict[str, dict]) -> float | None:
    """Percent of the off-node maps that were handed on, pooled over the runs with grants."""
    runs = [c for c in per_run.values() if c["handed_on"] is not None]
    off = sum(c["off_node_maps"] for c in runs)
    return 100 * sum(c["handed_on"] for c in runs) / off if off else None


def paired_trade(per_arm: dict[str, dict], arm: str, baseline: str) -> dict:
    """``arm`` - ``baseline`` for each measure, paired by run name (repetition or seed): mean
    with its 95% t-interval and the pairs; None under two pairs or where a run lacks it."""
    a, b = per_arm.get(arm, {}), per_arm.get(baseline, {})
    names = sorted(set(a) & set(b))
    out = {}
    for k in CAUSE_KEYS:
        diffs = [a[n][k] - b[n][k] for n in names if a[n][k] is not None and b[n][k] is not None]
        ci = t_interval(diffs)
        out[k] = None if ci is None else {"mean": ci[0], "low": ci[1], "high": ci[2], "pairs": len(diffs)}
    return out


def targets(causes: dict) -> dict:
    """Issue 42's targets on these runs, each with the measured values and whether it is met
    (None where the runs cannot tell: no grant records, no such arm, under two pairs)."""
    out = {}
    for arm in ("static", "dsbra"):
        if arm in causes["real"]:
            r, m = (handed_on_share(causes[side][arm]) for side in ("real", "sim"))
            out[f"{arm}: handed-on share of off-node maps within {TARGET_HANDED_ON_POINTS:g} points"] = {
                "real": r, "sim": m, "met": None if r is None or m is None else abs(m - r) <= TARGET_HANDED_ON_POINTS}
    for arm in ("static", "dsbra", "oracle"):
        if arm in causes["real"]:
            r, m = (mean_causes(causes[side][arm])["node_locality"] for side in ("real", "sim"))
            out[f"{arm}: node locality within {TARGET_LOCALITY_POINTS:g} points"] = {
                "real": r, "sim": m, "met": abs(m - r) <= TARGET_LOCALITY_POINTS}
    trade = {side: paired_trade(causes[side], "dsbra", "static") for side in ("real", "sim")}
    if "dsbra" in causes["real"]:
        r, m = (t["other_files_node_locality"] for t in (trade["real"], trade["sim"]))
        out["dsbra - static: the other files' maps lose node locality (the sign of 6.8's trade)"] = {
            "real": r, "sim": m, "met": None if m is None else m["mean"] < 0}
    return {"targets": out, "trade": trade}


def daemon_run_cpu(run_dir: Path, cpus: int = 2) -> dict | None:
    """A daemon arm's run: the daemon's CPU (``summary.json``, as `bench replay` recorded it:
    dsbra.bench.replay.daemon_cost's share of the machine's CPUs over the daemon's life, in
    percent) and its fast polls' (the recent rounds' ``fast_poll`` in its
    ``daemon-state/status.json``: polls, CPU, and at its poll interval the percent of ``cpus``
    it takes); None for a run without a daemon (benchmarks/daemon_cpu.py)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    if not summary.get("daemon"):
        return None
    status = json.loads((run_dir / "daemon-state" / "status.json").read_text())
    rounds = [r["fast_poll"] for r in status.get("recent_rounds", []) if r.get("fast_poll")]
    polls, cpu_s = sum(r["polls"] for r in rounds), sum(r["cpu_s"] for r in rounds)
    out = {"daemon_cpu_s": summary["daemon_cpu_s"], "rounds": summary["daemon_rounds"],
           "wall_s": summary["wall_s"], "daemon_cpu_pct": 100 * summary["daemon_cpu_share"],
           "load_avg_start": summary.get("load_avg_start"), "fast_polls": polls}
    if polls:
        poll_s = status["fast_poll"]["poll_s"]
        out |= {"fast_poll_cpu_s": round(cpu_s, 4), "ms_per_fast_poll": round(1000 * cpu_s / polls, 2),
                "fast_poll_pct_at_poll_s": round(100 * cpu_s / polls / poll_s / cpus, 4)}
    return out
