"""The daemon's configuration: YAML, then ``DSBRA_*`` environment overrides, validated at start.

An override names a key path in upper case joined by ``__``: ``DSBRA_MODE=apply``,
``DSBRA_INTERVAL_S=30``, ``DSBRA_HTTP__PORT=9870``, ``DSBRA_RAILS__MAX_FILES_PER_ROUND=5``;
its value is parsed as YAML (so ``5`` is an int). Any unknown key or bad value raises a
one-line ConfigError naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path

import yaml

from dsbra.act.health import HealthLimits
from dsbra.errors import ConfigError, InputError
from dsbra.experiment.config import ExperimentConfig
from dsbra.hadoop.rest import split_urls
from dsbra.policy.rails import Rails
from dsbra.validate import at_least, in_range, one_of

MODES = ("dry-run", "apply")
DAEMON_POLICIES = ("dsbra", "scarlett", "dare")


@dataclass(frozen=True)
class ClusterConfig:
    #: the ResourceManager's web URL; with RM HA every RM's, as a list or comma-separated: the
    #: daemon follows the active one
    rm: str | None = None
    #: the NameNode's web (or WebHDFS) URL; with HDFS HA every NameNode's, the same way
    webhdfs: str | None = None
    jhs: str | None = None
    user: str | None = None
    kerberos: bool = False
    kerberos_principal: str | None = None  #: None = the ticket cache's default principal
    kerberos_mutual_auth: str = "OPTIONAL"  #: REQUIRED, OPTIONAL or DISABLED
    #: log in as kerberos_principal from this keytab (kept valid across ticket expiry); null:
    #: a ticket cache someone else keeps fresh (kinit, k5start)
    keytab: str | None = None
    ca_bundle: str | None = None
    #: apply mode: one acting dsbra per cluster, by this file in HDFS (null: no cluster lock)
    lock_path: str | None = "/system/dsbra.id"
    #: the Capacity Scheduler's node-locality-delay, when the RM's /conf does not show it
    #: (null: the RM's value, else Hadoop's 40; dsbra.observe.delay_threshold)
    node_locality_delay: int | None = None


@dataclass(frozen=True)
class SparkConfig:
    """Spark applications on the same YARN, read beside MapReduce's (dsbra.observe.spark)."""

    enabled: bool = True
    #: the Spark History Server's URL, where a finished application's tasks are read; null:
    #: each running one as the ResourceManager's proxy last showed it
    history: str | None = None
    #: the NameNode's audit log, a local file on its host (with hadoop.caller.context.enabled:
    #: which task opened which file); null: Spark's tasks are counted, not mapped to blocks
    audit_log: str | None = None
    #: an executor's core idle this long while a task was pending elsewhere means its task set
    #: declined it for locality (benchmarks/validate_spark_waits.py)
    min_idle_s: float = 0.5


def bundled_spark_section(env: dict) -> dict:
    """The ``spark:`` section for a bundled cluster started with --spark (else Spark off)."""
    if not env.get("spark_history"):
        return {"enabled": False}
    return {"history": env["spark_history"], "audit_log": next(iter(env["audit_logs"].values()))}


def bundled_cluster_section(env: dict) -> dict:
    """The ``cluster:`` section for the bundled cluster whose ``dsbra cluster env --json`` is
    ``env``: every NameNode's and ResourceManager's URL (the daemon follows the active ones)
    and the JobHistoryServer's; as root on a plain cluster, with --kerberos as dsbra's
    principal from its keytab, with --tls trusting the cluster's CA."""
    section = {"rm": env["rm"], "webhdfs": env["namenode"], "jhs": env["jhs"]}
    krb = env.get("kerberos")
    if krb:
        section |= {"kerberos": True, "kerberos_principal": krb["principal"],
                    "keytab": krb["keytab"]}
    else:
        section["user"] = "root"
    if env.get("ca_bundle"):
        section["ca_bundle"] = env["ca_bundle"]
    return section


