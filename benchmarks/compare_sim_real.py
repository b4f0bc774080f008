"""The simulator against the real cluster, arm by arm, on the same schedule (issue 11 item 6).

Input: a results set of `benchmarks/run_bench_matrix.py` (``<arm>/rep<k>/`` real replays and
the ``schedule.json`` they ran). The simulator's model is calibrated to those runs by
dsbra/sim/calibration.py (the task model, the AM start-up, and the slots and heartbeat fitted on
the static arm), and the fit is recorded in ``sim-vs-real.json``, which dsbra/sim/fitted.py's
``load_fit`` reads:

- cluster: 4 workers on 2 racks, replication 2, 64 MiB blocks, delay scheduling with
  D = 10 s for node and rack locality (off for ``static-nodelay``), as the replays ran;
- task model (``calibration.task_model``): overhead = the median node-local map (launch to
  finish) less its local read at the measured node-local rate (``network.json``); rack and
  off-rack read rates from the median rack-local and off-switch maps (the simulator's cost is
  overhead + MB / rate of the level);
- the MapReduce ApplicationMasters, by ``--model``:
  - ``am`` (default): simulated. Every job's AM holds one container of a NodeManager until the
    job ends; a NodeManager has 4 vcores and every container takes one (its 2560 MB would hold
    5 maps of 512 MB, or 4 AMs of 640 MB, so the vcores bind), so a node is 4 slots and an AM
    one of them; at most half the cluster's resources hold AMs (the bundled queues'
    maxAMShare 0.5: 8 AMs), later jobs wait for one to end, as on the real cluster; an AM's
    maps become pending ``am_startup_s`` after it starts, the median over the delay-on runs of
    their first job's submission-to-first-request gap (no other AM held that job up), or, with
    ``--fit-am-startup``, the value of a grid that fits the static arm best (under load every
    AM starts slower than the first did on a quiet cluster). The jobs arrive at their real
    submission times and the full response is compared;
  - ``shifted``: not simulated. Each job arrives in the simulator when its real AM made its
    maps pending (the mean over the arm's repetitions of the first map's ``scheduled_s``), and
    the real response compared is the map phase (last map finish less that moment);
- map slots per node and node heartbeat (and the AM start-up with ``--fit-am-startup``),
  fitted on the static arm only (response and mean map wait, relative errors summed, over a
  grid); the other arms are then predictions, not fits. The table also sets each job's wait
  from submission to its first map's launch, real against simulated.

- the binding: YARN's and the MapReduce AM's (``--binding yarn-mr``, the default; AM heartbeat
  ``--am-heartbeat-s``, the bundled cluster's 0.5 s), or a slot straight to a task (``task``,
  the simulator's model before issue 42).

Every arm runs in the simulator over ``--seeds`` placements (the real HDFS placement is one
draw we do not reproduce block for block). Output: ``OUT/sim/<arm>/seed<k>/`` runs,
``OUT/sim-vs-real.json`` and ``OUT/sim-vs-real.md``: per arm node locality (overall and per
bin), response and the oracle's captured share, real against simulated, and whether each arm
is within the issue's goal (10 points of locality, 15% of response time); the off-node maps by
cause, handed on or delay expired (the real ones where the sitting recorded its grants,
benchmarks/container_grants.py; the simulated ones by the same rule), the node locality of
the hot file's maps and of the other files', and dsbra's trade between the two, paired by
repetition (real) and by seed (simulated); issue 42's targets, met or not. ``--json`` prints
``{"arms": {ARM: {"real": {...}, "sim": {...}}}}`` (those measures, means per run).

    .venv/bin/python benchmarks/compare_sim_real.py benchmarks/results/bench-fb2009-40-loaded
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

from dsbra.bench.analysis import CAUSE_KEYS, causes_by_arm, handed_on_share, mean_causes, targets
from dsbra.report.paper import captured
from dsbra.report.runs import arm_table, find_runs
from dsbra.sim import calibration
from dsbra.sim.config import BINDINGS, BUNDLED_AM_HEARTBEAT_S
from dsbra.sim.fitted import DELAY_S, INTERVAL_S, simulate_arm
from dsbra.stats import mean_or_none

RESULTS = Path(__file__).resolve().parent / "results"
GOAL_LOCALITY_POINTS, GOAL_RESPONSE = 10.0, 0.15


def mean_running_maps(run) -> float:
    """Maps running at once, averaged over the run's map span (first launch to last finish)."""
    t = run.tasks
    launch, finish = np.asarray(t["launch_s"], float), np.asarray(t["finish_s"], float)
    span = finish.max() - launch.min()
    return float((finish - launch).sum() / span) if span > 0 else 0.0


