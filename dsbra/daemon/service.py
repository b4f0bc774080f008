"""The daemon loop: every interval, collect a window, decide, act (or not), persist, export.

One instance per state directory (an fcntl lock) and, in apply mode, one acting instance per
cluster (a lock file in HDFS, dsbra.act.cluster_lock). SIGTERM finishes the round and exits; SIGHUP
reloads the config at the next round. With ``demand.enabled``, a fast poll between the
collector's polls acts on the live demand through the same rails and journal
(dsbra.daemon.fastpoll). A ``paused`` file in the state directory (``dsbra
pause``) keeps the daemon observing and deciding but not acting. Any Hadoop failure inside a
round (RM down, NameNode unreachable, malformed reply) is a logged skip; the loop goes on.
"""

from __future__ import annotations

import collections
import dataclasses
import fcntl
import glob
import logging
import os
import signal
import socket
import threading
import time
from pathlib import Path

import numpy as np

from dsbra.act.apply import apply_plan, refusal_suffix
from dsbra.act.cluster_lock import ClusterLock
from dsbra.act.health import refusal_name, refusals
from dsbra.act.journal import SENT, Journal
from dsbra.daemon.config import Config, load_config
from dsbra.daemon.fastpoll import RECENT_DECISIONS, FastPollMemory, decide_demand, demand_input
from dsbra.daemon.page import experiment_estimate, raise_effects, read_journal
from dsbra.daemon.page import render as render_page
from dsbra.daemon.prometheus import Metrics
from dsbra.daemon.round import decide, heat_document, top_hot_files
from dsbra.errors import ConfigError, DsbraError, HadoopError, InputError, SafetyError
from dsbra.experiment.assignment import ASSIGNMENTS_FILE, Assignments, switchback_of
from dsbra.experiment.design import OFF, ON, Switchback
from dsbra.experiment.records import JOBS_DIR, MAPS_DIR, RecordStore, job_records, map_records
from dsbra.hadoop.auth import login_from_keytab, secure_session
from dsbra.hadoop.hdfs import ACCESS_REFUSED, HdfsActor, make_client
from dsbra.observe.demand import DemandPoller
from dsbra.observe.spark import ENGINE as SPARK
from dsbra.policy.demand import DemandPolicy
from dsbra.policy.profiles import DEFAULT_PROFILE
from dsbra.policy.state import load_state, save_state
from dsbra.policy.step import PAUSED
from dsbra.statedir import (HEAT_FILE, JOURNAL_FILE, LOCK_FILE, PAUSE_FILE, STATUS_FILE,
                            write_json_atomic)

log = logging.getLogger("dsbra.daemon")

TOP_HOT = 10
RECENT_ROUNDS = 12
#: the cluster lock at start: tries, and seconds between them, before starting without it
START_LOCK_ATTEMPTS = 3
START_LOCK_RETRY_S = 5.0


#: how the do-no-harm guard's pause file begins (its metric and alert key on it)
GUARD_PAUSE = "paused by the do-no-harm guard"
#: the round's refusal when the daemon is told to stop during placement.lead_s
STOPPING = "stopping: told to stop before the NameNode's placement plugin read the round's heat"