@dataclass(frozen=True)
class PolicyConfig:
    #: dsbra, or a baseline to compare it with on the same cluster: scarlett, dare
    name: str = "dsbra"
    profile: str | None = None  #: DSBRA's profile; None = the policy engine's default profile
    params: dict = field(default_factory=dict)


#: the daemon's rails unless its config says otherwise: the policy's own maximum replication,
#: and at most 10 files and 20 new replicas a round
DAEMON_RAILS = Rails(max_files_per_round=10, max_replicas_per_round=20)


@dataclass(frozen=True)
class MapRecordsConfig:
    """The observed maps kept under state_dir/maps for ``dsbra impact`` (dsbra.experiment.records)."""

    enabled: bool = True
    max_age_days: float = 30.0
    max_bytes: int = 1 << 30


@dataclass(frozen=True)
class HttpConfig:
    host: str = "127.0.0.1"
    port: int = 9780
    enabled: bool = True


@dataclass(frozen=True)
class PlacementConfig:
    """The heat document the NameNode's placement plugin reads (placement/, docs/placement.md)."""

    #: where each round's heat document is written (null: state_dir/heat.json); also at /heat
    heat_file: str | None = None
    #: seconds between publishing a round's heat and acting on it, so that the plugin has read
    #: it (its dsbra.placement.heat.refresh.ms) before the NameNode picks the nodes that gain
    #: or lose a replica; 0 when no plugin reads it
    lead_s: float = 0.0


@dataclass(frozen=True)
class DemandConfig:
    """The fast poll (issue 68; dsbra.daemon.fastpoll): every ``poll_s`` within a round, the
    running jobs' pending maps, and the live-demand rule (dsbra.policy.demand) raising a file
    whose maps its holders cannot serve within D, through the round's rails and journal. Off
    by default: in the simulator it does not beat the default rounds (docs/algorithm.md)."""

    enabled: bool = False
    poll_s: float = 5.0
    #: due maps beyond what a block's holders serve within D before it is raised
    min_shortfall: float = 0.25
    #: fast polls without a pending map before one of the extra replicas it added goes
    idle_polls: int = 10
    max_replication: int = 10
    #: D of the rule (null: the scheduler's, as the rounds take it)
    delay_threshold_s: float | None = None


@dataclass(frozen=True)
class Config:
    mode: str = "dry-run"
    interval_s: float = 60.0
    poll_s: float = 5.0
    state_dir: str = "/var/lib/dsbra"
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    rails: Rails = field(default_factory=lambda: DAEMON_RAILS)
    health: HealthLimits = field(default_factory=HealthLimits)
    http: HttpConfig = field(default_factory=HttpConfig)
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    map_records: MapRecordsConfig = field(default_factory=MapRecordsConfig)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    demand: DemandConfig = field(default_factory=DemandConfig)

    @property
    def apply(self) -> bool:
        return self.mode == "apply"


def load_config(path: str | os.PathLike | None, env: dict | None = None,
                overrides: dict | None = None) -> Config:
    """File, then environment, then ``overrides`` (CLI flags), validated into a Config."""
    raw: dict = {}
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError(f"config {path}: {exc.strerror}") from None
        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            raise ConfigError(f"config {path} is not valid YAML{where}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"config {path}: the top level must be a mapping")
    env = os.environ if env is None else env
    for name, value in sorted(env.items()):
        if not name.startswith("DSBRA_") or name in _FOREIGN_ENV:
            continue
        keys = name[len("DSBRA_"):].lower().split("__")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"environment {name}: value is not valid YAML") from None
        _set(raw, keys, parsed, where=f"environment {name}")
    for dotted, value in (overrides or {}).items():
        _set(raw, dotted.split("."), value, where=f"option {dotted}")
    return _build(Config(), raw, "")


# DSBRA_ variables other parts of dsbra read; they are not config overrides
_FOREIGN_ENV = {"DSBRA_RM_URL", "DSBRA_WEBHDFS_URL", "DSBRA_JHS_URL", "DSBRA_HDFS_USER",
                "DSBRA_STATE_DIR", "DSBRA_TEST_CLUSTER", "DSBRA_TEST_WORKERS", "DSBRA_CONFIG",
                "DSBRA_ROOT", "DSBRA_HADOOP_DIR", "DSBRA_PLACEMENT_DIR", "DSBRA_MAVEN_REPO",
                "DSBRA_MAVEN_LOCAL_REPO", "DSBRA_WORKERS", "DSBRA_TEST_SLOT"}


