"""What the scheduler's locality settings are worth in the simulator, on the bundled cluster as
compare_sim_real.py fitted it to a real sitting: static replication under the settings the
sitting ran (D = 10 s time-based delay, one container per node heartbeat, the AM heartbeat at
0.5 s) and under each change `dsbra conf check` can advise on, paired by seed.

benchmarks/sim_scheduler_settings.py drives it; `dsbra conf check` quotes its committed
result (dsbra.conf.advice)."""

from __future__ import annotations

import numpy as np

from dsbra.sim.config import BUNDLED_AM_HEARTBEAT_S
from dsbra.sim.fitted import INTERVAL_S, arm_config
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.stats import t_interval

#: each setting: (replay arm, changes to the fitted cluster); "as run" is the pairs' base
SETTINGS = {
    "as run": ("static", {}),
    "delay off": ("static-nodelay", {}),
    "assign multiple": ("static", {"assign_multiple": True}),
    "AM heartbeat 0.1 s": ("static", {"am_heartbeat_s": 0.1}),
    "AM heartbeat 1 s": ("static", {"am_heartbeat_s": 1.0}),
}
BASE = "as run"


def run_setting(fit: dict, setting: str, seed: int) -> dict:
    arm, changes = SETTINGS[setting]
    binding = {"binding": "yarn-mr", "am_heartbeat_s": BUNDLED_AM_HEARTBEAT_S, **changes}
    cfg = arm_config(arm, fit["model"], fit["slots"], INTERVAL_S, fit["heartbeat_s"], fit["am"],
                     binding, seed)
    res = simulate(cfg, WorkloadSpec(source=f"schedule:{fit['schedule']}"))
    local = np.asarray(res.tasks["locality"]) == 0
    return {"setting": setting, "seed": seed, "node_locality": 100 * float(local.mean()),
            "mean_response_s": res.summary["mean_response_s"]}


def effects(rows: list[dict]) -> dict[str, dict[str, dict | None]]:
    """Each setting against "as run" on the same seed: node locality in points and mean response
    in percent, mean and 95% t-interval."""
    by = {(r["setting"], r["seed"]): r for r in rows}
    out = {}
    for setting in SETTINGS:
        if setting == BASE:
            continue
        seeds = sorted(s for (name, s) in by if name == setting and (BASE, s) in by)
        diffs = {"node_locality": [by[(setting, s)]["node_locality"] - by[(BASE, s)]["node_locality"]
                                   for s in seeds],
                 "mean_response_s": [100 * (by[(setting, s)]["mean_response_s"] / by[(BASE, s)]["mean_response_s"] - 1)
                                     for s in seeds]}
        out[setting] = {k: (None if (ci := t_interval(v)) is None else dict(zip(("mean", "low", "high"), ci)))
                        for k, v in diffs.items()}
    return out
