"""DSBRA's parameters and its named profiles.

The paper (Suresh & Gopalan 2015, eq. 1 and Algorithm-1) is self-contradictory in two places
(see docs/algorithm.md); each reading is a parameter, and the profiles fix them:

- ``adaptive`` (default): k = 1, GAvg over the active blocks, thresholds taken from each window
  (delay pressure N x RF against the window's mean, replicas sized by demand, a storage budget),
  as the paper advises tuning them to load, delay threshold and popularity; measured against
  the simulator's oracle in docs/algorithm.md.
- ``adaptive-20s``: ``adaptive`` for 20 s rounds (daemon ``interval_s: 20``) on the observed
  signals: lower pressure floor and factor, more holders per hot block.
- ``calibrated``: k = 1, GAvg over the active blocks, the paper's fixed thresholds. Measured:
  it hardly ever replicates (most active blocks are barely delayed, GAvg stays under the gate).
- ``paper-literal``: k = 2 (eq. 1 as printed), GAvg over all blocks. Provably never replicates
  when waits are capped at D (RF <= 1/3 < GAvg + 0.2 whenever GAvg > 0.2).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from dsbra.errors import InputError
from dsbra.validate import above, at_least, at_most, in_range, one_of

GAVG_SCOPES = ("all", "active")
PLACEMENT_ORDERS = ("ascending", "descending")
THRESHOLDS = ("fixed", "adaptive")
CO_READ_PLACEMENTS = ("near", "away")
MAX_HOT_WINDOW = 8  #: rounds of hot history a block's state keeps (BlockState.hot_history)


@dataclass(frozen=True)
class DsbraParams:
    """Every threshold of one DSBRA round.

    ``delay_threshold_s`` D: the scheduler's node-locality delay, seconds (> 0; from the
    cluster's scheduler configuration, no default).
    ``alpha``: weight of the current window X_i against the history Y_i.
    ``rf_divisor`` k: RF_i = (alpha X_i + (1 - alpha) Y_i) / k.
    ``gavg_scope``: "all" blocks, or "active" ones (read in the window, or Y_i > 0 before it).
    ``gate``: GAvg <= gate -> dereplicate only. ``cold_low``: RF threshold for that case.
    ``cold_high``: RF threshold for dereplication when GAvg > gate.
    ``hot_margin``: RF_i > GAvg + hot_margin -> hot. ``step``: one replica per ``step`` of
    RF_i - GAvg. ``max_replication``: never place past min(this, live nodes).
    ``placement_order``: "ascending" DNAvg (least heated first; the text) or "descending"
    (Algorithm-1 as printed).

    ``thresholds``: "fixed" = steps 6-7 with the paper's absolute thresholds above; "adaptive" =
    thresholds relative to this window (see :func:`dsbra.policy.dsbra.adaptive_actions`), which
    use these instead of gate / cold / hot_margin / step:
    ``hot_factor``: a block is hot when its delay pressure N_i RF_i exceeds this many times the
    mean pressure of the blocks read in the window, ``min_pressure``: and at least this much
    (delayed-map equivalents), ``min_reads``: and read by at least this many maps in the window
    (a block read once is no evidence of popularity, yet its one delayed map can reach the
    floor of a small window), ``read_factor``: and read at least this many times as often as
    the window's average read block, or as often as its most read one (None = off; a window
    that reads one file's blocks alike raises them as before): a block whose one or two
    readers waited is unlucky, not popular, however its pressure compares, and each copy it
    gets costs a block's transfer on its holders' links (docs/spark.md, "Cold files").
    ``holder_share``: a hot block gets enough replicas that its maps would take at most this
    share of its holders' slots (sized from the window's maps per node); an extra replica goes
    when the block's demand no longer needs it.
    ``budget_fraction``: extra replicas' bytes at most this fraction of the base bytes
    (hottest first; None = no budget).

    Hysteresis and a replica cap (adaptive thresholds only; the defaults change nothing):
    ``hot_rounds`` / ``hot_window``: a block at base replication is raised only when it was hot
    in at least ``hot_rounds`` of the last ``hot_window`` rounds (this one included; at most 8);
    one round's evidence is not enough. A block already above base is not held back (it proved
    itself already). ``confirm_bypass``: a block whose pressure is at least this many times
    the round's hot threshold grows on one round's evidence (None = never; every block then
    waits for hot_rounds). ``min_hold_rounds``: an extra replica stays until its block has gone this
    many rounds in a row without being hot (this one included), so a copy is kept long enough
    to pay for itself. ``replica_cap_fraction``: a hot block grows to at most
    max(ceil(fraction x live nodes), racks, its base + 1) replicas (within max_replication and
    the live nodes), not to every worker; None = no such cap. ``replicas_per_read``: a hot
    block grows to at most max(base + 1, ceil(replicas_per_read x N_i)) replicas, N_i its maps in
    the window (within the other ceilings): each map reading it needs one holder, and on YARN a
    holder past its readers only earns its jobs containers that their ApplicationMasters hand to
    other maps off their data; the bound follows demand, not the cluster's size; None = off.

    What a hot block's jobs read with it (the round input's ``job_indptr``/``job_blocks``;
    without them these change nothing; both off by default). On YARN a job is granted
    containers where its asks are, and its ApplicationMaster hands a container to any map it
    has pending, so a hot block's new replicas move its job's other maps too:
    ``co_read_placement``: a hot block's new replicas go first to the nodes that hold the most
    replicas of the blocks its window's jobs read with it ("near": a container granted there
    serves either map locally) or the fewest ("away": its maps leave those nodes to the
    others); None = the coolest nodes, as DSBRA places. ``co_read_share``: a block read by at
    least this share of a hot block's jobs in the window grows beside it, to the hot block's
    target replication (rule ``co-read``; outside ``budget_fraction``), and keeps those
    replicas while the hot block is hot; None = off.
    """

    delay_threshold_s: float | None = None
    alpha: float = 0.5
    rf_divisor: float = 1.0
    gavg_scope: str = "active"
    gate: float = 0.2
    cold_low: float = 0.1
    cold_high: float = 0.2
    hot_margin: float = 0.2
    step: float = 0.2
    max_replication: int = 10
    placement_order: str = "ascending"
    thresholds: str = "fixed"
    hot_factor: float = 3.0
    min_pressure: float = 1.0
    min_reads: int = 1
    read_factor: float | None = None
    holder_share: float = 0.5
    budget_fraction: float | None = None
    hot_rounds: int = 1
    hot_window: int = 1
    confirm_bypass: float | None = None
    min_hold_rounds: int = 0
    replica_cap_fraction: float | None = None
    replicas_per_read: float | None = None
    co_read_placement: str | None = None
    co_read_share: float | None = None

    def validated(self) -> DsbraParams:
        """Self, after checking every value; raises InputError naming the bad one."""
        d = self.delay_threshold_s
        if d is None:
            raise InputError("missing parameter delay_threshold_s (the scheduler's node-locality"
                             " delay D, seconds)")
        above("delay_threshold_s", d, 0)
        in_range("alpha", self.alpha, 0, 1)
        for name in ("rf_divisor", "step"):
            above(name, getattr(self, name), 0)
        for name in ("gate", "cold_low", "cold_high", "hot_margin", "hot_factor",
                     "min_pressure"):
            at_least(name, getattr(self, name), 0)
        for name, low in (("max_replication", 1), ("min_reads", 1), ("hot_rounds", 1),
                          ("hot_window", 1), ("min_hold_rounds", 0)):
            at_least(name, getattr(self, name), low, integer=True)
        at_most("hot_window", self.hot_window, MAX_HOT_WINDOW,
                note="the rounds a block's hot history keeps")
        # this round and the MAX_HOT_WINDOW before it, whose hot flags the history keeps
        at_most("min_hold_rounds", self.min_hold_rounds, MAX_HOT_WINDOW + 1,
                note="this round and the rounds a block's hot history keeps")
        if self.hot_rounds > self.hot_window:
            raise InputError(f"hot_rounds ({self.hot_rounds}) must be <= hot_window "
                             f"({self.hot_window})")
        at_least("confirm_bypass", self.confirm_bypass, 1, none_ok=True)
        in_range("replica_cap_fraction", self.replica_cap_fraction, 0, 1, open_low=True,
                 none_ok=True)
        above("replicas_per_read", self.replicas_per_read, 0, none_ok=True)
        above("read_factor", self.read_factor, 0, none_ok=True)
        one_of("co_read_placement", self.co_read_placement, CO_READ_PLACEMENTS, none_ok=True)
        in_range("co_read_share", self.co_read_share, 0, 1, open_low=True, none_ok=True)
        one_of("gavg_scope", self.gavg_scope, GAVG_SCOPES)
        in_range("holder_share", self.holder_share, 0, 1, open_low=True)
        at_least("budget_fraction", self.budget_fraction, 0, none_ok=True)
        one_of("thresholds", self.thresholds, THRESHOLDS)
        one_of("placement_order", self.placement_order, PLACEMENT_ORDERS)
        return self

    @property
    def reads_jobs(self) -> bool:
        """Whether a round uses the input's job CSR (the co-read options)."""
        return self.co_read_placement is not None or self.co_read_share is not None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


