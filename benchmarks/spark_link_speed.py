"""At what link speed do the default's copies pay on Spark? The Spark sitting's schedule in the
simulator with the workers' links faster (issue 69).

The bundled cluster shapes each worker's link to 40 Mbit/s (docs/benchmark.md 1); a 64 MiB copy
then takes a quarter of a minute and shares its source's link with the remote reads from that
holder, which the simulator, fitted on a real Spark sitting, predicts costs the tasks more than
the copies give back (docs/benchmark.md 6.17). Production links are 25-250 times faster. This
runs the sitting's schedule under the Spark binding as compare_sim_spark.py validated it (the
contended task model fitted on ``--fit``'s static arm, the executors' warm-up, the copies on their
source's link, 2 streams a node, the NodeManagers' heartbeat ``--heartbeat-s``) with every
remote read and copy ``--scales`` times faster, and once with the copies free (the simulator's
default, 40 MB/s costing the tasks nothing): static, the oracle and the default (``dsbra-hold``)
over ``--seeds`` placements; per scale the mean responses, the default's captured share of the
oracle's gain with its 95% t-interval over the seeds where the oracle is faster than static
(each seed's share against that seed's static and oracle), the default's response less
static's paired by seed with its interval, and its extra storage. The binding's one
approximation (docs/simulator.md, "Contention": a task has one bottleneck, a remote read the
link, so it takes no CPU) flatters remote reads once the links are fast: there static can beat
the oracle, whose tasks all share the CPUs. OUT/link-speed.md, OUT/link-speed.json, OUT/sim/.

    .venv/bin/python benchmarks/spark_link_speed.py benchmarks/results/bench-spark-hotspot-long/schedule.json \\
        --fit benchmarks/results/bench-spark-hotspot/static --out benchmarks/results/spark-link-speed
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from dsbra.report.runs import Run, find_runs
from dsbra.sim import calibration
from dsbra.sim.fitted import simulate_spark_arm
from dsbra.stats import captured_share, t_interval

RESULTS = Path(__file__).resolve().parent / "results"
ARMS = ("static", "oracle", "dsbra-hold")
EXECUTORS, WAIT_S = 7, 3.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("schedule", type=Path)
    ap.add_argument("--fit", type=Path, required=True, help="a shared Spark sitting's static arm")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--scales", type=float, nargs="+", default=[1, 2, 5, 25])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--heartbeat-s", type=float, default=0.5,
                    help="the NodeManagers' heartbeat as compare_sim_spark.py fitted it")
    a = ap.parse_args()
    if a.seeds < 2:
        ap.error("--seeds must be at least 2 (the interval)")
    if any(s <= 0 for s in a.scales):
        ap.error("--scales must be positive")
    if not a.schedule.is_file():
        ap.error(f"{a.schedule}: no such schedule")
    static = [r for runs in find_runs([a.fit]).values() for r in runs]
    if not static:
        ap.error(f"{a.fit}: no real runs to fit on")
    network = json.loads((RESULTS / "network.json").read_text())
    spark = calibration.contended_spark_config(static, network, EXECUTORS)
    base = {"executors": EXECUTORS, "heartbeat_s": a.heartbeat_s, "wait_s": WAIT_S, **spark.contention}
    cases = [(f"x{s:g}", s, True) for s in a.scales] + [("x1, copies free", 1.0, False)]
    rows = []
    for name, scale, on_links in cases:
        scaled = spark.model | {k: spark.model[k] * scale for k in ("read_mbps_rack", "read_mbps_remote")}
        config = base | ({"copy_mbps": scaled["read_mbps_rack"], "copy_streams": spark.copies["copy_streams"]}
                         if on_links else {})
        out = a.out / "sim" / name.replace(", ", "-").replace(" ", "-")
        runs = {arm: [Run.load(d).metrics() for d in simulate_spark_arm(
            arm, a.schedule, out / arm, a.seeds, model=scaled, **config)] for arm in ARMS}
        seeds = list(zip(*(runs[arm] for arm in ARMS)))
        # a share only where the oracle beats static: where it is slower there is no gain to capture
        shares = [captured_share(s["mean_response_s"], o["mean_response_s"], d["mean_response_s"])
                  for s, o, d in seeds if o["mean_response_s"] < s["mean_response_s"]]
        shares = [x for x in shares if x is not None]
        rows.append({"case": name, "scale": scale, "copies_on_links": on_links,
                     "link_mbps": round(scaled["read_mbps_rack"], 2),
                     "response_s": {arm: statistics.fmean(m["mean_response_s"] for m in runs[arm]) for arm in ARMS},
                     "default_minus_static_s": t_interval([d["mean_response_s"] - s["mean_response_s"]
                                                           for s, _, d in seeds]),
                     "captured": t_interval(shares), "seeds_with_headroom": len(shares),
                     "extra_storage": statistics.fmean(m["extra_storage_mean"] or 0.0 for m in runs["dsbra-hold"])})
    command = (f".venv/bin/python benchmarks/spark_link_speed.py {a.schedule} --fit {a.fit} --out {a.out} "
               f"--scales {' '.join(f'{s:g}' for s in a.scales)} --seeds {a.seeds} --heartbeat-s {a.heartbeat_s:g}")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "link-speed.json").write_text(json.dumps({"command": command, "task_model": spark.model, "warmup_s": spark.contention["warmup_s"],
                                                       "rows": rows}, indent=1) + "\n")
    lines = [f"`{command}`", "", "| links | MB/s | static s | oracle s | default s | default - static s, paired "
             "| default's captured share | seeds the oracle gains on | default's extra storage % |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        c, d, t = r["captured"], r["default_minus_static_s"], r["response_s"]
        share = "-" if c is None else f"{100 * c[0]:.0f}% [{100 * c[1]:.0f}, {100 * c[2]:.0f}]"
        lines.append(f"| {r['case']} | {r['link_mbps']:g} | {t['static']:.1f} | {t['oracle']:.1f} "
                     f"| {t['dsbra-hold']:.1f} | {d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}] | {share} "
                     f"| {r['seeds_with_headroom']} | {r['extra_storage']:.1f} |")
    (a.out / "link-speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
