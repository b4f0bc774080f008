"""The simulator's named policy arms (variants): a policy, its parameters, delay scheduling
(``hfs``: the Fair Scheduler's time-based waits; ``yarn``: YARN's count-based rule; None: off)
and what else the arm changes (the round, the signals, the cluster). benchmarks/run_sim_matrix.py
runs them on every setup of dsbra.sim.setups; benchmarks/sim_candidates_fitted.py on the setup
fitted to a real sitting. ``small_only``: run on the small setups alone."""

from __future__ import annotations

from dsbra.policy.profiles import DEFAULT_PROFILE, HOLD_PROFILE, PRE_HOLD_PROFILE

VARIANTS = {
    "static-nodelay": {"policy": "static", "delay": None},
    "static": {"policy": "static", "delay": "hfs"},
    # every block node-local on every node from the start: the limit replication can reach
    "oracle": {"policy": "oracle", "delay": "hfs"},
    # the limit of a policy that reacts: every block on every node, instantly and for free,
    # once a job asking for it is submitted (later jobs find it local everywhere)
    "oracle-reactive": {"policy": "oracle-reactive", "delay": "hfs"},
    # ... copying only blocks asked for by a 3rd / 10th job: its storage against its gain
    "oracle-reactive3": {"policy": "oracle-reactive", "delay": "hfs", "small_only": True,
                         "params": {"min_jobs": 3}},
    "oracle-reactive10": {"policy": "oracle-reactive", "delay": "hfs", "small_only": True,
                          "params": {"min_jobs": 10}},
    "dsbra": {"policy": "dsbra", "delay": "hfs"},  # the adaptive profile (see below)
    "dsbra-calibrated": {"policy": "dsbra", "delay": "hfs", "params": {"profile": "calibrated"}},
    "dsbra-literal": {"policy": "dsbra-literal", "delay": "hfs"},
    "scarlett": {"policy": "scarlett", "delay": "hfs"},
    "dare": {"policy": "dare", "delay": "hfs"},
    # YARN's count-based delay (locality.threshold.node = rack = 1.0: skip up to one
    # opportunity per node), small setups only
    "static-yarn": {"policy": "static", "delay": "yarn", "small_only": True},
    "dsbra-yarn": {"policy": "dsbra", "delay": "yarn", "small_only": True},
    # ablation, not a profile: the calibrated profile's gate opened (gate 0, hot margin 0.1)
    "dsbra-gate0": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                    "params": {"profile": "calibrated", "gate": 0.0, "hot_margin": 0.1}},
    # the frontier of the default profile: fewer / more replicas per hot block, and Scarlett
    # with the default profile's storage budget
    "dsbra-share0.2": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                       "params": {"holder_share": 0.2}},
    "dsbra-share0.01": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                        "params": {"holder_share": 0.01}},
    "dsbra-budget0.005": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                          "params": {"budget_fraction": 0.005}},
    "scarlett-budget0.2": {"policy": "scarlett", "delay": "hfs", "small_only": True,
                           "params": {"budget_fraction": 0.2}},
    # a policy round every 20 s instead of 60 s: hot spots that move every few minutes are
    # caught sooner; the default profile with its pressure floor scaled to the shorter window
    "dsbra-20s": {"policy": "dsbra", "delay": "hfs", "small_only": True, "interval_s": 20.0,
                  "params": {"min_pressure": 0.5, "hot_factor": 1.5}},
    "scarlett-20s": {"policy": "scarlett", "delay": "hfs", "small_only": True,
                     "interval_s": 20.0},
    "dare-20s": {"policy": "dare", "delay": "hfs", "small_only": True, "interval_s": 20.0},
    # the adaptive-20s profile (the best of benchmarks/tune_sweep.py --signals observed on the
    # tuning seeds) in 20 s rounds, on both kinds of signals
    "dsbra-20s-tuned": {"policy": "dsbra", "delay": "hfs", "small_only": True, "interval_s": 20.0,
                        "params": {"profile": "adaptive-20s"}},
    "dsbra-20s-tuned-observed": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                                 "interval_s": 20.0, "signals": "observed",
                                 "params": {"profile": "adaptive-20s"}},
    # the policy fed the signals the daemon would derive on a real cluster (dsbra.signals rule)
    "dsbra-observed": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                       "signals": "observed"},
    "dsbra-calibrated-observed": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                                  "signals": "observed", "params": {"profile": "calibrated"}},
    # issue 43's candidates (docs/algorithm.md, "Candidates"): hysteresis against churn, a
    # replica cap short of every worker, both, and each half of the hysteresis alone
    "dsbra-hysteresis": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                         "params": {"profile": "adaptive-hysteresis"}},
    "dsbra-capped": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                     "params": {"profile": "adaptive-capped"}},
    "dsbra-hysteresis-capped": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                                "params": {"profile": "adaptive-hysteresis-capped"}},
    "dsbra-confirm2of3": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                          "params": {"hot_rounds": 2, "hot_window": 3}},
    "dsbra-hold3": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                    "params": {"min_hold_rounds": 3}},
    "dsbra-cap0.25": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                      "params": {"replica_cap_fraction": 0.25}},
    "dsbra-hold2": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                    "params": {"min_hold_rounds": 2}},
    "dsbra-hold5": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                    "params": {"min_hold_rounds": 5}},
    # confirmation in 2 of 3 rounds, except for a block 4x past the hot threshold
    "dsbra-confirm-bypass4": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                              "params": {"hot_rounds": 2, "hot_window": 3,
                                         "confirm_bypass": 4.0}},
    # the simulator's constant ceiling (max_replication 10, half the paper cluster) lifted:
    # does the replica count bind? With it lifted, a cap at 3/4 of the live nodes
    "dsbra-maxrep20": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                       "cluster": {"max_replication": 20}},
    "dsbra-cap0.75-maxrep20": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                               "cluster": {"max_replication": 20},
                               "params": {"replica_cap_fraction": 0.75}},
    # every worker as the ceiling, with the minimum hold against the churn it brings
    "dsbra-hold3-maxrep20": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                             "cluster": {"max_replication": 20},
                             "params": {"min_hold_rounds": 3}},
    # the default of 2026-12-02 to 2026-12-07, the adaptive-hold profile (3/4 of every worker,
    # held 3 rounds), with the simulator's ceiling lifted to every node (the profile's 512, as
    # it lifts the daemon's; the engine takes the smaller of it and the nodes), on every setup
    "dsbra-hold": {"policy": "dsbra", "delay": "hfs",
                   "cluster": {"max_replication": 512}, "params": {"profile": HOLD_PROFILE}},
    # the default since 2026-12-07: adaptive-hold raising only popular blocks (read_factor 2)
    "dsbra-popular": {"policy": "dsbra", "delay": "hfs",
                      "cluster": {"max_replication": 512}, "params": {"profile": DEFAULT_PROFILE}},
    # adaptive-hold with a hot block's replicas bounded by its demand, not the cluster's size:
    # at most q holders per map that read it in the window (replicas_per_read q)
    **{f"dsbra-hold-demand{q:g}": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                                   "cluster": {"max_replication": 20},
                                   "params": {"profile": HOLD_PROFILE, "replicas_per_read": q}}
       for q in (0.5, 1.0, 2.0)},
    # adaptive-hold with a higher absolute floor on a hot block's delay pressure (min_pressure,
    # delayed-map equivalents in the window; the profile's 0.3)
    **{f"dsbra-hold-minp{m:g}": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                                 "cluster": {"max_replication": 20},
                                 "params": {"profile": HOLD_PROFILE, "min_pressure": m}}
       for m in (1.0, 2.0)},
    # adaptive-hold raising only blocks read at least f times as often as the window's average
    # read block (read_factor f): a block whose one or two readers waited is no hot spot
    **{f"dsbra-hold-reads{f:g}": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                                  "cluster": {"max_replication": 512},
                                  "params": {"profile": HOLD_PROFILE, "read_factor": f}}
       for f in (1.5, 2.0, 3.0)},
    "dsbra-hold-reads2-streams2": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                                   "cluster": {"max_replication": 512, "copy_streams": 2},
                                   "params": {"profile": HOLD_PROFILE, "read_factor": 2.0}},
    # issue 68: the live demand of a poll every 3 s (each running job's maps still pending, by
    # block; each node's free containers) raises a block whose maps due within D its holders
    # cannot serve in time, by the copies that demand needs, and lowers it once its demand is
    # gone (dsbra.policy.demand)
    "dsbra-demand": {"policy": "dsbra-demand", "delay": "hfs", "small_only": True,
                     "interval_s": 3.0, "cluster": {"max_replication": 512}},
    # ... raising from a tenth of a due map short, not a quarter: more copies for more gain
    "dsbra-demand0.1": {"policy": "dsbra-demand", "delay": "hfs", "small_only": True,
                        "interval_s": 3.0, "cluster": {"max_replication": 512},
                        "params": {"min_shortfall": 0.1}},
    # ... and the default beside it, with their copies as DataNode traffic (Hadoop's 2
    # replication streams per holder, sharing the holder's and target's disk with the maps)
    "dsbra-demand-streams2": {"policy": "dsbra-demand", "delay": "hfs", "small_only": True,
                              "interval_s": 3.0,
                              "cluster": {"max_replication": 512, "copy_streams": 2}},
    "dsbra-hold-streams2": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                            "cluster": {"max_replication": 512, "copy_streams": 2},
                            "params": {"profile": HOLD_PROFILE}},
    # what a hot block's jobs read with it: its new replicas near those blocks' holders or
    # away from them (alone, and under the cap, where the choice of nodes is wider), and the
    # blocks most of its jobs read raised beside it
    "dsbra-near": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                   "params": {"co_read_placement": "near"}},
    "dsbra-away": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                   "params": {"co_read_placement": "away"}},
    "dsbra-capped-near": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                          "params": {"profile": "adaptive-capped", "co_read_placement": "near"}},
    "dsbra-capped-away": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                          "params": {"profile": "adaptive-capped", "co_read_placement": "away"}},
    "dsbra-coread0.5": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                        "params": {"co_read_share": 0.5}},
    "dsbra-capped-coread0.5": {"policy": "dsbra", "delay": "hfs", "small_only": True,
                               "params": {"profile": "adaptive-capped", "co_read_share": 0.5}},
}
# a DSBRA variant that names no profile is the adaptive profile with its changes: the default it
# was measured as until 2026-12-02, so the results committed under its name still reproduce;
# the default after it, adaptive-hold, is ``dsbra-hold``, and the default since 2026-12-07,
# adaptive-popular, ``dsbra-popular``
for _variant in VARIANTS.values():
    if _variant["policy"] == "dsbra":
        _variant["params"] = {"profile": PRE_HOLD_PROFILE, **_variant.get("params", {})}

#: the variants that run ``dsbra-hold``'s profile with other parameters (a cap, a floor, a read
#: factor): what the scale studies judge beside the variant itself
HOLD_VARIANTS = tuple(v for v, spec in VARIANTS.items() if v != "dsbra-hold"
                      and spec.get("params", {}).get("profile") == HOLD_PROFILE)