def notify_systemd(state: str) -> None:
    """Tell systemd the daemon's state (the unit's Type=notify): ``READY=1`` once it is
    connected and its status written, so that `systemctl start` returns when `dsbra status`
    answers. Nothing outside systemd (no NOTIFY_SOCKET)."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as exc:
        log.warning("cannot notify systemd (%s): %s", state, exc.strerror or exc)


class Daemon:
    def __init__(self, cfg: Config, config_path: str | None = None,
                 overrides: dict | None = None):
        self.cfg, self.config_path, self.overrides = cfg, config_path, overrides or {}
        self.dir = Path(cfg.state_dir)
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.metrics = Metrics()
        self.metrics.storage_budget.set(cfg.rails.storage_budget_bytes or 0)
        self.status: dict = {"state": "starting", "mode": cfg.mode, "rounds": 0}
        self._scheduler_line = ""  #: the scheduler as last logged (logged again on change)
        self._lock_fh = None
        self.cluster_lock: ClusterLock | None = None
        self.collector = None
        self.round = 0
        self.last_poll_ok = time.time()
        self.heat: dict | None = None  #: the last heat document published (served at /heat)
        #: the last rounds, without their health and hot-file detail (status: recent_rounds)
        self.recent_rounds: collections.deque = collections.deque(maxlen=RECENT_ROUNDS)
        self._estimate: tuple[int, dict | None] = (-1, None)  #: (round, experiment read-out)
        self._effects: list[dict] = []  #: the raised files' before and since, that round's
        self._switchback: Switchback | None = None  #: the switchback running (recorded)
        self._arm: tuple[int, str] | None = None  #: the switchback's (period, arm) last logged
        self._round_started = time.monotonic()
        self._sent_before: dict[str, int] = {}  #: the endpoints' requests by kind at its start
        self.demand_poller: DemandPoller | None = None
        self.fast = FastPollMemory()
        self.start_fast_round()
        self._raised_bytes: dict[str, int] = {}  #: the length of each raised file, last read
        self.recent_fast: collections.deque = collections.deque(maxlen=RECENT_DECISIONS)

    # --- lifecycle -------------------------------------------------------------------------
    def acquire_lock(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.dir / LOCK_FILE, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            fh.close()
            raise SafetyError(f"another dsbra run (pid {holder}) holds {self.dir / LOCK_FILE}; "
                              "one instance per cluster") from None
        fh.truncate(0)
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock_fh = fh

    def connect(self) -> None:
        from dsbra.observe.collector import Collector

        self.connect_hdfs()
        c = self.cfg.cluster
        self.assignments = Assignments.open(self.dir / ASSIGNMENTS_FILE)
        self.collector = Collector(self.ep, state_path=self.dir / "collector.json",
                                   since_ms=int(time.time() * 1000),
                                   node_locality_delay=c.node_locality_delay)
        self.spark = self._spark_collector() if self.cfg.spark.enabled else None
        self.demand_poller = DemandPoller(self.collector)

    def connect_hdfs(self) -> None:
        """The endpoints, the acting WebHDFS client and the journal: what acting needs (a
        round's observing needs the collectors of :meth:`connect` too)."""
        from dsbra.observe.collector import Endpoints
        from dsbra.observe.urls import resolve_urls

        c = self.cfg.cluster
        urls = resolve_urls(c.rm, c.webhdfs, c.jhs)
        self.urls = urls
        self.status["cluster"] = {"rm": urls["rm"], "webhdfs": urls["webhdfs"], "jhs": urls["jhs"]}
        self.ep = Endpoints.from_urls(urls["rm"], urls["webhdfs"], urls["jhs"], user=c.user)
        if c.keytab:
            login_from_keytab(c.keytab, c.kerberos_principal)
        # the acting client follows the NameNodes through the read endpoint's Failover: a
        # NameNode found active by a read is the one the next write goes to, and back
        self.actor = HdfsActor(make_client(self.ep.hdfs, user=self.ep.hdfs.user, kerberos=c.kerberos,
                                           principal=c.kerberos_principal,
                                           mutual_auth=c.kerberos_mutual_auth,
                                           ca_bundle=c.ca_bundle))
        for e in (self.ep.rm, self.ep.hdfs, self.ep.jhs):  # jmx and the AMs share these
            secure_session(e.session, ca_bundle=c.ca_bundle, kerberos=c.kerberos,
                           principal=c.kerberos_principal, mutual_auth=c.kerberos_mutual_auth)
        self._check_access()
        self.journal = Journal.open(self.dir / JOURNAL_FILE)

    def _spark_collector(self):
        """Spark's applications on this YARN: through the RM's proxy (the RM's session: its
        TLS and SPNEGO), the History Server and the NameNode's audit log as configured."""
        from dsbra.hadoop.rest import SparkApi
        from dsbra.observe.spark import AuditTail, SparkCollector

        s, c = self.cfg.spark, self.cfg.cluster
        history = None
        if s.history:
            history = SparkApi.history(s.history, stats=self.ep.stats)
            secure_session(history.session, ca_bundle=c.ca_bundle, kerberos=c.kerberos,
                           principal=c.kerberos_principal, mutual_auth=c.kerberos_mutual_auth)
        audit = AuditTail.at_end(s.audit_log) if s.audit_log else None
        proxy = SparkApi.proxy(self.urls["rm"], session=self.ep.rm.session, stats=self.ep.stats)
        return SparkCollector(self.ep.rm, proxy, history, audit, state_path=self.dir / "spark.json",
                              since_ms=int(time.time() * 1000))

    def _check_access(self) -> None:
        """An untrusted certificate or a refused SPNEGO login is a configuration error: refused
        at start, before any round (an unreachable NameNode is left to the rounds to retry)."""
        try:
            self.actor.status("/")
        except HadoopError as exc:
            if exc.exception == ACCESS_REFUSED:
                raise ConfigError(str(exc)) from None

    def hold_cluster_lock(self) -> None:
        """In apply mode, hold the cluster lock: take it, or refresh it (SafetyError when
        another live daemon holds it, HadoopError when the NameNode cannot be asked)."""
        path = self.cfg.cluster.lock_path
        if not (self.cfg.apply and path):
            return
        stale_s = max(3 * self.cfg.interval_s, 120.0)
        if self.cluster_lock is None:
            self.cluster_lock = ClusterLock(self.actor, path, stale_s, str(self.dir.resolve()))
        self.cluster_lock.stale_s = stale_s
        if self.cluster_lock.held:
            self.cluster_lock.refresh()
        else:
            self.cluster_lock.acquire()

    def _cluster_lock_refusal(self) -> str | None:
        """Why this round may not act for want of the cluster lock (None: held, or not needed)."""
        try:
            self.hold_cluster_lock()
        except (SafetyError, HadoopError) as exc:
            return f"cluster-lock: {exc}"
        return None

    def _take_cluster_lock_at_start(self) -> None:
        """The cluster lock before the first round; SafetyError (another daemon acts on this
        cluster) ends the start. A NameNode that cannot be asked is tried again a few seconds
        later (a broken handshake under load, a failover under way) before the daemon starts
        without the lock and retries it every round, refusing to act until it holds it."""
        for attempt in range(1, START_LOCK_ATTEMPTS + 1):
            try:
                self.hold_cluster_lock()
                return
            except HadoopError as exc:
                if attempt == START_LOCK_ATTEMPTS or exc.exception == ACCESS_REFUSED:
                    log.warning("start without the cluster lock, retried every round: %s", exc)
                    return
                log.info("cluster lock: attempt %d of %d failed, again in %.0f s: %s", attempt,
                         START_LOCK_ATTEMPTS, START_LOCK_RETRY_S, exc)
                if self.stop.wait(START_LOCK_RETRY_S):
                    return

    def run(self, once: bool = False) -> None:
        self.acquire_lock()
        self.connect()
        self._take_cluster_lock_at_start()
        server = None
        if self.cfg.http.enabled:
            from dsbra.daemon.http import serve

            server = serve(self, self.cfg.http.host, self.cfg.http.port)
        old_term = signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        old_hup = signal.signal(signal.SIGHUP, lambda *_: self.reload.set())
        pol = self.cfg.policy
        log.info("start mode=%s interval_s=%s policy=%s profile=%s state_dir=%s rm=%s webhdfs=%s "
                 "holdout=%s", self.cfg.mode, self.cfg.interval_s, pol.name,
                 pol.profile or (f"{DEFAULT_PROFILE}(default)" if pol.name == "dsbra" else "-"),
                 self.dir,
                 self.urls["rm"], self.urls["webhdfs"], self.cfg.experiment.holdout)
        self._scheduler_refusal()
        # `dsbra status` answers from the start (the scheduler, the mode), not a round later
        self.status.update(state="paused" if self.paused else "running",
                           pending_actions=len(self.journal.pending()))
        self._write_status()
        notify_systemd("READY=1")
        try:
            self._reconcile()
            while not self.stop.is_set():
                if self.reload.is_set():
                    self._reload()
                self.run_round()
                if once:
                    break
        finally:
            notify_systemd("STOPPING=1")
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGHUP, old_hup)
            if self.cluster_lock is not None:
                self.cluster_lock.release()
            if server is not None:
                server.shutdown()
            self.status["state"] = "stopped"
            self._write_status()
            log.info("stop rounds=%d", self.round)

    def _reload(self) -> None:
        self.reload.clear()
        try:
            cfg = load_config(self.config_path, overrides=self.overrides)
        except DsbraError as exc:
            log.error("reload refused, keeping the running config: %s", exc)
            return
        if cfg.state_dir != self.cfg.state_dir or cfg.cluster != self.cfg.cluster:
            log.error("reload refused: state_dir and cluster need a restart")
            return
        self.cfg = cfg
        self.metrics.storage_budget.set(cfg.rails.storage_budget_bytes or 0)
        log.info("reloaded config mode=%s interval_s=%s policy=%s holdout=%s", cfg.mode,
                 cfg.interval_s, cfg.policy.name, cfg.experiment.holdout)

    def _reconcile(self) -> None:
        try:
            closed = self.journal.reconcile(self.actor)
        except HadoopError as exc:
            log.warning("journal reconcile postponed: %s", exc)
            return
        for a in closed:
            log.info("reconcile action=%d file=%s target=%d state=%s detail=%s", a.id, a.path,
                     a.target, a.state, a.detail.replace(" ", "_"))

    # --- one round -------------------------------------------------------------------------
    def _window(self) -> tuple[int, int]:
        """Poll for one interval (or until SIGTERM); the window's (start, end) in ms. With the
        fast poll on, it runs every demand.poll_s between the collector's polls, first right
        after the first one (whose job.split reads map its pending maps to blocks)."""
        start = self.collector.cursor_ms
        deadline = time.monotonic() + self.cfg.interval_s
        fast_s = self.cfg.demand.poll_s if self.cfg.demand.enabled else None
        next_fast = time.monotonic()
        while True:
            self._collect()
            left = deadline - time.monotonic()
            if left <= 0:
                break
            wake = min(time.monotonic() + self.cfg.poll_s, deadline)
            stopped = False
            while fast_s is not None and next_fast < wake and not stopped:
                stopped = self.stop.wait(max(next_fast - time.monotonic(), 0))
                if not stopped:
                    self._fast_poll()
                    next_fast = max(next_fast + fast_s, time.monotonic())
            if stopped or self.stop.wait(max(wake - time.monotonic(), 0)):
                break
        return start, int(time.time() * 1000)

    def _collect(self) -> None:
        try:
            self.collector.poll()
            if self.spark is not None:
                self.spark.poll()  # its sources' failures are logged skips inside
            self.last_poll_ok = time.time()
        except HadoopError as exc:
            log.warning("poll skipped: %s", exc)
            self.metrics.poll_errors.inc()

    def run_round(self) -> dict:
        from dsbra.observe.window import build_window, file_blocks, read_files

        self.round += 1
        t0 = time.process_time()
        self._round_started = time.monotonic()
        self._sent_before = dict(self.ep.stats.by_kind)
        self.start_fast_round()
        start, end = self._window()
        # refreshed every round, a skipped one too: an outage elsewhere must not let it go stale
        lock_refusal = self._cluster_lock_refusal()
        info: dict = {"round": self.round, "window_start_ms": start, "window_end_ms": end,
                      "mode": self.cfg.mode, "decisions": [], "refusals": []}
        obs, jobs = [], []
        try:
            self._reconcile()
            self.journal.settle(self.actor)
            obs = self.collector.take()
            jobs = self.collector.take_jobs()
            raised = self.journal.raised_files()
            # each file read once a round: the window's and the raised ones (to see them cool)
            spark_paths = self.spark.paths_pending() if self.spark is not None else set()
            files = read_files(self.ep, {o.path for o in obs if o.path} | set(raised) | spark_paths)
            if self.spark is not None:
                obs = obs + self.spark.take(files)
            info["files_read"] = len(files)
            health = self.ep.jmx.namenode_health()
            window = build_window(self.collector, obs, window_start_ms=start,
                                  window_end_ms=end, detail=self.cfg.map_records.enabled,
                                  jobs=True, files=files, health=health, spark=self.spark,
                                  spark_min_idle_s=self.cfg.spark.min_idle_s)
            located = {p: file_blocks(v["located"], v["replication"]) if v else None
                       for p, v in files.items()}
            window = window.with_cooling(located, raised)
        except HadoopError as exc:
            # not lost: the next round counts them
            self.collector.pending[:0] = [o for o in obs if o.engine != SPARK]
            if self.spark is not None:
                self.spark.give_back([o for o in obs if o.engine == SPARK])
            self.collector.finished_jobs[:0] = jobs
            info["skipped"] = str(exc)
            log.warning("round=%d skipped: %s", self.round, exc)
            self.metrics.rounds_skipped.inc()
            return self._finish(info, t0)
        file_bytes = {p: int(v["located"].get("fileLength") or 0) for p, v in files.items() if v}
        e = self.cfg.experiment
        switchback = self._switchback_at(end)
        off = switchback is not None and switchback.arm_at(end) == OFF
        self._keep_records(obs, window, jobs, end, switchback)
        holdout = self.assignments.holdout(e.holdout, e.seed)
        paused = self.paused
        fast_held = self.journal.demand_held() if self.cfg.demand.enabled else {}
        # the loaded state is handed over, not kept: decide keeps only the rows it needs
        res = decide(window, load_state(self.dir / "state.parquet"), self.journal.base,
                     policy_name=self.cfg.policy.name, profile=self.cfg.policy.profile,
                     params=self.cfg.policy.params, rails=self._rails_left(),
                     file_bytes=file_bytes, stored_bytes=health.get("capacity_used_bytes"),
                     holdout=holdout, off=off, paused=paused, hold=fast_held)
        if holdout.enabled:
            raising = res.plan.would_target > res.plan.current
            for rec in self.assignments.assign(res.plan.paths[raising], holdout,
                                               round_=self.round, at_ms=end):
                log.info("experiment round=%d file=%s group=%s", self.round, rec["file"],
                         rec["group"])
        reasons = refusals(health, self.cfg.health,
                           pending_actions=len(self.journal.pending_raises()),
                           observation_age_s=time.time() - self.last_poll_ok)
        if res.mode == PAUSED:
            reasons.append(f"paused: {self.pause_reason()} (resume with dsbra resume)")
        self.metrics.guard_fired.set(1 if paused and GUARD_PAUSE in self.pause_reason() else 0)
        if lock_refusal:
            reasons.append(lock_refusal)
        scheduler_refusal = self._scheduler_refusal()
        if scheduler_refusal:
            reasons.append(scheduler_refusal)
        for reason in reasons:
            self._count_refusal(reason)
        acting = self.cfg.apply and not reasons
        if not self._publish_heat(res, acting):
            reasons.append(STOPPING)
            self._count_refusal(STOPPING)
            acting = False
        info["decisions"] = apply_plan(res.plan, res.ri.node_names, self.journal, self.actor,
                                       round_=self.round, apply=acting,
                                       refused=self._refused(reasons))
        save_state(self.dir / "state.parquet", res.state)
        info["refusals"] = reasons
        info["gavg"] = res.decision.gavg
        info["delay_threshold_s"] = window.delay_threshold_s
        info["map_tasks"] = window.observe["map_tasks"]
        info["unmapped_tasks"] = window.observe["unmapped_tasks"]
        info["input_gone_tasks"] = window.observe["input_gone_tasks"]
        info["engines"] = window.observe["engines"]
        info["blocks"] = len(res.ri)
        info["health"] = health
        info["top_hot_files"] = top_hot_files(res, TOP_HOT)
        info["experiment"] = self.experiment_status()
        base = self.journal.base
        info["files_below_base"] = sorted(p for p, v in files.items()
                                          if v and p in base and v["replication"] < base[p])
        info["extra_replica_bytes"] = sum(file_bytes.get(p, 0) * (self.journal.replication[p] - b)
                                          for p, b in self.journal.raised_files().items())
        self._raised_bytes = {p: file_bytes[p] for p in self.journal.raised_files()
                              if p in file_bytes}
        if self.cfg.demand.enabled:
            self.fast.refresh(files, self.journal.touched)
            info["fast_poll_held"] = sorted(self.journal.demand_held())
        pending = [a.round for a in self.journal.pending()]
        info["oldest_pending_rounds"] = self.round - min(pending) if pending else 0
        self.metrics.observe_round(info, self.journal)
        # new keys go last: operators' log parsers (and the tests') match the ones before
        log.info("round=%d blocks=%d map_tasks=%d gavg=%.3f decisions=%d acted=%s refusals=%d "
                 "input_gone=%d", self.round, len(res.ri), info["map_tasks"], res.decision.gavg,
                 len(info["decisions"]), acting, len(reasons), info["input_gone_tasks"])
        return self._finish(info, t0)

    def _count_refusal(self, reason: str) -> None:
        """A refusal's log line and counter, keyed by the reason's first word."""
        log.warning("round=%d refuse reason=%s", self.round, reason.split(":")[0])
        self.metrics.refusals.labels(reason=reason.split(":")[0]).inc()

    def _rails_left(self, files=None):
        """The rails less what this round's fast polls changed (the per-round caps are the
        round's and its fast polls' together); for a fast poll's ``files`` (a FileTable), its
        storage budget less the bytes above base of the raised files outside it."""
        used = self._fast_round["used"]
        rails = self.cfg.rails
        elsewhere = 0
        if files is not None and rails.storage_budget_bytes is not None:
            inside = set(files.paths.tolist())
            lengths = self._raised_bytes | {p: r.length for p, r in self.fast.reads.items()}
            elsewhere = sum(lengths.get(p, rails.block_bytes) * (self.journal.replication[p] - b)
                            for p, b in self.journal.raised_files().items() if p not in inside)
        return rails.remaining(*used, extra_elsewhere=elsewhere)

    # --- the fast poll (demand.enabled; dsbra.daemon.fastpoll) ------------------------------
    def start_fast_round(self) -> None:
        """A round's fast polls start: none run yet, nothing of the round's caps used."""
        #: this round's fast polls: how many, their CPU and requests, the caps their changes used
        self._fast_round: dict = {"polls": 0, "cpu_s": 0.0, "requests": {}, "decisions": 0,
                                  "used": [0, 0, 0]}

    def _fast_poll(self) -> None:
        """One fast poll: the live demand, the rule, the round's rails, refusals and apply
        path. A Hadoop failure, or a reply the rule cannot take, is a logged skip (the fast
        poll is an addition to the round, never a reason for the daemon to stop); its requests
        and CPU are counted either way."""
        t0 = time.process_time()
        before = dict(self.ep.stats.by_kind)
        pending, decisions = None, []
        try:
            pending, decisions = self._fast_decide()
        except (HadoopError, InputError) as exc:
            # not "skipped:", the round's word for a skipped round (log parsers count those)
            log.warning("fast-poll round=%d failed: %s", self.round, exc)
            self.metrics.fast_poll_errors.inc()
        cpu = time.process_time() - t0
        sent = {k: n - before.get(k, 0) for k, n in self.ep.stats.by_kind.items()
                if n > before.get(k, 0)}
        self.metrics.observe_fast_poll(sent, cpu, pending, decisions)
        fast = self._fast_round
        fast["polls"] += 1
        fast["cpu_s"] += cpu
        fast["decisions"] += len(decisions)
        totals = fast["requests"]
        for kind, n in sent.items():
            totals[kind] = totals.get(kind, 0) + n
        at_ms = int(time.time() * 1000)
        self.recent_fast.extend({"at_ms": at_ms, "round": self.round} | d for d in decisions)
        self.status["fast_poll"] = {"poll_s": self.cfg.demand.poll_s, "last_ms": at_ms,
                                    "pending_maps": pending, "requests": sent,
                                    "cpu_s": round(cpu, 4),
                                    "held": sorted(self.journal.demand_held()),
                                    "recent_decisions": list(self.recent_fast)}
        if decisions:
            self._write_status()

    def _fast_decide(self) -> tuple[int, list[dict]]:
        """(pending maps seen, the file decisions made) of one fast poll."""
        d = self.cfg.demand
        poll = self.demand_poller.poll()
        pending = len(poll.map_rows)
        sb = self._switchback
        if self.cfg.experiment.switchback and (sb is None or
                                               sb.arm_at(int(time.time() * 1000)) == OFF):
            return pending, []  # an off period (or its arm not known yet): the policy is off
        held = self.journal.demand_held()
        paths = sorted({p for p, _ in poll.blocks} | set(held))
        delay = d.delay_threshold_s or poll.delay_s
        if not paths or not delay > 0:  # no delay scheduling: the round's refusal says so
            self.fast.state = None
            return pending, []
        if self.cfg.apply and any(a.state == SENT for a in self.journal.pending()):
            self.journal.settle(self.actor)  # copies made: done, and their files read anew
        reads = self.fast.read(self.ep, paths, self.journal.touched)
        base = {p: held.get(p, self.journal.base.get(p, r.replication)) for p, r in reads.items()}
        ri = demand_input(poll, reads, base)
        policy = DemandPolicy(delay, max_replication=d.max_replication,
                              min_shortfall=d.min_shortfall, idle_polls=d.idle_polls)
        e = self.cfg.experiment
        holdout = self.assignments.holdout(e.holdout, e.seed)
        paused = self.paused
        rails = self._rails_left(ri.files)
        # a file whose last change the NameNode has not completed is left alone: its holders
        # are not yet what its replication says, and the rule would ask for the copies again
        busy = tuple(glob.escape(a.path) for a in self.journal.pending() if a.path in reads)
        if busy:
            rails = dataclasses.replace(rails, protected=rails.protected + busy)
        fs = decide_demand(ri, self.fast.state, policy, rails, held, control_group=holdout,
                           paused=paused)
        self.fast.state = fs.done.state
        plan = fs.done.plan
        if not len(plan.changed()) and not len(plan.held_out()):
            return pending, []
        if holdout.enabled:
            raising = plan.would_target > plan.current
            for rec in self.assignments.assign(plan.paths[raising], holdout, round_=self.round,
                                               at_ms=int(time.time() * 1000)):
                log.info("experiment round=%d file=%s group=%s", self.round, rec["file"],
                         rec["group"])
        reasons = self._fast_refusals(paused) if self.cfg.apply else []
        why = {str(p): (float(a), float(b)) for p, a, b in zip(plan.paths, fs.due, fs.servable)}
        records = apply_plan(plan, ri.node_names, self.journal, self.actor, round_=self.round,
                             apply=self.cfg.apply and not reasons, refused=self._refused(reasons),
                             log_decision=self._fast_logger(why))
        decisions = [r for r in records if not r.pop("repeated", False)]
        used = self._fast_round["used"]
        for r in decisions:
            if r["outcome"] in ("sent", "dry-run") and r["target"] != r["current"]:
                added = max(r["target"] - r["current"], 0)
                used[0] += 1
                used[1] += added
                used[2] += added * reads[r["file"]].length
        return pending, decisions

    def _fast_refusals(self, paused: bool) -> list[str]:
        """Why a fast poll with a change to make may not act: the round's refusals, on the
        NameNode's health read now and the journal settled at the poll's start (a raise the
        NameNode completed no longer holds the next back), and the round's cluster lock."""
        reasons = refusals(self.ep.jmx.namenode_health(), self.cfg.health,
                           pending_actions=len(self.journal.pending_raises()),
                           observation_age_s=time.time() - self.last_poll_ok)
        if paused:
            reasons.append(f"paused: {self.pause_reason()} (resume with dsbra resume)")
        lock = self.cluster_lock
        if self.cfg.cluster.lock_path and (lock is None or not lock.held):
            reasons.append("cluster-lock: not held (the round takes it)")
        scheduler = self.collector.settings().no_signal()
        if scheduler:
            reasons.append(scheduler)
        return reasons

    def _refused(self, reasons: list[str]) -> str | None:
        """The first refusal's name when the daemon would act but may not (apply mode): its
        decisions say ``outcome=refused refusal=<name>``, a dry run's ``outcome=dry-run``."""
        return refusal_name(reasons[0]) if reasons and self.cfg.apply else None

    def _fast_logger(self, why: dict[str, tuple[float, float]]):
        """The fast poll's decision line (key=value, as the round's, with the refusal last); a
        change not made that repeats the file's last line this round is marked ``repeated`` and
        not logged again."""

        def log_decision(round_: int, rec: dict, target: int) -> None:
            key = (rec["current"], target, rec["outcome"])
            if rec["outcome"] != "sent" and self.fast.shown.get(rec["file"]) == key:
                rec["repeated"] = True
                return
            self.fast.shown[rec["file"]] = key
            due, servable = why.get(rec["file"], (0.0, 0.0))
            rec["due"], rec["servable"] = round(due, 3), round(servable, 3)
            log.info("fast-poll round=%d file=%s replication=%d->%d base=%d rule=%s due=%.2f "
                     "servable=%.2f shortfall=%.2f status=%s outcome=%s%s", round_, rec["file"],
                     rec["current"], target, rec["base"], rec["reason"]["rule"], due, servable,
                     rec["reason"]["rf"], rec["status"], rec["outcome"].replace(" ", "_"),
                     refusal_suffix(rec))

        return log_decision

    @property
    def heat_file(self) -> Path:
        return Path(self.cfg.placement.heat_file or self.dir / HEAT_FILE)

    def _publish_heat(self, res, acting: bool) -> bool:
        """Write the round's heat document for the NameNode's placement plugin before acting;
        with replicas to add or drop, wait placement.lead_s so that it has read it. False when
        the daemon was told to stop during that wait: acting then would change replication
        before the plugin has the round's lowering, and HDFS would drop whichever replica its
        default picks (measured: docs/placement.md)."""
        plan = res.plan
        raising = plan.target > plan.current if acting else np.zeros(len(plan.paths), bool)
        lowering = plan.target < plan.current if acting else np.zeros(len(plan.paths), bool)
        raised = set(self.journal.raised_files()) | set(plan.paths[raising])
        self.heat = heat_document(res, sorted(raised), sorted(plan.paths[lowering]),
                                  round_=self.round, generated_ms=int(time.time() * 1000),
                                  interval_s=self.cfg.interval_s,
                                  lead_s=self.cfg.placement.lead_s)
        try:
            self.heat_file.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.heat_file, self.heat)
        except OSError as exc:
            log.error("round=%d cannot write the heat document %s: %s", self.round,
                      self.heat_file, exc.strerror)
            return True
        lead = self.cfg.placement.lead_s
        if (raising.any() or lowering.any()) and lead > 0:
            log.info("round=%d heat published; acting in %.1f s (placement.lead_s)", self.round,
                     lead)
            return not self.stop.wait(lead)
        return True

    def _scheduler_refusal(self) -> str | None:
        """Why this cluster's scheduler gives dsbra nothing to act on (None: it does). The
        scheduler and its D go to the log at start and whenever they change, and to /status."""
        try:
            s = self.collector.settings()  # refreshed by every round's build_window
        except HadoopError as exc:  # the round's own poll reports the outage
            log.warning("scheduler not read yet: %s", exc)
            return None
        refusal = s.no_signal()
        line = s.describe()
        if line != self._scheduler_line:
            self._scheduler_line = line
            if refusal:
                log.error(refusal)
            elif not s.delay_scheduling:
                log.warning("%s: delay scheduling is off, no map waits for locality, so dsbra "
                            "finds nothing to raise", line)
            else:
                log.info(line)
        self.status["scheduler"] = {"name": s.short_name, "delay_scheduling": s.delay_scheduling,
                                    "delay_threshold_s": s.delay_threshold_s,
                                    "delay_source": s.delay_source, "nodes": s.nodes,
                                    "refusal": refusal}
        return refusal

    def experiment_status(self) -> dict:
        """The experiment's settings, and the files assigned to each group so far or the
        switchback's period and arm now."""
        e = self.cfg.experiment
        out = {"design": e.design, "holdout": e.holdout, "seed": e.seed,
               "files": self.assignments.counts()}
        sb = self._switchback if e.switchback else None
        if sb is not None:
            now = int(time.time() * 1000)
            out["switchback"] = {"start_ms": sb.start_ms, "period_s": sb.period_s,
                                 "burn_in_s": sb.burn_in_s, "period": int(sb.period(now)),
                                 "arm": sb.arm_at(now), "in_burn_in": bool(sb.in_burn_in(now))}
        return out

    def _switchback_at(self, now_ms: int) -> Switchback | None:
        """The switchback this round runs under (None without one): the recorded one while
        the settings stay, a new one from now when they change; logs each change of arm."""
        e = self.cfg.experiment
        if not e.switchback:
            self._switchback = self._arm = None
            return None
        sb = self._switchback
        if sb is None or (sb.period_s, sb.burn_in_s, sb.seed) != (e.period_s, e.burn_in_s, e.seed):
            sb, new = switchback_of(self.dir, e.period_s, e.burn_in_s, e.seed, now_ms)
            log.info("switchback %s start_ms=%d period_s=%g burn_in_s=%g seed=%d",
                     "started" if new else "continued", sb.start_ms, sb.period_s, sb.burn_in_s,
                     sb.seed)
            self._switchback = sb
        arm = (int(sb.period(now_ms)), sb.arm_at(now_ms))
        if arm != self._arm and arm[0] % 2 == 0:  # a block just ended
            self._check_guard(now_ms)
            log.info("switchback round=%d period=%d arm=%s: %s", self.round, arm[0], arm[1],
                     "the policy decides" if arm[1] == ON else
                     "every raised file goes back to base; raises wait for an on period")
            self._arm = arm
        self.metrics.switchback_on.set(1 if arm[1] == ON else 0)
        return sb

    def _keep_records(self, obs, window, jobs: list[dict], window_end_ms: int,
                      switchback: Switchback | None) -> None:
        """The round's maps and finished jobs into state_dir/maps and jobs (a failure to
        write is logged, not fatal: the records serve the experiment's read-out, not the
        decisions)."""
        m = self.cfg.map_records
        if not m.enabled:
            return
        for kind, table in ((MAPS_DIR, lambda: map_records(obs, window.observe.pop("tasks"),
                                                          window_end_ms, switchback)),
                            (JOBS_DIR, lambda: job_records(jobs, window_end_ms, switchback))):
            store = RecordStore(self.dir / kind, m.max_age_days * 86400, m.max_bytes)
            try:
                store.write(table(), window_end_ms)
            except OSError as exc:
                log.error("%s records of round=%d not kept: %s", kind, self.round, exc)

    def _finish(self, info: dict, t0: float) -> dict:
        if self.cfg.demand.enabled:  # what the round's fast polls cost and did (in cpu_s too)
            fast = self._fast_round
            info["fast_poll"] = {"polls": fast["polls"], "cpu_s": round(fast["cpu_s"], 3),
                                 "requests": dict(sorted(fast["requests"].items())),
                                 "decisions": fast["decisions"]}
        info["cpu_s"] = round(time.process_time() - t0, 3)
        # what the round asked of Hadoop (its REST reads by kind: hdfs.stat, rm.nodes, ...)
        info["requests"] = {kind: n - self._sent_before.get(kind, 0)
                            for kind, n in sorted(self.ep.stats.by_kind.items())
                            if n > self._sent_before.get(kind, 0)}
        info["seconds"] = round(time.monotonic() - self._round_started, 3)
        self.metrics.rounds.inc()
        self.metrics.round_cpu.set(info["cpu_s"])
        self.metrics.round_seconds.set(info["seconds"])
        self.recent_rounds.append({k: v for k, v in info.items()
                                   if k not in ("health", "top_hot_files", "experiment")})
        self.status.update(state="paused" if self.paused else "running", mode=self.cfg.mode,
                           rounds=self.round, last_round=info,
                           recent_rounds=list(self.recent_rounds),
                           pending_actions=len(self.journal.pending()),
                           experiment=self.experiment_status())
        self._write_status()
        return info

    def page(self) -> str:
        """The status page (daemon/page.py), refreshing once a round (at most every minute);
        the holdout's read-out and the raised files' before and since are computed again only
        after a new round."""
        journal = read_journal(self.dir / JOURNAL_FILE)
        if self._estimate[0] != self.round:
            e = self.cfg.experiment
            self._estimate = (self.round, experiment_estimate(self.dir)
                              if e.holdout or e.switchback else None)
            self._effects = raise_effects(self.dir, journal)
        return render_page(self.status, journal, refresh_s=min(self.cfg.interval_s, 60),
                           estimate=self._estimate[1], effects=self._effects)

    @property
    def paused(self) -> bool:
        return (self.dir / PAUSE_FILE).exists()

    def pause_reason(self) -> str:
        """Who paused the daemon and why: the pause file's first line."""
        try:
            lines = (self.dir / PAUSE_FILE).read_text().splitlines()
        except OSError:
            return "dsbra pause"
        return lines[0].strip() if lines and lines[0].strip() else "dsbra pause"

    def _check_guard(self, now_ms: int) -> None:
        """At the end of each block of a switchback: the do-no-harm guard reads its estimate and,
        when it shows jobs slower with the policy on beyond the margin, pauses the daemon as
        `dsbra pause` does (nothing is lowered by it; `dsbra resume` lets it act again)."""
        e = self.cfg.experiment
        if not e.guard or self.paused:
            return
        from pyarrow import ArrowException

        from dsbra.experiment.switchback import guard_reason, read_out

        try:
            estimate = read_out([self.dir], settled_at_ms=now_ms)
        except (DsbraError, OSError, ArrowException) as exc:
            log.warning("guard: the switchback's estimate cannot be read, not checked: %s", exc)
            return
        reason = guard_reason(estimate, e.guard_margin)
        self.status["guard"] = {"checked_ms": now_ms, "margin": e.guard_margin,
                                "verdict": estimate["verdict"], "fired": reason is not None,
                                "reason": reason}
        if reason is None:
            log.info("guard round=%d: %s", self.round, estimate["verdict"])
            return
        (self.dir / PAUSE_FILE).write_text(f"{GUARD_PAUSE}: {reason}\n")
        log.warning("guard round=%d fired: %s; paused (dsbra resume lets it act again)",
                    self.round, reason)

    def _write_status(self) -> None:
        try:
            write_json_atomic(self.dir / STATUS_FILE, self.status)
        except OSError as exc:
            log.error("cannot write %s: %s", self.dir / STATUS_FILE, exc.strerror)
