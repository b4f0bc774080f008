"""The daemon's fast poll (dsbra.daemon.fastpoll): its config, its pure core, and its wiring on
replies captured from the bundled cluster: the live-demand poll's (tests/fixtures/demand, the
ResourceManager's and the ApplicationMasters' replies as the client methods returned them) and
the collector's capture for the NameNode (tests/fixtures/captured/hadoop-3.4.2/collector-json:
the files the pending maps read, the jobs' job.split, the scheduler's conf, JMX)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from dsbra.act.journal import SENT, Journal
from dsbra.daemon.config import load_config
from dsbra.daemon.fastpoll import FastPollMemory, FileRead, decide_demand, demand_input
from dsbra.daemon.page import render
from dsbra.daemon.round import decide
from dsbra.errors import ConfigError
from dsbra.experiment.assignment import Assignments
from dsbra.observe.collector import Collector, JobWatch, job_id_of
from dsbra.observe.demand import DemandPoll, DemandPoller
from dsbra.observe.splits import read_splits
from dsbra.observe.window import FileBlocks, Window
from dsbra.policy.api import LiveDemand
from dsbra.policy.demand import DemandPolicy
from dsbra.policy.rails import Rails

sys.path.insert(0, str(Path(__file__).parents[1] / "observe"))
from observe_captured import captured, replay_endpoints  # noqa: E402

FIXTURES = Path(__file__).parents[2] / "fixtures"
POLL = json.loads((FIXTURES / "demand" / "hadoop-3.4.2" / "poll.json").read_text())
SCENARIO = "collector-json"
DATA = "/dsbra-fixtures/json/in"
DEMAND_RULE = {"policy": "dsbra-demand", "rule": "demand", "rf": 1.5, "gavg": 0.0}


# --- config -------------------------------------------------------------------------------

def test_the_fast_poll_is_off_by_default_and_its_settings_are_checked():
    cfg = load_config(None)
    assert cfg.demand.enabled is False and cfg.demand.poll_s == 5.0
    # off, its period is not held against a short round's
    short = load_config(None, env={"DSBRA_INTERVAL_S": "2", "DSBRA_POLL_S": "1"})
    assert short.demand.poll_s == 5.0
    on = load_config(None, env={"DSBRA_DEMAND__ENABLED": "true", "DSBRA_DEMAND__POLL_S": "2",
                                "DSBRA_DEMAND__DELAY_THRESHOLD_S": "1.5"})
    assert on.demand.enabled and on.demand.poll_s == 2.0 and on.demand.delay_threshold_s == 1.5
    for env, word in (({"DSBRA_DEMAND__POLL_S": "0"}, "demand.poll_s must be in"),
                      ({"DSBRA_DEMAND__POLL_S": "120", "DSBRA_DEMAND__ENABLED": "true"},
                       "demand.poll_s must be in"),
                      ({"DSBRA_DEMAND__MIN_SHORTFALL": "0"}, "demand.min_shortfall must be > 0"),
                      ({"DSBRA_DEMAND__IDLE_POLLS": "0"}, "demand.idle_polls must be an integer"),
                      ({"DSBRA_DEMAND__DELAY_THRESHOLD_S": "0"}, "demand.delay_threshold_s"),
                      ({"DSBRA_DEMAND__ENABLED": "often"}, "demand.enabled must be true or false"),
                      ({"DSBRA_DEMAND__EVERY": "1"}, "unknown key demand.every")):
        with pytest.raises(ConfigError, match=word) as err:
            load_config(None, env=env)
        assert "\n" not in str(err.value)


# --- the journal: who holds a file ---------------------------------------------------------

def _sent(journal: Journal, path: str, before: int, target: int, rule: str, round_: int = 1):
    a = journal.intent(path, before, target, 1, dict(DEMAND_RULE, rule=rule), round_)
    journal.mark(a, SENT)


def test_the_journal_says_which_files_the_fast_poll_holds_and_from_where(tmp_path):
    j = Journal.open(tmp_path / "j.jsonl")
    _sent(j, "/a", 1, 3, "demand")  # the fast poll raised it: its hold, floor 1
    _sent(j, "/b", 1, 2, "hot")  # the round's
    _sent(j, "/b", 2, 4, "demand")  # raised further by the fast poll: back to 2 at most
    _sent(j, "/c", 1, 3, "demand")
    _sent(j, "/c", 3, 5, "hot")  # the round raised it further: the round's again
    _sent(j, "/d", 1, 2, "demand")
    _sent(j, "/d", 2, 1, "demand-gone")  # lowered back to its floor: the hold ended
    assert j.demand_held() == {"/a": 1, "/b": 2}
    _sent(j, "/a", 3, 2, "demand-gone")  # one replica a poll: still held
    assert Journal.open(tmp_path / "j.jsonl").demand_held() == {"/a": 1, "/b": 2}
    assert j.touched["/a"] == 4 and "/e" not in j.touched  # two actions, two records each


# --- the pure core ---------------------------------------------------------------------------

def _read(replication: int, holders: list[list[str]], block_ids: list[int],
          size: int = 100) -> FileRead:
    n = len(holders)
    return FileRead(replication, n * size, np.arange(n, dtype=np.int64) * size,
                    np.arange(1, n + 1, dtype=np.int64) * size, np.array(block_ids, np.int64),
                    np.array([len(h) for h in holders], np.int64),
                    np.array([h for hs in holders for h in hs], str), version=0)


def _poll(blocks, jobs: list[list[int]], running: list[int], hosts: list[str],
          free: list[int], running_maps: list[int], mean_map_s=None) -> DemandPoll:
    demand = LiveDemand(job_indptr=np.cumsum([0] + [len(j) for j in jobs]),
                        job_blocks=np.array([b for j in jobs for b in j], np.int64),
                        job_running=running, free_containers=free, running_maps=running_maps,
                        mean_map_s=mean_map_s)
    return DemandPoll(0, blocks, hosts, np.zeros(len(blocks) + 1, np.int64),
                      np.zeros(0, np.int64), demand, {}, 10.0, 2)


HOSTS = ["n1", "n2", "n3", "n4"]


def test_the_input_is_every_block_of_the_read_files_on_their_holders_now():
    """A pending map counts on the block holding its split's start; nodes are the poll's hosts
    then the holders the ResourceManager does not list; a map of an unread file is left out."""
    reads = {"/hot": _read(1, [["n1"], ["n2"]], [11, 12]),
             "/held": _read(3, [["n1", "n5", "n3"]], [21])}
    poll = _poll([("/hot", 150), ("/hot", 0), ("/gone", 0)], [[0, 0, 2], [1]], [1, 0],
                 HOSTS, [0, 2, 2, 2], [2, 0, 0, 0])
    ri = demand_input(poll, reads, {"/held": 2})
    ri.validate()
    assert list(ri.node_names) == HOSTS + ["n5"]
    assert list(ri.files.paths) == ["/held", "/hot"] and list(ri.block_ids) == [21, 11, 12]
    assert list(ri.files.base_replication) == [2, 1] and list(ri.base_replication) == [2, 1, 1]
    holders = [list(ri.node_names[ri.replica_nodes[a:b]]) for a, b in
               zip(ri.replica_indptr[:-1], ri.replica_indptr[1:])]
    assert holders == [["n1", "n5", "n3"], ["n1"], ["n2"]]
    assert list(ri.demand.pending_maps(3)) == [0, 1, 2]  # /hot at 150 is its second block
    assert list(ri.demand.job_indptr) == [0, 2, 3]
    assert list(ri.demand.free_containers) == [0, 2, 2, 2, 0]


def test_a_block_short_of_holders_raises_its_file_and_the_line_says_why():
    """Eight maps due on a one-replica block whose holder is full: raised by the copies that
    serve them, through the rails' caps; its due maps and what its holder serves go with it."""
    reads = {"/hot": _read(1, [["n1"]], [11]), "/cold": _read(2, [["n2", "n3"]], [12])}
    poll = _poll([("/hot", 0), ("/cold", 0)], [[0] * 8 + [1]], [1], HOSTS, [0, 3, 3, 3],
                 [4, 0, 0, 0], mean_map_s=40.0)
    ri = demand_input(poll, reads, {})
    policy = DemandPolicy(10.0)
    fs = decide_demand(ri, None, policy, Rails(), {})
    plan = fs.done.plan
    assert list(plan.paths) == ["/hot"] and plan.current[0] == 1 and plan.target[0] == 4
    assert fs.due[0] == pytest.approx(8.0) and fs.servable[0] == pytest.approx(1.0)
    assert plan.rule[0] == 13 and plan.rf[0] == pytest.approx(7.0)  # RULE_DEMAND, its shortfall
    rails = Rails(max_replicas_per_round=20).remaining(replicas=19)
    capped = decide_demand(ri, None, policy, rails, {})
    assert capped.done.plan.target[0] == 2  # one replica left in the round's caps


