"""Policies by name: the one place that knows every policy class (the interface they share is
:mod:`dsbra.policy.api`, which knows none of them)."""

from __future__ import annotations

import dataclasses

from dsbra.errors import InputError
from dsbra.policy import baselines
from dsbra.policy import dsbra as dsbra_mod
from dsbra.policy.api import Policy
from dsbra.policy.demand import DemandPolicy
from dsbra.policy.profiles import DEFAULT_PROFILE


def make_policy(name: str, **params) -> Policy:
    """Policy by name: "static", "dsbra" (the default profile; ``profile=`` picks another),
    "dsbra-literal" (paper-literal profile), "scarlett", "dare", "dsbra-demand" (the live-demand
    rule of a fast poll, dsbra.policy.demand). Keyword arguments override parameters."""
    if name == "dsbra":
        return dsbra_mod.DsbraPolicy.from_profile(params.pop("profile", DEFAULT_PROFILE),
                                                  **params)
    if name == "dsbra-literal":
        return dsbra_mod.DsbraPolicy.from_profile("paper-literal", **params)
    baseline = {"static": baselines.StaticPolicy, "scarlett": baselines.ScarlettPolicy,
                "dare": baselines.DarePolicy, "dsbra-demand": DemandPolicy}.get(name)
    if baseline is not None:
        known = {f.name for f in dataclasses.fields(baseline) if f.init and f.name != "name"}
        unknown = sorted(set(params) - known)
        if unknown:
            raise InputError(f"policy {name!r} has no parameter {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(known)) or 'none'}")
        return baseline(**params)
    raise InputError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}")


POLICY_NAMES = ("static", "dsbra", "dsbra-literal", "scarlett", "dare", "dsbra-demand")
