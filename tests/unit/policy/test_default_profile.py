"""The default profile is adaptive-popular (issue 69), while the benchmarks' ``dsbra-hold`` and
``dsbra`` arms and variants keep the profiles the results committed under those names ran."""

from __future__ import annotations

from dsbra.policy.dsbra import DsbraPolicy
from dsbra.policy.profiles import DEFAULT_PROFILE, HOLD_PROFILE, PRE_HOLD_PROFILE, params_for
from dsbra.policy.registry import make_policy
from dsbra.sim.fitted import PROFILE, arm_config
from dsbra.sim.variants import VARIANTS


def test_the_default_is_adaptive_popular_for_the_daemon_plan_and_simulator():
    assert DEFAULT_PROFILE == "adaptive-popular"
    assert HOLD_PROFILE == "adaptive-hold" and PRE_HOLD_PROFILE == "adaptive"
    pol = make_policy("dsbra", delay_threshold_s=10)
    assert pol.name == "dsbra"
    assert pol.params == params_for("adaptive-popular", delay_threshold_s=10)
    # adaptive-hold's parameters, and the popularity test
    assert pol.params == params_for("adaptive-hold", delay_threshold_s=10, read_factor=2.0)
    assert pol.params.min_hold_rounds == 3 and pol.params.replica_cap_fraction == 0.75
    assert DsbraPolicy.from_profile("adaptive-hold", delay_threshold_s=10).name == "dsbra-adaptive-hold"


def test_every_dsbra_variant_names_the_profile_its_results_ran():
    assert VARIANTS["dsbra"]["params"] == {"profile": "adaptive"}
    assert VARIANTS["dsbra-hold3"]["params"] == {"profile": "adaptive", "min_hold_rounds": 3}
    assert VARIANTS["dsbra-hold"]["params"] == {"profile": "adaptive-hold"}
    assert VARIANTS["dsbra-popular"]["params"] == {"profile": DEFAULT_PROFILE}
    for name, v in VARIANTS.items():
        if v["policy"] == "dsbra":
            assert "profile" in v["params"], name


def test_the_fitted_dsbra_arms_simulate_what_the_committed_sittings_ran():
    assert PROFILE["dsbra"] == PRE_HOLD_PROFILE and PROFILE["dsbra-hold"] == "adaptive-hold"
    assert PROFILE["dsbra-popular"] == "adaptive-popular"  # run_bench_matrix.py's arm of that name
    cfg = arm_config("dsbra", model={}, slots=5, interval_s=30.0, heartbeat_s=1.0, am={},
                     binding={}, seed=0)
    assert cfg.policy_params == {"profile": "adaptive"}