def test_the_fast_poll_lowers_only_what_it_holds_and_never_below_the_floor():
    """No map wants either file for idle_polls polls: the held one loses a replica a poll down
    to its floor (the replication its hold started from), the round's raise stays."""
    reads = {"/mine": _read(3, [["n1", "n2", "n3"]], [11]),
             "/rounds": _read(3, [["n1", "n2", "n3"]], [12])}
    poll = _poll([], [], [], HOSTS, [1, 1, 1, 1], [0, 0, 0, 0])
    ri = demand_input(poll, reads, {"/mine": 2})
    policy = DemandPolicy(10.0, idle_polls=2)
    state, targets = None, []
    for _ in range(3):
        fs = decide_demand(ri, state, policy, Rails(), {"/mine": 2})
        state = fs.done.state
        targets.append({str(p): int(t) for p, t in zip(fs.done.plan.paths, fs.done.plan.target)})
    assert targets == [{}, {"/mine": 2}, {"/mine": 2}]


def test_the_round_does_not_lower_a_file_the_fast_poll_holds():
    """A raised file the round's window did not read is lowered by the round (it looks cool),
    unless the fast poll holds it: its history has not seen the demand that raised it."""
    nodes = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    doc = Window.from_document({"params": {"delay_threshold_s": 10.0}, "live_nodes": nodes,
                                "blocks": [{"block_id": "blk_2", "nodes": ["10.0.0.2"],
                                            "default_replicas": 1, "tasks": 1,
                                            "delayed_tasks": 0, "delay_s": 0.0, "path": "/cold"}]})
    doc = doc.with_cooling({"/hot": FileBlocks(3, np.array([0]), np.array([100]), ["blk_1"],
                                               [nodes])}, {"/hot": 1})
    kw = dict(profile=None, params={}, rails=Rails(), file_bytes={"/hot": 100, "/cold": 100})
    lowered = decide(doc, None, {"/hot": 1}, **kw).plan
    assert {str(p): int(t) for p, t in zip(lowered.paths, lowered.target)} == {"/hot": 2}
    held = decide(doc, None, {"/hot": 1}, hold={"/hot": 1}, **kw).plan
    assert not len(held.changed())


