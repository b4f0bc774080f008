"""The simulator's Spark binding against a real Spark sitting, arm by arm (issue 69).

Input: a results set of `benchmarks/run_bench_matrix.py --engine spark --spark-mode shared`
(``<arm>/rep<k>/`` real replays, the ``schedule.json`` they ran). The simulator runs the same
schedule under ``--binding spark`` as the bundled cluster runs Spark: 4 workers on 2 racks, 2
slots a worker (two one-core executors fit a NodeManager), the replay's one long-running
application (its ApplicationMaster one slot, its executors as many as the runs had, held from
the start, a Fair pool per job), Spark's locality waits as the cluster's spark-defaults.conf
sets them (``--locality-wait-s``, 3 s, Spark's default), the daemon arms' 30 s rounds.

The bundled cluster's workers share one host (network.json's ``cpus``, 2) and their shaped
links, so the simulator runs with its contention on (SimConfig.host_cores, share_links: the
node-local tasks share the host's CPUs, the remote reads their holder's link) and an
executor's first task costs a warm-up (its JVM's). Fitted on the static arm only: the task
model under those rules (calibration.contended_task_model: each real task's work, its time at
its share of the CPUs or its link; the median node-local task's, the rack and off-rack rates
from the median remote tasks', the warm-up from the executors' first tasks) and the
NodeManagers' heartbeat (which places the executors), the value of calibration.HEARTBEATS
whose simulated static arm is closest to the real one in mean response and node locality.
The policies' copies are what HDFS makes of them there: DataNode traffic, HDFS's 2 streams a
node (SimConfig.copy_streams), each copy one more flow on its source's link beside the remote
reads from that holder, its block at the link's fitted full-share rate (copy_mbps): no parameter
of its own, and nothing fitted on an arm that copies (static copies nothing; the oracle's
replicas are there before its run). ``--free-copies``: the copies as the simulator's default
has them (40 MB/s, 1.6 s a block, costing the tasks nothing), the table before they shared the
links. ``--no-contention``: the binding as fitted before the contention model
(calibration.task_model, each task's cost its own: the medians of the real tasks' times; the
copies free). Every arm but static is a prediction. Per arm, real against
simulated: node locality, mean response, the share of tasks launched at each level, the
extra storage and the oracle's captured share; and the issue's validation targets (node
locality within 5 points, mean response within 15%, each level's share within 10 points).
Output: OUT/sim-spark/<fit or arm>/seed<k>/ runs, OUT/sim-vs-real-spark.json and .md (with
``--no-contention``: OUT/sim-spark-uncontended/, OUT/sim-vs-real-spark-uncontended.json, .md;
with ``--free-copies``: ``-free-copies``).

``--fit-on SITTING``: fit the task model and the heartbeat on another sitting's static arm (on
that sitting's schedule), so that every arm of this one, static included, is a prediction: the
binding on a sitting it was not fitted to. Output then ``-fit-<SITTING's name>``.

    .venv/bin/python benchmarks/compare_sim_spark.py benchmarks/results/bench-spark-hotspot --seeds 10
    .venv/bin/python benchmarks/compare_sim_spark.py benchmarks/results/bench-spark-hotspot-long --seeds 10 \\
        --fit-on benchmarks/results/bench-spark-hotspot
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dsbra.report.paper import captured
from dsbra.report.runs import Run, arm_table, find_runs
from dsbra.sim import calibration
from dsbra.sim.config import SimConfig
from dsbra.sim.fitted import SIM_ARM_POLICY, simulate_spark_arm
from dsbra.stats import mean_or_none

RESULTS = Path(__file__).resolve().parent / "results"
GOAL_LOCALITY_POINTS, GOAL_RESPONSE, GOAL_LEVEL_POINTS = 5.0, 0.15, 10.0
#: a real arm -> the simulated arm that predicts it: the simulator judges Spark's waits by the
#: scheduler's own accounting, so the daemon's idle threshold has no twin there
SIMULATED_AS = {**{arm: arm for arm in SIM_ARM_POLICY}, "dsbra-hold-idle0": "dsbra-hold"}


def sitting(ap: argparse.ArgumentParser, results: Path) -> dict[str, list[Run]]:
    """A shared Spark sitting's real runs by arm (the arms the simulator has a twin of)."""
    real = find_runs([results / arm for arm in SIMULATED_AS if (results / arm).is_dir()])
    if any(s.get("engine") != "spark" or s.get("spark_mode") != "shared" for s in summaries(real)):
        ap.error(f"{results}: not a sitting of run_bench_matrix.py --engine spark --spark-mode shared")
    return real


