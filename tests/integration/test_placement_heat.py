"""dsbra's NameNode placement plugin on the bundled cluster (`dsbra cluster up --placement heat`,
issue 24): a real NameNode runs BlockPlacementPolicyDsbraHeat and reads the heat document.

First with heat documents the test writes itself (so each choice is known in advance): a new
copy of a raised file's block lands on the least heated node, an excess replica of a file the
document lowers goes from the hottest holder, one of a file it does not list goes as HDFS's
default chooses, a malformed document leaves HDFS placing as its default. Then the daemon's own
end-to-end test (`dsbra run --apply`, a real process, on the daemon tests' cluster of
harness.py, which runs the plugin on one rack so HDFS's rack rule never overrides the heat): it
raises the hot files while grep jobs queue for them and lowers them when they cool, its journal
shows each change sent and closed, and every replica added or dropped is checked against the
heat it published that round.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from dsbra.bench.placement_log import heat_placements, log_plugin_at_debug, plugin_deletions
from dsbra.cluster import state as st
from harness import (BASE, HOT, Daemon, daemon_config, heat_document, holders, replay_until_raised, replication,
                     until_logged, until_no_transfers, until_replicas, until_round_read)

pytestmark = pytest.mark.cluster

#: the plugin reads the document every second (the bundled cluster's refresh.ms)
REFRESH_S = 1.0


@pytest.fixture
def heat_cluster(daemon_cluster):
    """The daemon tests' cluster, the plugin's DEBUG lines on; the heat documents the tests
    write by hand are removed at the end, so they steer nothing after this module."""
    log_plugin_at_debug(daemon_cluster[1]["namenode"])
    yield daemon_cluster
    Path(daemon_cluster[1]["heat_file"]).unlink(missing_ok=True)


def publish(env: dict, heat: dict[str, float], raised=(), round_=1, lowering=None) -> None:
    """harness.heat_document's, written whole (by a rename) as the daemon writes it, once the
    plugin has read it."""
    path = Path(env["heat_file"])
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(heat_document(heat, raised, round_, lowering))
    partial.replace(path)
    until_round_read(lambda: namenode_log(env), round_)


def namenode_log(env: dict) -> str:
    return Path(env["logs"]["namenode"]).read_text(errors="replace")


def _written_off(client, path: str, avoid: str, tries: int = 20) -> list[str]:
    """``path`` written (one replica) until its first replica is not on ``avoid``: the writer
    is no DataNode, so HDFS draws the node at random; its holders."""
    for _ in range(tries):
        client.write(path, b"x" * 1024, overwrite=True, replication=1)
        first = holders(client, path)
        if avoid not in first:
            return first
    raise AssertionError(f"{path}: HDFS put it on {avoid} {tries} times in a row")


def test_a_raised_files_new_copy_goes_to_the_least_heated_node(heat_cluster):
    """Each node a different heat: the copy goes to the coolest node HDFS's own checks accept.
    Those checks still apply (its load rule refuses a node with more than twice the average
    transfers, and one read is enough on an idle cluster: a CI run's was "too busy (1
    xceivers)"), so the plugin's line for the placement names the nodes they refused."""
    _, env, client = heat_cluster
    nodes = [w["host"] for w in env["workers"]]
    for i, coolest in enumerate(nodes[1:]):  # three files, three different coolest nodes
        path, round_ = f"/tp/raise-{i}", 10 + i
        first = _written_off(client, path, coolest)
        by_heat = [coolest] + [n for n in reversed(nodes) if n != coolest]
        publish(env, {n: 0.1 + 0.2 * k for k, n in enumerate(by_heat)}, raised=[path], round_=round_)
        until_no_transfers(client.url)
        client.set_replication(path, 2)
        placed = until_replicas(client, path, 2)
        refused = heat_placements(namenode_log(env)).get((round_, path))
        assert refused is not None, f"{path}: the plugin logged no placement by heat round {round_}"
        expected = next(n for n in by_heat if n not in first and n not in refused)
        assert placed == sorted(first + [expected]), f"{path}: heat order {by_heat}, HDFS refused {refused}"