def test_remaining_rails_take_off_what_the_round_used():
    rails = Rails(max_files_per_round=10, max_replicas_per_round=20, storage_budget_bytes=1000)
    left = rails.remaining(3, 25, 100, extra_elsewhere=400)
    assert (left.max_files_per_round, left.max_replicas_per_round, left.max_bytes_per_round,
            left.storage_budget_bytes) == (7, 0, None, 600)


# --- the wiring, on captured replies ------------------------------------------------------

def _captured_body(predicate) -> bytes:
    d = captured(SCENARIO)
    manifest = json.loads((d / "manifest.json").read_text())
    return next((d / ex["body"]).read_bytes() for ex in manifest["exchanges"]
                if predicate(ex["url"]) and ex["status"] == 200)


def _endpoints():
    """The collector capture's endpoints (the NameNode's files and JMX, the RM's conf),
    with the demand poll's three client calls answered by what they returned in its capture
    (counted as requests, as the real calls are)."""
    ep, replayer = replay_endpoints(SCENARIO)

    def served(kind, answer):
        def call(*args, **kw):
            ep.stats.add(kind, 0, 0.0)
            return answer(*args)
        return call

    ep.rm.apps = served("rm.apps", lambda: POLL["apps"])
    ep.rm.nodes = served("rm.nodes", lambda: POLL["nodes"])
    ep.am.tasks = served("am.tasks", lambda app, job: POLL["tasks"][app])
    return ep, replayer


class FakeHdfs:
    """The acting client (SETREPLICATION and its reads) as test_journal's."""

    def __init__(self, replication: dict[str, int]):
        self.repl, self.sent = replication, []

    def replication(self, path):
        return self.repl[path]

    def set_replication(self, path, r):
        self.sent.append((path, r))
        self.repl[path] = r

    def live_replicas(self, path):
        return [self.repl[path]]