def _set(raw: dict, keys: list[str], value, where: str) -> None:
    node = raw
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{where}: {'.'.join(keys)} is not under a mapping")
    node[keys[-1]] = value


def _build(default, raw, prefix: str):
    """``default`` (a section with its defaults, the daemon's own, as its rails) with the
    mapping ``raw``'s keys set."""
    if not isinstance(raw, dict):
        raise ConfigError(f"config: {prefix.rstrip('.') or 'top level'} must be a mapping, "
                          f"got {raw!r}")
    known = {f.name: f for f in fields(default)}
    for key in raw:
        if key not in known:
            raise ConfigError(f"config: unknown key {prefix}{key}; known: "
                              f"{', '.join(sorted(known))}")
    kw = {}
    for name, f in known.items():
        if name not in raw:
            continue
        v, key = raw[name], prefix + name
        if key in URL_LISTS and isinstance(v, list):
            if not v or not all(isinstance(u, str) and u for u in v):
                raise ConfigError(f"config: {key} must be a URL or a list of URLs, got {v!r}")
            v = ",".join(v)
        section = getattr(default, name)
        kw[name] = _build(section, v, key + ".") if is_dataclass(section) else _check(key, f.type, v)
    try:
        obj = replace(default, **kw)
    except TypeError as exc:
        raise ConfigError(f"config: {prefix.rstrip('.')}: {exc}") from None
    except InputError as exc:  # the section's own validation, e.g. the rails'
        raise ConfigError(f"config: {prefix}{exc}") from None
    return _validate(obj, prefix)


#: keys taking several URLs (the NameNodes or ResourceManagers of an HA cluster): a YAML list
#: is kept comma-joined, the form an environment override gives
URL_LISTS = {"cluster.rm", "cluster.webhdfs"}

def _check(key: str, typ: str, v):
    bad = ConfigError(f"config: {key} must be {_TYPE_WORDS.get(typ, typ)}, got {v!r}")
    optional = "None" in typ
    if v is None:
        if optional:
            return None
        raise bad
    base = typ.replace(" | None", "")
    if base == "bool":
        if not isinstance(v, bool):
            raise bad
    elif base == "int":
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise bad
    elif base == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0:
            raise bad
        v = float(v)
    elif base == "str":
        if not isinstance(v, str) or not v:
            raise bad
    elif base == "dict":
        if not isinstance(v, dict):
            raise bad
    elif base == "tuple[str, ...]":
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise bad
        v = tuple(v)
    return v


_TYPE_WORDS = {"int": "a non-negative integer", "int | None": "a non-negative integer or null",
               "float": "a non-negative number", "str": "a non-empty string",
               "str | None": "a string or null", "bool": "true or false",
               "dict": "a mapping", "tuple[str, ...]": "a list of strings"}