def mean_first_map_s(run) -> float:
    """Seconds from a job's submission to its first map's launch, averaged over the jobs: the
    part of the response spent before any map ran (client, ApplicationMaster queue and start)."""
    j = run.jobs
    return float(np.mean(np.asarray(j["start_s"], float) - np.asarray(j["submit_s"], float)))


def shifted_schedule(schedule: dict, pending_by_rep: list[dict[str, float]]) -> dict:
    """The schedule with every job arriving when its maps became pending (mean over reps)."""
    jobs = []
    for job in schedule["jobs"]:
        seen = [p[job["job_id"]] for p in pending_by_rep if job["job_id"] in p]
        jobs.append({**job, "submit_s": round(statistics.fmean(seen), 3) if seen else job["submit_s"]})
    jobs.sort(key=lambda j: j["submit_s"])
    return {**schedule, "jobs": jobs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--interval-s", type=float, default=INTERVAL_S, help="the daemon arms' round length")
    ap.add_argument("--model", choices=("am", "shifted"), default="am",
                    help="simulate the ApplicationMasters (am), or start each job when its real AM "
                         "requested its maps (shifted)")
    ap.add_argument("--fit-am-startup", action="store_true",
                    help="with --model am: fit the AM start-up on the static arm too (with slots and "
                         "heartbeat), instead of the first job's measured gap")
    ap.add_argument("--max-am-share", type=float, default=None,
                    help="the runs were run_bench_matrix.py --max-am-share X (arms <arm>-amshareX): "
                         f"the queues' maxAMShare in the simulator too (default {calibration.MAX_AM_SHARE})")
    ap.add_argument("--capacity-node-delay", type=int, default=None,
                    help="the runs were on the Capacity Scheduler with this node-locality-delay "
                         "(run_bench_matrix.py --scheduler capacity); default: the Fair Scheduler")
    ap.add_argument("--binding", choices=BINDINGS, default="yarn-mr",
                    help="how the simulator turns a free slot into a map (dsbra sim --binding)")
    ap.add_argument("--am-heartbeat-s", type=float, default=BUNDLED_AM_HEARTBEAT_S,
                    help="the ApplicationMasters' heartbeat with --binding yarn-mr (the bundled "
                         "cluster's 500 ms; Hadoop's default is 1000 ms)")
    ap.add_argument("--json", action="store_true",
                    help='print {"arms": {ARM: {"real": {...}, "sim": {...}}}} (the off-node maps by '
                         "cause and the per-file locality, means per run) instead of the table")
    a = ap.parse_args()
    if not a.am_heartbeat_s > 0:
        ap.error(f"--am-heartbeat-s must be > 0, got {a.am_heartbeat_s:g}")
    binding = {"binding": a.binding, "am_heartbeat_s": a.am_heartbeat_s}
    schedule = json.loads((a.results / "schedule.json").read_text())
    suffix = f"-amshare{a.max_am_share:g}" if a.max_am_share is not None else ""
    real = calibration.sitting_runs(a.results, suffix)
    all_runs = [r for runs in real.values() for r in runs]
    network = json.loads((RESULTS / "network.json").read_text())
    model = calibration.task_model(calibration.sitting_maps(all_runs), calibration.local_read_mbps(network))
    sim_dirs, real_resp, schedules = {}, {}, {}
    if a.model == "am":
        first_gap = calibration.first_job_gap_s(real)
        am = {"am_slots": 1.0, "max_am_share": a.max_am_share or calibration.MAX_AM_SHARE,
              "am_startup_s": first_gap}
        startup_grid = (first_gap, *calibration.AM_STARTUP_S) if a.fit_am_startup else (first_gap,)
        slot_grid = calibration.AM_SLOTS
        for arm, runs in real.items():
            real_resp[arm] = [mean_or_none(r.jobs["response_s"]) for r in runs]
            schedules[arm] = a.results / "schedule.json"
    else:
        am, slot_grid, startup_grid, first_gap = {}, calibration.SLOTS, (None,), None
        for arm, runs in real.items():
            phases = [calibration.map_phase(r) for r in runs]
            real_resp[arm] = [mean_or_none(list(resp.values())) for _, resp in phases]
            path = a.results / "sim" / arm / "schedule.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(shifted_schedule(schedule, [p for p, _ in phases]), indent=1) + "\n")
            schedules[arm] = path
    real_wait = calibration.mean_wait(real["static"])
    real_static = statistics.fmean(real_resp["static"])
    fit = calibration.fit_static(schedules["static"], model, am, real_static, real_wait, slot_grid, startup_grid,
                                 a.seeds, a.results / "fit", a.interval_s, binding, a.capacity_node_delay)
    slots, heartbeat, startup = calibration.best(fit)
    if startup is not None:
        am = am | {"am_startup_s": startup}
    for arm, path in schedules.items():
        sim_dirs[arm] = simulate_arm(arm, path, model, slots, a.seeds, a.results, a.interval_s, heartbeat, am,
                                     binding, a.capacity_node_delay)
    sim = find_runs([d for dirs in sim_dirs.values() for d in dirs])
    # find_runs names a seed<k> run's arm by its parent directory: the arm itself
    t_real, t_sim = arm_table(real), arm_table(sim)
    for arm in real:
        t_real[arm]["compared_response_s"] = real_resp[arm]
        t_sim[arm]["compared_response_s"] = t_sim[arm]["mean_response_s"]
    rows = {}
    for arm in real:
        r, s = t_real[arm], t_sim[arm]
        loc_r, loc_s = mean_or_none(r["node_locality"]), mean_or_none(s["node_locality"])
        resp_r, resp_s = mean_or_none(r["compared_response_s"]), mean_or_none(s["compared_response_s"])
        rows[arm] = {
            "reps": len(real[arm]), "seeds": len(sim_dirs[arm]),
            "node_locality_real": loc_r, "node_locality_sim": loc_s,
            "node_locality_real_sd": statistics.pstdev(r["node_locality"]),
            "response_real_s": resp_r, "response_sim_s": resp_s,
            "response_real_sd": statistics.pstdev(r["compared_response_s"]),
            "full_response_real_s": mean_or_none(r["mean_response_s"]),
            "running_maps_real": mean_or_none([mean_running_maps(x) for x in real[arm]]),
            "running_maps_sim": mean_or_none([mean_running_maps(x) for x in sim[arm]]),
            "first_map_real_s": mean_or_none([mean_first_map_s(x) for x in real[arm]]),
            "first_map_sim_s": mean_or_none([mean_first_map_s(x) for x in sim[arm]]),
            "extra_storage_mean_real": mean_or_none(r.get("extra_storage_mean", [])),
            "extra_storage_mean_sim": mean_or_none(s.get("extra_storage_mean", [])),
            "locality_by_bin": {b: [mean_or_none(r.get(f"locality_bin{b}", [])),
                                    mean_or_none(s.get(f"locality_bin{b}", []))]
                                for b in range(1, 10) if f"locality_bin{b}" in r},
            "within_goal": (abs(loc_r - loc_s) <= GOAL_LOCALITY_POINTS
                            and abs(resp_s - resp_r) <= GOAL_RESPONSE * resp_r),
        }
        if "oracle" in real and "static" in real and arm not in ("oracle", "static"):
            rows[arm]["captured_real"] = captured(t_real, arm, "static", "oracle", "compared_response_s")
            rows[arm]["captured_sim"] = captured(t_sim, arm, "static", "oracle", "compared_response_s")
    doc = {"command": f".venv/bin/python benchmarks/compare_sim_real.py {a.results} --seeds {a.seeds} "
                      f"--model {a.model}" + (" --fit-am-startup" if a.fit_am_startup else "")
                      + (f" --max-am-share {a.max_am_share:g}" if a.max_am_share is not None else "")
                      + (f" --capacity-node-delay {a.capacity_node_delay}"
                         if a.capacity_node_delay is not None else "")
                      + (f" --binding {a.binding}" if a.binding != "yarn-mr" else "")
                      + (f" --am-heartbeat-s {a.am_heartbeat_s:g}"
                         if a.am_heartbeat_s != BUNDLED_AM_HEARTBEAT_S else ""),
           "binding": binding, "model": a.model, "response": "full" if a.model == "am" else "map phase",
           "task_model": model, "slots_per_node": slots, "heartbeat_s": heartbeat,
           "am": am | ({"first_job_gap_s": first_gap, "am_startup_fitted": a.fit_am_startup} if am else {}),
           "delay_s": DELAY_S if a.capacity_node_delay is None else None,
           "capacity_node_delay": a.capacity_node_delay,
           "fit_on_static": {"real_response_s": round(real_static, 2),
                             "real_mean_map_wait_s": round(real_wait, 2),
                             "grid": [{"slots": k[0], "heartbeat_s": k[1], "am_startup_s": k[2],
                                       "error": round(v[0], 3),
                                       "response_s": round(v[1], 2), "wait_s": round(v[2], 2)}
                                      for k, v in sorted(fit.items(), key=lambda kv: kv[1][0])]},
           "arms": rows}
    causes = {"real": causes_by_arm(real, simulated=False), "sim": causes_by_arm(sim, simulated=True)}
    for arm in real:
        rows[arm]["causes"] = {side: mean_causes(causes[side][arm]) for side in ("real", "sim")}
        rows[arm]["handed_on_share"] = {side: handed_on_share(causes[side][arm]) for side in ("real", "sim")}
    doc |= targets(causes)
    (a.results / "sim-vs-real.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.results / "sim-vs-real.md").write_text(markdown(doc))
    if a.json:
        print(json.dumps({"arms": {arm: r["causes"] for arm, r in rows.items()}}))
    else:
        print(markdown(doc))


def _f(v, digits=1, pct=False) -> str:
    if v is None:
        return "-"
    return f"{v:.{digits}f}{'%' if pct else ''}"


def markdown(doc: dict) -> str:
    m, am = doc["task_model"], doc["am"]
    fit = doc["fit_on_static"]
    startup_how = (f"fitted on the static arm; the first job's own gap, median over the delay-on "
                   f"runs, was {am.get('first_job_gap_s')} s" if am.get("am_startup_fitted") else
                   "the first job's gap, median over the delay-on runs")
    how = (f"ApplicationMasters simulated: one container of a node's slots each, at most "
           f"{am['max_am_share']:.0%} of the cluster's slots held by AMs, maps pending "
           f"{am['am_startup_s']} s after the AM starts ({startup_how}); jobs arrive at their real "
           f"submission; response is the full one."
           if doc["model"] == "am" else
           "ApplicationMasters not simulated: each job arrives when its real AM requested its "
           "maps; response is the map phase (the full real response is in the last column).")
    lines = ["# The simulator against the real cluster, same schedule", "",
             f"`{doc['command']}`", "",
             f"Calibrated from the real runs: task overhead "
             f"{m['task_overhead_s']} s, reads {m['read_mbps_local']} / {m['read_mbps_rack']} / "
             f"{m['read_mbps_remote']} MB/s node / rack / off-rack (median real maps: "
             f"{m['sources']['median_map_s']}, counts {m['sources']['maps']}); "
             + (f"D = {doc['delay_s']:.0f} s. " if doc.get("delay_s") is not None else
                f"Capacity Scheduler, node-locality-delay {doc['capacity_node_delay']} (capped by the 4 nodes). ")
             + f"Fitted on the static arm: {doc['slots_per_node']} slots per node, node heartbeat "
             f"{doc['heartbeat_s']} s (best three of the grid: "
             + "; ".join(f"{g['slots']} slots {g['heartbeat_s']} s"
                         + (f" AM start-up {g['am_startup_s']} s" if g.get("am_startup_s") is not None else "")
                         + f" -> response {g['response_s']} s, wait {g['wait_s']} s" for g in fit["grid"][:3])
             + f"; real: response {fit['real_response_s']} s, wait {fit['real_mean_map_wait_s']} s). "
               "The static row is therefore a fit; the others are predictions.",
             "", how, "",
             f"| arm | node locality real / sim (points) | {doc['response']} response real / sim s (diff) | "
             "within goal | captured real / sim | extra storage real / sim | full real response s | "
             "maps running at once real / sim | submission to first map real / sim s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm, r in doc["arms"].items():
        diff = (r["response_sim_s"] / r["response_real_s"] - 1) * 100
        lines.append(
            f"| {arm} | {_f(r['node_locality_real'])} ± {_f(r['node_locality_real_sd'])} / "
            f"{_f(r['node_locality_sim'])} ({r['node_locality_sim'] - r['node_locality_real']:+.1f}) | "
            f"{_f(r['response_real_s'])} ± {_f(r['response_real_sd'])} / "
            f"{_f(r['response_sim_s'])} ({diff:+.0f}%) | {'yes' if r['within_goal'] else 'no'} | "
            f"{_f(r.get('captured_real'), 0, True)} / {_f(r.get('captured_sim'), 0, True)} | "
            f"{_f(r['extra_storage_mean_real'], 1, True)} / {_f(r['extra_storage_mean_sim'], 1, True)} | "
            f"{_f(r['full_response_real_s'])} | {_f(r['running_maps_real'])} / {_f(r['running_maps_sim'])} | "
            f"{_f(r.get('first_map_real_s'))} / {_f(r.get('first_map_sim_s'))} |")
    lines += ["", f"Off-node maps by the level their container was granted at, means per run (binding "
              f"{doc['binding']['binding']}, AM heartbeat {doc['binding']['am_heartbeat_s']:g} s; real causes "
              "only where the sitting recorded its grants), and node locality of the hot file's maps "
              "(the file most maps read) and of the other files', real / sim:", "",
              "| arm | node locality % | off-node maps | handed on | delay expired | handed-on share of "
              "off-node % | hot file's maps local % | other files' maps local % |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm, r in doc["arms"].items():
        c, share = r["causes"], r["handed_on_share"]
        lines.append(f"| {arm} | " + " | ".join(
            f"{_f(c['real'][k])} / {_f(c['sim'][k])}" for k in CAUSE_KEYS[:4]) + " | "
            + f"{_f(share['real'], 0)} / {_f(share['sim'], 0)} | "
            + " | ".join(f"{_f(c['real'][k])} / {_f(c['sim'][k])}" for k in CAUSE_KEYS[4:]) + " |")
    trade = doc["trade"]
    if any(trade[side]["other_files_node_locality"] for side in trade):
        lines += ["", "dsbra - static, paired by repetition (real) and by seed (sim), mean [95% interval]:", "",
                  "| measure | real | sim |", "| --- | --- | --- |"]
        for k in CAUSE_KEYS:
            cells = [trade[side][k] for side in ("real", "sim")]
            lines.append(f"| {k.replace('_', ' ')} | " + " | ".join(
                "-" if c is None else f"{c['mean']:+.1f} [{c['low']:+.1f}, {c['high']:+.1f}] ({c['pairs']} pairs)"
                for c in cells) + " |")
    if doc["targets"]:
        lines += ["", "Issue 42's targets:", "", "| target | real | sim | met |", "| --- | --- | --- | --- |"]
        for name, t in doc["targets"].items():
            vals = [v["mean"] if isinstance(v, dict) else v for v in (t["real"], t["sim"])]
            lines.append(f"| {name} | {_f(vals[0])} | {_f(vals[1])} | "
                         + {True: "yes", False: "**no**", None: "-"}[t["met"]] + " |")
    lines += ["", "Node locality per job-size bin, real / sim (%):", "",
              "| arm | " + " | ".join(f"bin {b}" for b in range(1, 10)) + " |",
              "| --- |" + " --- |" * 9]
    for arm, r in doc["arms"].items():
        cells = []
        for b in range(1, 10):
            pair = r["locality_by_bin"].get(b) or r["locality_by_bin"].get(str(b))
            cells.append(f"{_f(pair[0], 0)} / {_f(pair[1], 0)}" if pair else "")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
