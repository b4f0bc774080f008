"""The daemon's Prometheus metrics (prefix dsbra_, base units, no per-block labels)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class Metrics:
    def __init__(self):
        self.registry = r = CollectorRegistry()
        self.rounds = Counter("dsbra_rounds", "Rounds run (including skipped).", registry=r)
        self.rounds_skipped = Counter("dsbra_rounds_skipped",
                                      "Rounds skipped: a Hadoop daemon failed.", registry=r)
        self.poll_errors = Counter("dsbra_poll_errors", "Collector polls that failed.",
                                   registry=r)
        self.refusals = Counter("dsbra_refusals", "Rounds refused, by reason.", ["reason"],
                                registry=r)
        self.actions = Counter("dsbra_actions", "File decisions, by outcome.", ["outcome"],
                               registry=r)
        self.replicas_added = Counter("dsbra_replicas_added",
                                      "Replicas asked for by SETREPLICATION.", registry=r)
        self.replicas_removed = Counter("dsbra_replicas_removed",
                                        "Replicas released by SETREPLICATION.", registry=r)
        self.pending = Gauge("dsbra_pending_actions",
                             "Sent changes the NameNode has not completed.", registry=r)
        self.raised_files = Gauge("dsbra_raised_files", "Files we hold above base.",
                                  registry=r)
        self.gavg = Gauge("dsbra_gavg", "Last round's GAvg.", registry=r)
        self.blocks = Gauge("dsbra_round_blocks", "Blocks in the last round.", registry=r)
        self.map_tasks = Counter("dsbra_map_tasks", "Map tasks observed.", registry=r)
        self.input_gone_tasks = Counter(
            "dsbra_map_tasks_input_gone",
            "Map tasks whose input file could not be read when their round read it, not mapped "
            "to blocks: gone, in practice (a job's temporary file, such as grep's sort input); "
            "any other read failure is also logged as a warning.", registry=r)
        self.unmapped_tasks = Counter(
            "dsbra_map_tasks_unmapped",
            "Map tasks not mapped to a block, for any reason (input gone included).", registry=r)
        self.tasks = Counter("dsbra_tasks", "Tasks observed reading HDFS, by engine (MapReduce's "
                             "maps, Spark's tasks).", ["engine"], registry=r)
        self.delayed_tasks = Counter("dsbra_delayed_tasks", "Tasks that waited for locality, by engine.",
                                     ["engine"], registry=r)
        self.delay_seconds = Counter("dsbra_delay_seconds", "Their summed wait for locality, by engine.",
                                     ["engine"], registry=r)
        self.experiment_files = Gauge(
            "dsbra_experiment_files", "Files assigned to each experiment group (treatment, "
            "control) since the experiment began.", ["group"], registry=r)
        self.switchback_on = Gauge(
            "dsbra_switchback_on", "1 while a switchback experiment's period has the policy on, "
            "0 in an off period (its raised files back at base) and without a switchback.",
            registry=r)
        self.guard_fired = Gauge(
            "dsbra_guard_fired", "1 while the do-no-harm guard holds the daemon paused (the "
            "switchback showed jobs slower with the policy on), else 0.", registry=r)
        self.round_cpu = Gauge("dsbra_round_cpu_seconds", "CPU of the last round.", registry=r)
        self.round_seconds = Gauge("dsbra_round_duration_seconds",
                                   "Wall time of the last round's work (read, decide, act).",
                                   registry=r)
        self.decisions = Counter("dsbra_decisions", "File decisions, by the rule that made them.",
                                 ["rule"], registry=r)
        self.extra_bytes = Gauge("dsbra_extra_replica_bytes",
                                 "Bytes of the replicas dsbra holds above the files' base.",
                                 registry=r)
        self.storage_budget = Gauge("dsbra_storage_budget_bytes",
                                    "rails.storage_budget_bytes (0: no budget).", registry=r)
        self.files_below_base = Gauge(
            "dsbra_files_below_base", "Files dsbra changed that the NameNode reported below "
            "their base replication in the last round (never dsbra's doing: an operator or "
            "another tool lowered them).", registry=r)
        self.oldest_pending = Gauge(
            "dsbra_oldest_pending_action_rounds",
            "Rounds since the oldest change the NameNode has not completed was decided.",
            registry=r)
        self.fast_polls = Counter("dsbra_fast_polls", "Fast polls of the live demand "
                                  "(demand.enabled), failed ones included.", registry=r)
        self.fast_poll_errors = Counter("dsbra_fast_poll_errors",
                                        "Fast polls skipped: a Hadoop daemon failed.", registry=r)
        self.fast_poll_requests = Counter(
            "dsbra_fast_poll_requests", "The fast polls' requests to the ResourceManager, the "
            "ApplicationMasters and the NameNode, by kind (rm.apps, am.tasks, hdfs.stat, ...).",
            ["kind"], registry=r)
        self.fast_poll_cpu = Counter("dsbra_fast_poll_cpu_seconds",
                                     "CPU the fast polls used (part of the rounds').", registry=r)
        self.pending_maps = Gauge("dsbra_fast_poll_pending_maps",
                                  "Maps waiting for a container at the last fast poll.",
                                  registry=r)
        self.last_round = Gauge("dsbra_last_round_timestamp_seconds",
                                "End of the last round's window.", registry=r)

    def observe_decisions(self, decisions: list[dict]) -> None:
        """A round's or a fast poll's file decisions (dsbra.act.apply.apply_plan's records)."""
        for d in decisions:
            self.decisions.labels(rule=(d.get("reason") or {}).get("rule", "unknown")).inc()
            outcome = d["outcome"].split(":")[0]
            self.actions.labels(outcome=outcome).inc()
            if outcome == "sent":
                delta = d["target"] - d["current"]
                (self.replicas_added if delta > 0 else self.replicas_removed).inc(abs(delta))

    def observe_fast_poll(self, requests: dict[str, int], cpu_s: float, pending_maps: int | None,
                          decisions: list[dict]) -> None:
        self.fast_polls.inc()
        for kind, n in requests.items():
            self.fast_poll_requests.labels(kind=kind).inc(n)
        self.fast_poll_cpu.inc(cpu_s)
        if pending_maps is not None:
            self.pending_maps.set(pending_maps)
        self.observe_decisions(decisions)

    def observe_round(self, info: dict, journal) -> None:
        self.observe_decisions(info["decisions"])
        self.map_tasks.inc(info["map_tasks"])
        for engine, counts in info.get("engines", {}).items():
            self.tasks.labels(engine=engine).inc(counts["tasks"])
            self.delayed_tasks.labels(engine=engine).inc(counts["delayed_tasks"])
            self.delay_seconds.labels(engine=engine).inc(counts["delay_s"])
        self.unmapped_tasks.inc(info["unmapped_tasks"])
        self.input_gone_tasks.inc(info["input_gone_tasks"])
        self.pending.set(len(journal.pending()))
        self.raised_files.set(len(journal.raised_files()))
        self.gavg.set(info["gavg"])
        self.blocks.set(info["blocks"])
        self.last_round.set(info["window_end_ms"] / 1000)
        self.extra_bytes.set(info.get("extra_replica_bytes", 0))
        self.files_below_base.set(len(info.get("files_below_base", [])))
        self.oldest_pending.set(info.get("oldest_pending_rounds", 0))
        for group, n in info["experiment"]["files"].items():
            self.experiment_files.labels(group=group).set(n)