@pytest.fixture
def daemon(tmp_path):
    """A daemon with the fast poll on (idle_polls 2, apply mode, no cluster lock), wired to the
    captured replies: both captured jobs' maps read the collector capture's five splits; the
    journal says the fast poll raised small-0 from 1 to 3."""
    from dsbra.daemon.service import Daemon

    cfg = tmp_path / "dsbra.yaml"
    cfg.write_text(f"state_dir: {tmp_path / 'state'}\nmode: apply\n"
                   "cluster: {rm: http://rm:8088, webhdfs: http://nn:9870, lock_path: null}\n"
                   "demand: {enabled: true, poll_s: 1, idle_polls: 2}\n")
    d = Daemon(load_config(str(cfg)))
    d.dir.mkdir(parents=True)
    d.ep, _ = _endpoints()
    d.collector = Collector(d.ep, since_ms=0)
    d.collector.settings()
    splits = read_splits(_captured_body(lambda u: "0013/job.splitmetainfo?" in u),
                         _captured_body(lambda u: "0013/job.split?" in u))
    for app in POLL["apps"]:
        job = job_id_of(app["id"])
        d.collector.jobs[job] = JobWatch(job, app["id"], "root", splits=splits)
    d.demand_poller = DemandPoller(d.collector)
    d.journal = Journal.open(d.dir / "journal.jsonl")
    _sent(d.journal, f"{DATA}/small-0", 1, 3, "demand")
    d.assignments = Assignments.open(d.dir / "assignments.jsonl")
    d.actor = FakeHdfs({f"{DATA}/small-0": 3})
    return d


def test_a_fast_poll_reads_only_what_changed_and_holds_what_maps_still_want(daemon):
    """First poll: the RM's two lists, each asking job's tasks once, the four files the pending
    maps read (status and blocks), nothing decided (their holders serve them within D). Next
    poll, with the same asks: the two lists only. small-0, which the fast poll holds, still has
    pending maps: kept."""
    daemon._fast_poll()
    first = daemon.status["fast_poll"]
    assert first["pending_maps"] == 7 and first["held"] == [f"{DATA}/small-0"]
    assert first["requests"] == {"rm.apps": 1, "rm.nodes": 1, "am.tasks": 2,
                                 "hdfs.stat": 4, "hdfs.blocks": 4}
    assert first["recent_decisions"] == []
    daemon._fast_poll()
    assert daemon.status["fast_poll"]["requests"] == {"rm.apps": 1, "rm.nodes": 1}
    assert daemon._fast_round["polls"] == 2 and daemon._fast_round["requests"]["rm.apps"] == 2
    metrics = daemon.metrics.registry
    assert metrics.get_sample_value("dsbra_fast_polls_total") == 2
    assert metrics.get_sample_value("dsbra_fast_poll_requests_total", {"kind": "hdfs.stat"}) == 4
    assert metrics.get_sample_value("dsbra_fast_poll_cpu_seconds_total") > 0
    assert daemon.actor.sent == []


def test_once_no_map_wants_a_held_file_the_fast_poll_lowers_it_through_the_apply_path(daemon,
                                                                                     caplog):
    """The jobs' splits forgotten (the collector's jobs gone), no pending map is on a block:
    after idle_polls polls small-0 loses one replica, journaled before it is sent, from its
    kept read (no NameNode read but the health check's), and logged as the round's lines are."""
    daemon._fast_poll()
    daemon.collector.jobs.clear()
    caplog.set_level(logging.INFO, logger="dsbra.daemon")
    daemon._fast_poll()
    assert daemon.actor.sent == []
    daemon._fast_poll()
    assert daemon.actor.sent == [(f"{DATA}/small-0", 2)]
    fast = daemon.status["fast_poll"]
    assert set(fast["requests"]) == {"rm.apps", "rm.nodes", "jmx"}  # health, before acting
    decision = fast["recent_decisions"][-1]
    assert decision["outcome"] == "sent" and decision["reason"]["rule"] == "demand-gone"
    intent = [a for a in daemon.journal.actions.values() if a.target == 2][0]
    assert intent.state == SENT and intent.reason["policy"] == "dsbra-demand"
    line = [r.getMessage() for r in caplog.records if r.getMessage().startswith("fast-poll")][-1]
    assert line.startswith(f"fast-poll round=0 file={DATA}/small-0 replication=3->2 base=1 "
                           "rule=demand-gone due=0.00 servable=0.00 ")
    assert line.endswith("outcome=sent")
    assert daemon.journal.demand_held() == {f"{DATA}/small-0": 1}  # one replica a poll
    assert daemon._fast_round["used"] == [1, 0, 0]
    page = render(daemon.status, [])
    assert "<h2>Fast poll</h2>" in page and f"alone lowers: {DATA}/small-0." in page
    assert f"{DATA}/small-0 3&rarr;2 (demand-gone rf=0 gavg=0) sent" in page
    assert "<h2>Fast poll</h2>" not in render({"state": "running"}, [])


