"""The scheduler settings `dsbra conf check` advises on, in the simulator fitted to real sittings
(dsbra.sim.scheduler_settings): static under delay scheduling off, multiple assignment per node
heartbeat, and the AM heartbeat at 0.1 s and 1 s, each against the settings the sitting ran,
paired by seed. Writes OUT/settings.json and OUT/sim-scheduler-settings.md.

    python benchmarks/sim_scheduler_settings.py --out benchmarks/results/sim-scheduler-settings \
        --fit benchmarks/results/bench-hotspot-long-grants/sim-vs-real.json \
              benchmarks/results/bench-hotspot-hold/sim-vs-real.json --seeds 20
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dsbra.sim.fitted import load_fit
from dsbra.sim.scheduler_settings import BASE, SETTINGS, effects, run_setting


def _ci(c: dict | None, unit: str) -> str:
    return "-" if c is None else f"{c['mean']:+.1f}{unit} [{c['low']:+.1f}, {c['high']:+.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--fit", type=Path, nargs="+", required=True, help="compare_sim_real.py sim-vs-real.json files")
    ap.add_argument("--seeds", type=int, default=20)
    a = ap.parse_args()
    if a.seeds < 2:
        ap.error(f"--seeds must be at least 2 (intervals are paired over seeds), got {a.seeds}")
    missing = [str(p) for p in a.fit if not p.exists()]
    if missing:
        ap.error(f"no fit at {missing[0]} (run compare_sim_real.py on that result set first)")
    command = "python benchmarks/sim_scheduler_settings.py " + " ".join(sys.argv[1:])
    doc = {"command": command, "fits": {}}
    lines = ["# The scheduler's locality settings in the simulator, static replication", "", f"`{command}`", "",
             f"Each setting against the sitting's own ({BASE}: D = 10 s time-based, one container per node "
             "heartbeat, AM heartbeat 0.5 s), paired by seed (placements): node locality in points, "
             "mean response in percent, mean [95% interval].", ""]
    for fit_path in a.fit:
        fit = load_fit(fit_path)
        rows = [run_setting(fit, setting, seed) for setting in SETTINGS for seed in range(a.seeds)]
        eff = effects(rows)
        doc["fits"][str(fit_path)] = {"rows": rows, "effects": eff}
        base = [r for r in rows if r["setting"] == BASE]
        lines += [f"## {fit_path.parent.name} ({a.seeds} seeds; as run: node locality "
                  f"{sum(r['node_locality'] for r in base) / len(base):.1f}%, mean response "
                  f"{sum(r['mean_response_s'] for r in base) / len(base):.1f} s)", "",
                  "| setting | node locality, points | mean response |", "| --- | --- | --- |"]
        lines += [f"| {name} | {_ci(e['node_locality'], '')} | {_ci(e['mean_response_s'], '%')} |"
                  for name, e in eff.items()]
        lines.append("")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "settings.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.out / "sim-scheduler-settings.md").write_text("\n".join(lines).rstrip() + "\n")
    print("\n".join(lines))
    print(f"reproduce: {command}")


if __name__ == "__main__":
    main()
