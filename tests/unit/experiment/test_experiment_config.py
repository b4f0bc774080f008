"""One ExperimentConfig: the daemon's ``experiment:`` section and the simulator's
``SimConfig.experiment`` are the same class, checked by the same rules."""

from __future__ import annotations

import pytest

from dsbra.daemon.config import load_config
from dsbra.errors import ConfigError
from dsbra.experiment.config import ExperimentConfig
from dsbra.sim.config import SimConfig

SIM = dict(nodes=4, racks=2, policy="dsbra")


def test_the_daemon_and_the_simulator_take_the_same_experiment():
    daemon = load_config(None, env={"DSBRA_EXPERIMENT__DESIGN": "switchback",
                                    "DSBRA_EXPERIMENT__SEED": "3"}).experiment
    sim = SimConfig(**SIM, experiment=ExperimentConfig(design="switchback", seed=3)).validated()
    assert daemon == sim.experiment and daemon.switchback
    assert load_config(None, env={}).experiment == SimConfig().experiment == ExperimentConfig()
    assert not ExperimentConfig().switchback and not ExperimentConfig().holdout  # no experiment
    assert SimConfig().as_dict()["experiment"] == {
        "design": "holdout", "holdout": 0.0, "seed": 0, "period_s": 3600.0, "burn_in_s": 600.0,
        "guard": False, "guard_margin": 0.05}


@pytest.mark.parametrize("experiment, env, message", [
    (dict(holdout=1.5), {"HOLDOUT": "1.5"}, "experiment.holdout must be in [0, 1], got 1.5"),
    (dict(design="abtest"), {"DESIGN": "abtest"},
     "experiment.design must be one of holdout, switchback, got 'abtest'"),
    (dict(guard=True), {"GUARD": "true"},
     "experiment.guard reads the switchback's estimate; set experiment.design to switchback"),
    (dict(burn_in_s=3600.0), {"BURN_IN_S": "3600"},
     "experiment.period_s must be > 0 and experiment.burn_in_s in [0, period_s), got 3600.0 "
     "and 3600.0"),
])
def test_one_message_per_rule_in_the_daemon_and_the_simulator(experiment, env, message):
    with pytest.raises(ConfigError) as daemon:
        load_config(None, env={f"DSBRA_EXPERIMENT__{k}": v for k, v in env.items()})
    with pytest.raises(ConfigError) as sim:
        SimConfig(**SIM, experiment=ExperimentConfig(**experiment)).validated()
    assert str(daemon.value) == f"config: {message}" and str(sim.value) == message