def test_a_file_whose_change_is_pending_is_left_alone(daemon):
    """The NameNode has not made small-0's copies yet (its blocks report one replica): each
    poll settles the journal, and until the change is done the fast poll neither lowers the
    file nor asks for it again."""
    daemon.actor.live_replicas = lambda path: [1]
    daemon._fast_poll()
    daemon.collector.jobs.clear()
    for _ in range(3):
        daemon._fast_poll()
    assert daemon.actor.sent == [] and daemon.journal.pending()
    daemon.actor.live_replicas = lambda path: [3]  # the copies made: done, then lowered
    daemon._fast_poll()
    assert daemon.actor.sent == [(f"{DATA}/small-0", 2)]
    assert [(a.target, a.state) for a in daemon.journal.actions.values()] == [(3, "done"),
                                                                              (2, "sent")]


def test_a_paused_daemon_logs_the_fast_polls_refusal_once(daemon, caplog):
    daemon._fast_poll()
    daemon.collector.jobs.clear()
    (daemon.dir / "paused").write_text("dsbra pause\n")
    caplog.set_level(logging.INFO, logger="dsbra.daemon")
    for _ in range(4):
        daemon._fast_poll()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("fast-poll")]
    assert len(lines) == 1 and lines[0].endswith("outcome=refused refusal=paused"), lines
    assert daemon.actor.sent == [] and daemon.journal.demand_held() == {f"{DATA}/small-0": 1}


def test_a_failed_fast_poll_is_a_logged_skip_and_the_daemon_goes_on(daemon, caplog):
    from dsbra.errors import HadoopError

    def down(*_, **__):
        raise HadoopError("ResourceManager http://rm:8088 unreachable")

    daemon.ep.rm.apps = down
    caplog.set_level(logging.INFO, logger="dsbra.daemon")
    daemon._fast_poll()
    assert [r.getMessage() for r in caplog.records] == [
        "fast-poll round=0 failed: ResourceManager http://rm:8088 unreachable"]
    assert daemon.metrics.registry.get_sample_value("dsbra_fast_poll_errors_total") == 1
    assert daemon._fast_round["polls"] == 1 and daemon.status["fast_poll"]["pending_maps"] is None


@pytest.mark.parametrize("enabled, fast_polls", [(False, {0}), (True, {3, 4})])
def test_the_window_runs_the_fast_poll_between_the_collectors_polls_only_when_enabled(
        tmp_path, enabled, fast_polls):
    from dsbra.daemon.service import Daemon

    cfg = load_config(None, env={"DSBRA_INTERVAL_S": "1", "DSBRA_POLL_S": "1",
                                 "DSBRA_DEMAND__ENABLED": str(enabled).lower(),
                                 "DSBRA_DEMAND__POLL_S": "0.25"})
    d = Daemon(cfg)
    calls = []
    d.collector = type("C", (), {"cursor_ms": 0})()
    d._collect = lambda: calls.append("collect")
    d._fast_poll = lambda: calls.append("fast")
    d._window()
    # a 1 s window: the collector at its start and end, fast polls at 0, 0.25, 0.5 and 0.75 s
    # (one fewer on a machine slow enough to delay one past the window's end)
    assert calls.count("collect") == 2 and calls.count("fast") in fast_polls
    assert calls[0] == "collect" and calls[-1] == "collect"


def test_the_round_refreshes_the_kept_reads_and_forgets_the_rest():
    memory = FastPollMemory()
    located = json.loads(_captured_body(lambda u: "small-0?op=GET_BLOCK_LOCATIONS" in u))
    reply = {"located": located["LocatedBlocks"], "replication": 3}
    memory.reads = {"/a": FileRead.of(reply, 1), "/b": FileRead.of(reply, 1)}
    memory.shown = {"/a": (3, 2, "refused")}
    memory.refresh({"/a": reply, "/c": reply}, {"/a": 5})
    assert set(memory.reads) == {"/a"} and memory.reads["/a"].version == 5
    assert memory.shown == {}
    assert list(memory.reads["/a"].holder_names) == ["10.77.0.11", "10.77.0.12", "10.77.0.13"]