def _validate(obj, prefix: str):
    if isinstance(obj, Config):
        one_of("config: mode", obj.mode, MODES, error=ConfigError)
        at_least("config: interval_s", obj.interval_s, 1, error=ConfigError)
        if obj.poll_s <= 0 or obj.poll_s > obj.interval_s:
            raise ConfigError(f"config: poll_s must be in (0, interval_s], got {obj.poll_s}")
        if obj.demand.enabled and obj.demand.poll_s > obj.interval_s:
            raise ConfigError(f"config: demand.poll_s must be in (0, interval_s], got "
                              f"{obj.demand.poll_s}")
    elif isinstance(obj, DemandConfig):
        from dsbra.policy.demand import DemandPolicy

        if obj.poll_s <= 0:
            raise ConfigError(f"config: demand.poll_s must be in (0, interval_s], got {obj.poll_s}")

        try:  # D comes from the scheduler at run time; any positive stand-in checks the rest
            DemandPolicy(obj.delay_threshold_s if obj.delay_threshold_s is not None else 1.0,
                         max_replication=obj.max_replication, min_shortfall=obj.min_shortfall,
                         idle_polls=obj.idle_polls)
        except InputError as exc:
            raise ConfigError(f"config: demand.{exc}") from None
    elif isinstance(obj, PolicyConfig):
        from dsbra.policy.profiles import PARAM_NAMES, PROFILES
        from dsbra.policy.registry import make_policy

        one_of("config: policy.name", obj.name, DAEMON_POLICIES, error=ConfigError)
        if obj.name != "dsbra":
            if obj.profile is not None:
                raise ConfigError(f"config: policy.profile is DSBRA's; policy.name {obj.name} "
                                  "takes none")
            try:
                make_policy(obj.name, **obj.params)
            except Exception as exc:  # the baseline's own validation names the parameter
                raise ConfigError(f"config: policy.params: {exc}") from None
            return obj
        if obj.profile is not None:
            one_of("config: policy.profile", obj.profile, sorted(PROFILES), error=ConfigError)
        for k in obj.params:
            if k not in PARAM_NAMES:
                raise ConfigError(f"config: unknown key policy.params.{k}")
        try:
            from dsbra.policy.profiles import DEFAULT_PROFILE, params_for

            # D comes from the scheduler at run time; any positive stand-in validates the rest
            params_for(obj.profile or DEFAULT_PROFILE,
                       **{"delay_threshold_s": 1.0, **obj.params}).validated()
        except Exception as exc:  # the engine's own validation names the parameter
            raise ConfigError(f"config: policy.params: {exc}") from None
    elif isinstance(obj, ExperimentConfig):
        try:
            obj.validated()
        except ConfigError as exc:
            raise ConfigError(f"config: {exc}") from None
    elif isinstance(obj, MapRecordsConfig):
        if obj.max_age_days <= 0 or obj.max_bytes <= 0:
            raise ConfigError("config: map_records.max_age_days and map_records.max_bytes must "
                              "be > 0 (map_records.enabled: false keeps none)")
    elif isinstance(obj, SparkConfig):
        if obj.history is not None and not obj.history.startswith(("http://", "https://")):
            raise ConfigError(f"config: spark.history must be an http(s) URL or null, got {obj.history!r}")
        at_least("config: spark.min_idle_s", obj.min_idle_s, 0.0, error=ConfigError)
    elif isinstance(obj, HttpConfig):
        in_range("config: http.port", obj.port, 0, 65535, error=ConfigError)
    elif isinstance(obj, ClusterConfig):
        for k in ("rm", "webhdfs", "jhs"):
            v = getattr(obj, k)
            urls = split_urls(v) if v is not None and f"cluster.{k}" in URL_LISTS else [v]
            for url in urls:
                if url is not None and not url.startswith(("http://", "https://")):
                    raise ConfigError(f"config: cluster.{k} must be an http(s) URL"
                                      f"{' or several' if len(urls) > 1 else ''}, got {url!r}")
            if v is not None and not urls:
                raise ConfigError(f"config: cluster.{k} names no URL, got {v!r}")
        from dsbra.hadoop.auth import MUTUAL_AUTH

        one_of("config: cluster.kerberos_mutual_auth", obj.kerberos_mutual_auth, MUTUAL_AUTH,
               error=ConfigError)
        if obj.lock_path is not None and not obj.lock_path.startswith("/"):
            raise ConfigError(f"config: cluster.lock_path must be an absolute HDFS path or null, "
                              f"got {obj.lock_path!r}")
        if obj.keytab is not None and not (obj.kerberos and obj.kerberos_principal):
            raise ConfigError("config: cluster.keytab needs cluster.kerberos: true and the "
                              "principal to log in as, cluster.kerberos_principal")
        if obj.ca_bundle is not None and not Path(obj.ca_bundle).is_file():
            raise ConfigError(f"config: cluster.ca_bundle {obj.ca_bundle!r} is not a file")
    return obj