def test_an_excess_replica_of_a_file_dsbra_lowers_goes_from_the_hottest_holder(heat_cluster):
    _, env, client = heat_cluster
    nodes = [w["host"] for w in env["workers"]]
    path = "/tp/lower"
    client.write(path, b"y" * 1024, overwrite=True, replication=4)
    assert until_replicas(client, path, 4) == sorted(nodes)
    left = list(nodes)
    for step, hottest in enumerate([nodes[2], nodes[0], nodes[3]]):
        heat = {n: 0.2 for n in nodes}
        heat[hottest] = 0.8
        publish(env, heat, round_=20 + step, lowering={path: (len(left) - 1, left)})
        client.set_replication(path, len(left) - 1)
        left.remove(hottest)
        assert until_replicas(client, path, len(left)) == sorted(left)


#: the bundled cluster's dfs.heartbeat.interval, and Hadoop's default
#: dfs.namenode.tolerate.heartbeat.multiplier: a DataNode silent for longer is the first whose
#: replica BlockPlacementPolicyDefault deletes
HEARTBEAT_S, TOLERATE_HEARTBEATS = 1, 4


def test_a_file_dsbra_never_raised_loses_the_replica_hdfss_default_chooses(heat_cluster):
    """A usable heat document whose lowering is another file's (with the same holders, down to
    another replication): this file's excess replica is deleted as HDFS's default deletes it,
    and the plugin says so. The default's choice is made known in advance: a holder whose
    heartbeat is overdue (its DataNode paused) goes first, while the heat names another holder
    the hottest. (The heat path too would delete an overdue holder's replica first: the
    plugin's line tells the two paths apart, its JUnit test every other case.)"""
    layout, env, client = heat_cluster
    workers = {w["host"]: w["name"] for w in env["workers"]}
    path = "/tp/never-raised"
    client.write(path, b"w" * 1024, overwrite=True, replication=3)
    held = until_replicas(client, path, 3)
    silent, hottest = held[0], held[1]
    heat = {n: 0.1 for n in workers}
    heat[hottest] = 0.9
    publish(env, heat, round_=30, lowering={"/tp/other": (1, held)})
    pid = st.load(layout.state_file)["daemons"][f"datanode-{workers[silent]}"]["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(HEARTBEAT_S * TOLERATE_HEARTBEATS + 4)
        client.set_replication(path, 2)  # the NameNode chooses the replica to delete now
    finally:
        os.kill(pid, signal.SIGCONT)
    assert until_replicas(client, path, 2) == sorted(set(held) - {silent})
    deletions = [d for d in plugin_deletions(namenode_log(env)) if d["holders"] == held]
    assert deletions, deletions
    last = deletions[-1]
    assert (last["dropped"], last["by"].startswith("default"), last["down_to"]) == ([silent], True, 2), deletions


def test_malformed_heat_leaves_the_default_placement_and_says_so(heat_cluster):
    _, env, client = heat_cluster
    Path(env["heat_file"]).write_text('{"format": "dsbra-heat", "version": 1')
    until_logged(lambda: namenode_log(env), r"dsbra heat malformed \(.*heat\.json: not JSON")
    path = "/tp/malformed"
    client.write(path, b"z" * 1024, overwrite=True, replication=1)
    client.set_replication(path, 3)
    until_replicas(client, path, 3)  # HDFS still places, as its default


class Watch:
    """Every half second: the hot files' holders and the heat document in force. A change of
    holders is judged by the document read with it: the daemon publishes placement.lead_s
    before acting, and its rounds are far longer apart than the NameNode takes to act."""

    def __init__(self, client, heat_file: Path):
        self.client, self.heat_file = client, heat_file
        self.now = {p: holders(client, p) for p in HOT}
        self.adds: list[tuple] = []
        self.drops: list[tuple] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.wait(0.5):
            try:
                doc = json.loads(self.heat_file.read_text())
                heat = doc["nodes"]
            except (OSError, ValueError, KeyError):
                continue
            for p in HOT:
                h = holders(self.client, p)
                added, gone = set(h) - set(self.now[p]), set(self.now[p]) - set(h)
                if added:
                    self.adds.append((p, self.now[p], sorted(added), doc))
                if gone:
                    self.drops.append((p, self.now[p], sorted(gone), heat))
                self.now[p] = h

    def close(self):
        self.stop.set()
        self.thread.join()


def raises_against_heat(adds: list[tuple], placements: dict[tuple[int, str], set[str]]
                        ) -> list[tuple]:
    """The raises that BlockPlacementPolicyDsbraHeat could not have placed so: [] if each does.

    One raise is one chooseTarget call, so the copies of one file seen under one document are
    judged together (a pipeline's replicas reach the NameNode in separate block reports, and
    may fall in different polls). The plugin must have placed it by heat (its line in
    ``placements``), and its new holders must be among the least heated non-holders that
    HDFS's checks did not refuse, each node's heat counting the copies of the round's other
    raises placed before it, as the plugin counts them (heatWithPlaced); which raise the
    NameNode placed first is not seen, so any order of the round's raises may explain them.
    """
    rounds: dict[int, dict[str, list]] = {}
    for path, before, added, doc in adds:
        raise_ = rounds.setdefault(doc["round"], {}).setdefault(path, [before, [], doc])
        raise_[1] += added
    wrong = []
    for round_, raises in rounds.items():
        orders = itertools.permutations(raises.items())
        if not any(_placeable(order, round_, placements) for order in orders):
            wrong.append([(path, before, added, doc["nodes"], placements.get((round_, path)))
                          for path, (before, added, doc) in raises.items()])
    return wrong


def _placeable(order, round_: int, placements: dict[tuple[int, str], set[str]]) -> bool:
    placed: dict[str, list[float]] = {}  # node: [RF sum, copies] of the round's placed copies

    def heat(doc, node):
        h, blocks = doc["nodes"].get(node, 0.0), doc.get("blocks", {}).get(node)
        rf_sum, copies = placed.get(node, (0.0, 0))
        return h if not copies or blocks is None else (h * blocks + rf_sum) / (blocks + copies)

    for path, (before, added, doc) in order:
        refused = placements.get((round_, path))
        if refused is None:  # not placed by heat (the plugin did not hold this round)
            return False
        cooler = sorted(heat(doc, n) for n in doc["nodes"] if n not in before and n not in refused)
        if not all(heat(doc, n) <= cooler[len(added) - 1] for n in added):
            return False
        rf = doc.get("rf", {}).get(path, max(doc["nodes"].values()))
        for n in added:
            rf_sum, copies = placed.get(n, (0.0, 0))
            placed[n] = [rf_sum + rf, copies + 1]
    return True


def test_the_daemons_raises_and_lowers_follow_its_heat(heat_cluster, tmp_path):
    layout, env, client = heat_cluster
    # a raise to 2: the plugin chooses 1 of the 3 non-holders (to 4 it has no choice), and one
    # round lowers it back
    daemon = Daemon.configure(tmp_path, "heat", daemon_config(
        env, tmp_path / "heat", placement={"heat_file": env["heat_file"], "lead_s": 3 * REFRESH_S},
        rails={"max_replication": 2}))
    watch = Watch(client, Path(env["heat_file"]))
    daemon.start()
    try:
        raised = replay_until_raised(layout, daemon, client)
        lowered = raised and daemon.until(lambda: replication(client) == BASE,
                                          6 * daemon.cfg["interval_s"])
        # a lowering sets the file's replication at once; the NameNode deletes the excess
        # replica at its holder's next heartbeat (a CI run's test ended before it was gone)
        if lowered:
            daemon.until(lambda: all(len(watch.now[p]) == BASE[p] for p in HOT), 60)
    finally:
        watch.close()
        err = daemon.stop()
    assert raised, err[-4000:]
    assert lowered, (replication(client), err[-4000:])
    ops = daemon.journal()
    intents = [r for r in ops if r["op"] == "intent"]
    up = [r for r in intents if r["target"] > r["before"]]
    down = [r for r in intents if r["target"] < r["before"]]
    assert up and all(r["path"] in HOT and r["reason"]["rule"] == "hot" and r["base"] == 1
                      for r in up)
    assert all(r["target"] <= 2 for r in up), up
    assert down and all(r["target"] >= r["base"] == 1 for r in down)
    assert {r["path"] for r in down} <= {r["path"] for r in up}
    closed = {r["id"] for r in ops if r["op"] in ("done", "cancelled", "failed")}
    assert {r["id"] for r in intents} <= closed | {r["id"] for r in ops if r["op"] == "sent"}
    assert "decision round=" in err and "outcome=sent" in err
    assert re.search(r"dsbra heat usable \(round \d+, 4 DataNodes\)", namenode_log(env))
    assert watch.adds and watch.drops
    placements = heat_placements(namenode_log(env))
    assert not raises_against_heat(watch.adds, placements), \
        raises_against_heat(watch.adds, placements)
    for path, before, gone, heat in watch.drops:
        assert len(gone) == 1, (path, before, gone)  # one replica a round
        assert heat[gone[0]] == max(heat[n] for n in before), (path, before, gone, heat)