def summaries(real: dict[str, list[Run]]) -> list[dict]:
    return [json.loads((r.path / "summary.json").read_text()) for runs in real.values() for r in runs]


def simulated(arm: str, schedule: Path, out: Path, seeds: int, **config) -> list[Run]:
    return [Run.load(d) for d in simulate_spark_arm(arm, schedule, out, seeds, **config)]


def level_shares(runs: list[Run]) -> list[float]:
    """The share of tasks launched at each level (node, rack, off), percent, pooled over runs."""
    counts = [0, 0, 0]
    for run in runs:
        for loc in run.tasks["locality"]:
            counts[int(loc)] += 1
    total = sum(counts) or 1
    return [100 * c / total for c in counts]


def summarize(runs: list[Run]) -> dict:
    table = arm_table({"x": runs})["x"]
    return {"node_locality": mean_or_none(table.get("node_locality", [])),
            "response_s": mean_or_none(table.get("mean_response_s", [])),
            "extra_storage_mean": mean_or_none(table.get("extra_storage_mean", [])),
            "levels": level_shares(runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--locality-wait-s", type=float, default=3.0,
                    help="spark.locality.wait as the cluster ran it (the bundled cluster's default)")
    ap.add_argument("--no-contention", action="store_true",
                    help="each task's cost its own, the binding's fit before the contention model")
    ap.add_argument("--free-copies", action="store_true",
                    help="the policies' copies at the simulator's default, costing the tasks "
                         "nothing (the table before they shared the links)")
    ap.add_argument("--fit-on", type=Path, metavar="SITTING",
                    help="fit on this other sitting's static arm: every arm here is then a prediction")
    a = ap.parse_args()
    if a.seeds < 1:
        ap.error("--seeds must be at least 1")
    if a.no_contention and a.free_copies:
        ap.error("--no-contention has the copies free already")
    real = sitting(ap, a.results)
    fit_sitting = a.results if a.fit_on is None else a.fit_on
    fitted = real if a.fit_on is None else sitting(ap, a.fit_on)
    if "static" not in fitted:
        ap.error(f"{fit_sitting}: no static arm to fit on")
    executors = {s["executors"] for s in summaries(real) + summaries(fitted)}
    if len(executors) != 1:
        ap.error(f"{a.results}: runs with different executor counts {sorted(executors)}")
    schedule = a.results / "schedule.json"
    network = json.loads((RESULTS / "network.json").read_text())
    local_mbps = calibration.local_read_mbps(network)
    kw = {"executors": executors.pop(), "wait_s": a.locality_wait_s}
    if a.no_contention:
        model = calibration.task_model(calibration.sitting_maps(fitted["static"]), local_mbps)
        contention = None
    else:
        model, contention, fitted_copies = calibration.contended_spark_config(
            fitted["static"], network, kw["executors"])
        kw |= contention
    # on the shared links (share_links with copy_streams), at the link's rate fitted on static
    copies = None if a.no_contention or a.free_copies else fitted_copies
    kw |= copies or {}
    kw["model"] = model
    real_static = summarize(fitted["static"])
    suffix = ("-uncontended" if a.no_contention else "-free-copies" if a.free_copies else "") \
        + ("" if a.fit_on is None else f"-fit-{a.fit_on.name}")
    out = a.results / f"sim-spark{suffix}"
    fit = {}
    for hb in calibration.HEARTBEATS:
        s = summarize(simulated("static", fit_sitting / "schedule.json", out / f"fit-hb{hb:g}", a.seeds,
                                heartbeat_s=hb, **kw))
        fit[hb] = (abs(s["response_s"] / real_static["response_s"] - 1)
                   + abs(s["node_locality"] - real_static["node_locality"]) / 100, s)
    heartbeat = min(fit, key=lambda hb: fit[hb][0])
    rows, sim_runs = {}, {}
    for arm, runs in real.items():
        sim_runs[arm] = simulated(SIMULATED_AS[arm], schedule, out / SIMULATED_AS[arm], a.seeds,
                                  heartbeat_s=heartbeat, **kw)
        r, s = summarize(runs), summarize(sim_runs[arm])
        rows[arm] = {"reps": len(runs), "seeds": a.seeds, "real": r, "sim": s, "within_goal": {
            "node_locality": abs(r["node_locality"] - s["node_locality"]) <= GOAL_LOCALITY_POINTS,
            "response": abs(s["response_s"] - r["response_s"]) <= GOAL_RESPONSE * r["response_s"],
            "levels": all(abs(x - y) <= GOAL_LEVEL_POINTS for x, y in zip(r["levels"], s["levels"]))}}
    t_real, t_sim = arm_table(real), arm_table(sim_runs)
    for arm in rows:
        if arm not in ("static", "oracle") and "oracle" in real:
            rows[arm]["captured_real"] = captured(t_real, arm, "static", "oracle", "mean_response_s")
            rows[arm]["captured_sim"] = captured(t_sim, arm, "static", "oracle", "mean_response_s")
    doc = {"command": f".venv/bin/python benchmarks/compare_sim_spark.py {a.results} --seeds {a.seeds}"
                      + (f" --locality-wait-s {a.locality_wait_s:g}" if a.locality_wait_s != 3.0 else "")
                      + (" --no-contention" if a.no_contention else "")
                      + (" --free-copies" if a.free_copies else "")
                      + ("" if a.fit_on is None else f" --fit-on {a.fit_on}"),
           "fitted_on": None if a.fit_on is None else str(a.fit_on),
           "task_model": model, "contention": contention, "copies": copies,
           "executors": kw["executors"],
           "locality_wait_s": a.locality_wait_s,
           "heartbeat_s": heartbeat,
           "fit_on_static": {"real": real_static,
                             "grid": [{"heartbeat_s": hb, "error": round(e, 3), "response_s": s["response_s"],
                                       "node_locality": s["node_locality"]} for hb, (e, s) in fit.items()]},
           "arms": rows}
    (a.results / f"sim-vs-real-spark{suffix}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.results / f"sim-vs-real-spark{suffix}.md").write_text(markdown(doc))
    print(markdown(doc))


def _f(v, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def markdown(doc: dict) -> str:
    m, c = doc["task_model"], doc["contention"]
    fitted_on = "" if doc.get("fitted_on") is None else f"{doc['fitted_on']}'s "
    shared = ("" if c is None else
              f" Contention: {c['host_cores']} CPUs shared by the node-local tasks, a holder's link "
              f"by its remote reads; an executor's first task {c['warmup_s']:g} s more work.")
    if doc.get("copies"):
        shared += (f" The policies' copies on their source's link beside its remote reads, "
                   f"{doc['copies']['copy_mbps']:g} MB/s at a full share, "
                   f"{doc['copies']['copy_streams']} streams a node.")
    elif c is not None:
        shared += (f" The policies' copies at the simulator's default {SimConfig.copy_mbps:g} MB/s, "
                   "costing the tasks nothing.")
    lines = [f"`{doc['command']}`", "",
             f"Fitted on {fitted_on}static: a task's overhead {m['task_overhead_s']:g} s, reads "
             f"{m['read_mbps_local']:g} / {m['read_mbps_rack']:g} / {m['read_mbps_remote']:g} MB/s "
             f"(node / rack / off){' at a full share' if c else ''}, the NodeManagers' heartbeat "
             f"{doc['heartbeat_s']:g} s; {doc['executors']} executors, spark.locality.wait "
             f"{doc['locality_wait_s']:g} s.{shared}", "",
             "| arm | reps / seeds | node locality % real / sim | mean response s real / sim "
             "| tasks node / rack / off % real | sim | extra storage % real / sim "
             "| captured % real / sim | within goal (locality, response, levels) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm, row in doc["arms"].items():
        r, s, g = row["real"], row["sim"], row["within_goal"]
        lines.append(
            f"| {arm} | {row['reps']} / {row['seeds']} | {_f(r['node_locality'])} / {_f(s['node_locality'])} "
            f"| {_f(r['response_s'])} / {_f(s['response_s'])} | {' / '.join(_f(x) for x in r['levels'])} "
            f"| {' / '.join(_f(x) for x in s['levels'])} | {_f(r['extra_storage_mean'])} / {_f(s['extra_storage_mean'])} "
            f"| {_f(row.get('captured_real'))} / {_f(row.get('captured_sim'))} "
            f"| {', '.join('yes' if g[k] else 'no' for k in ('node_locality', 'response', 'levels'))} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