PROFILES: dict[str, dict] = {
    # min_pressure 0.3 with min_reads 2: a window of a few maps per node (the bundled
    # cluster's 30 s rounds) never reached a floor of 1 delayed map, while a lower floor alone
    # raised blocks read once; see docs/algorithm.md, "Short windows"
    "adaptive": {"rf_divisor": 1.0, "gavg_scope": "active", "thresholds": "adaptive",
                 "hot_factor": 2.0, "min_pressure": 0.3, "min_reads": 2, "holder_share": 0.05,
                 "budget_fraction": 0.2},
    # the adaptive round for 20 s windows on the signals the daemon derives (tuned on the
    # simulator's tuning seeds, benchmarks/tune_sweep.py --signals observed): a window a third
    # as long carries less pressure, so a lower floor and factor, and more holders per hot block
    "adaptive-20s": {"rf_divisor": 1.0, "gavg_scope": "active", "thresholds": "adaptive",
                     "hot_factor": 1.25, "min_pressure": 0.25, "holder_share": 0.01,
                     "budget_fraction": 0.2},
    "calibrated": {"rf_divisor": 1.0, "gavg_scope": "active"},
    "paper-literal": {"rf_divisor": 2.0, "gavg_scope": "all"},
}
# issue 43's candidates: the adaptive profile with hysteresis against churn (a block is raised
# when hot in 2 of the last 3 rounds, an extra replica kept until 3 rounds without heat), with a
# replica cap short of every worker (half the live nodes, at least one per rack), and both;
# measured in benchmarks/results/sim-policy-candidates/ (docs/algorithm.md)
_HYSTERESIS = {"hot_rounds": 2, "hot_window": 3, "min_hold_rounds": 3}
_CAP = {"replica_cap_fraction": 0.5}
# issue 43's choice for YARN, the default since 2026-12-02: every worker as the ceiling (HDFS's
# own dfs.replication.max, so the live nodes bound it; the constant 10 held the hot blocks back
# on the 20-node hot-spot setups), but a hot block on at most 3/4 of them (at least one per
# rack): a block on every node puts its jobs' asks on every node, and the containers granted
# there for it go to the job's other maps off their data (docs/benchmark.md 6.8); an extra
# replica kept until its block has gone 3 rounds without heat, against the churn the higher
# ceiling brings
_YARN = {"max_replication": 512, "replica_cap_fraction": 0.75, "min_hold_rounds": 3}
PROFILES.update({
    "adaptive-hysteresis": {**PROFILES["adaptive"], **_HYSTERESIS},
    "adaptive-capped": {**PROFILES["adaptive"], **_CAP},
    "adaptive-hysteresis-capped": {**PROFILES["adaptive"], **_HYSTERESIS, **_CAP},
    "adaptive-hold": {**PROFILES["adaptive"], **_YARN},
})
# issue 69's choice, the default since 2026-12-07: adaptive-hold raising only popular blocks
# (read_factor 2), not the cold ones whose one or two tasks waited in a busy shared Spark
# application (docs/spark.md "Cold files"; on the MapReduce sittings' own windows it keeps the
# hot file's raises, benchmarks/results/read-factor-real-windows)
PROFILES["adaptive-popular"] = {**PROFILES["adaptive-hold"], "read_factor": 2.0}
DEFAULT_PROFILE = "adaptive-popular"
"""The profile of ``dsbra plan``, the simulator's ``--policy dsbra`` and the daemon: since
2026-12-07 ``adaptive-popular`` (as ``adaptive-hold`` in the simulator wherever copies are
free, and it raised no cold file on Spark where the default raised 3-7 a run; docs/spark.md,
"Cold files"); 2026-12-02 to 2026-12-07 ``adaptive-hold`` (HOLD_PROFILE), before it
``adaptive`` (PRE_HOLD_PROFILE), which the benchmarks' ``dsbra-hold`` and ``dsbra`` variants
and arms still name."""
HOLD_PROFILE = "adaptive-hold"
"""The default from 2026-12-02 to 2026-12-07: what the simulator's and the bench's
``dsbra-hold`` variant and arm run, so the results committed under that name still
reproduce."""
PRE_HOLD_PROFILE = "adaptive"
"""The default until 2026-12-02: what the simulator's and the bench's ``dsbra`` variant and arm
run, so the results committed under that name still reproduce."""

PARAM_NAMES = tuple(f.name for f in dataclasses.fields(DsbraParams))


def params_for(profile: str = DEFAULT_PROFILE, **overrides) -> DsbraParams:
    """The profile's parameters with ``overrides`` on top, validated."""
    if profile not in PROFILES:
        raise InputError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    unknown = sorted(set(overrides) - set(PARAM_NAMES))
    if unknown:
        raise InputError(f"unknown parameter {unknown[0]!r}; known: {', '.join(PARAM_NAMES)}")
    values = {**PROFILES[profile], **overrides}
    for key in ("max_replication", "min_reads", "hot_rounds", "hot_window", "min_hold_rounds"):
        if isinstance(values.get(key), float) and values[key].is_integer():
            values[key] = int(values[key])
    return DsbraParams(**values).validated()


def parse_assignments(pairs: tuple[str, ...], option: str,
                      known: tuple[str, ...] | None = None) -> dict:
    """``KEY=VALUE`` command-line pairs -> dict; VALUE is JSON when it parses, else a string."""
    out = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"{option} expects KEY=VALUE, got {pair!r}")
        if known is not None and key not in known:
            raise InputError(f"{option}: unknown parameter {key!r}; known: {', '.join(known)}")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out
