"""`dsbra conf check --advise`: the live settings that cost node locality, and what changing them
was measured to be worth.

Each rule reads the ResourceManager's effective configuration (its /conf, which also shows the
mapred-site.xml on its class path) and, where the live value is one the measurements speak
against, says what to change and what the change was worth in the simulator fitted to real
sittings of the bundled cluster and on that cluster itself. A setting is advised on only where
the simulator's intervals exclude zero (so not multiple assignment per heartbeat); the real
figures are quoted as measured, separated from zero or not. Pure: a configuration in, advice out.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsbra.hadoop import shapes
from dsbra.observe.collector import AM_HEARTBEAT_KEY
from dsbra.observe.delay_threshold import settings_from_conf

#: the AM heartbeat the simulator and a sitting measured against the bundled cluster's 500 ms
AM_HEARTBEAT_ADVISED_MS = 100

# What each change was measured to be worth (static replication; node locality in points, mean
# response in percent; 95% intervals). Simulator: benchmarks/sim_scheduler_settings.py on the
# fits of three real sittings, 20 seeds each (benchmarks/results/sim-scheduler-settings/).
# Multiple assignment per heartbeat is not advised on: the simulator does not separate it from
# one container per heartbeat on any fit (-1.2 [-3.1, +0.7], -2.1 [-4.2, +0.1], +0.0 [-3.8, +3.8]).
DELAY_OFF_SIM = ("delay off costs -16.5 [-18.4, -14.7], -15.4 [-17.3, -13.4] and -9.8 [-13.7, -5.9] "
                 "points of node locality against a 10 s delay on three fitted sittings")
DELAY_OFF_REAL = ("not separated: the bundled cluster ran 73.4 +- 5.5% of its maps node-local with the "
                  "delay off and 77.1 +- 14.9% with it on (3 and 4 unpaired runs, 2026-11-23/24, "
                  "docs/benchmark.md section 6)")
AM_HEARTBEAT_SIM = ("100 ms instead of 500 gains +5.0 [+3.7, +6.2], +4.0 [+2.5, +5.6] and +2.8 [-0.3, +6.0] "
                    "points of node locality and -10.3%, -7.3% and -6.6% mean response, every response "
                    "interval excluding 0")
AM_HEARTBEAT_REAL = ("not separated: +2.4 points [-1.1, +5.8] and -9.1% mean response [-45.9, +27.7] over "
                     "3 pairs (2026-11-28, docs/benchmark.md section 7)")


@dataclass(frozen=True)
class Advice:
    setting: str
    live: str
    change: str
    simulator: str  #: the change's measured effect in the fitted simulator
    real: str  #: and on the bundled cluster

    def lines(self) -> list[str]:
        return [f"{self.setting} is {self.live}: {self.change}", f"  simulator: {self.simulator}",
                f"  real cluster: {self.real}"]


def advise(rm_conf: dict[str, str]) -> list[Advice]:
    """The advice for a live ResourceManager configuration (its /conf as key -> value)."""
    out: list[Advice] = []
    scheduler = settings_from_conf(rm_conf, nodes=1)
    if scheduler.scheduler.endswith("FairScheduler") and not scheduler.delay_scheduling:
        out.append(Advice(
            "delay scheduling (yarn.scheduler.fair.locality.threshold.node; with continuous "
            "scheduling yarn.scheduler.fair.locality-delay-node-ms)", "off",
            "turn it on (`dsbra conf delay` sizes it for your jobs)", DELAY_OFF_SIM, DELAY_OFF_REAL))
    am_ms = shapes.as_float(rm_conf.get(AM_HEARTBEAT_KEY), None)
    if am_ms is not None and am_ms > AM_HEARTBEAT_ADVISED_MS:
        out.append(Advice(AM_HEARTBEAT_KEY, f"{am_ms:g} ms",
                          f"set it to {AM_HEARTBEAT_ADVISED_MS} ms in the jobs' mapred-site.xml (the "
                          "ApplicationMaster sends its asks and binds its containers at this beat)",
                          AM_HEARTBEAT_SIM, AM_HEARTBEAT_REAL))
    return out
