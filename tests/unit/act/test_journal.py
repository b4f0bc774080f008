"""The action journal: intents before sends, reconciliation after a crash, bases kept.

``fake_hdfs`` (conftest.py) stands for the NameNode's replication setting of each file only;
the journal (the component tested here) is real, on disk.
"""

from __future__ import annotations

import os

import pytest

from dsbra.act.journal import CANCELLED, DONE, SENT, Journal
from dsbra.errors import StateError

REASON = {"policy": "dsbra", "rule": "hot", "rf": 2.5, "gavg": 0.8}


def test_intent_is_on_disk_before_the_send(tmp_path):
    j = Journal.open(tmp_path / "j.jsonl")
    a = j.intent("/f", 1, 3, 1, REASON, 1)
    again = Journal.open(tmp_path / "j.jsonl")
    assert again.actions[a.id].state == "intent" and again.actions[a.id].reason == REASON
    assert again.base == {"/f": 1}


def test_reconcile_never_resends_and_closes_every_intent(tmp_path, fake_hdfs):
    path = tmp_path / "j.jsonl"
    j = Journal.open(path)
    arrived = j.intent("/arrived", 1, 3, 1, REASON, 1)  # crash after the send
    lost = j.intent("/lost", 1, 2, 1, REASON, 1)  # crash before the send
    other = j.intent("/other", 1, 2, 1, REASON, 1)  # someone else changed it
    gone = j.intent("/gone", 2, 3, 2, REASON, 1)
    hdfs = fake_hdfs({"/arrived": 3, "/lost": 1, "/other": 5})
    j = Journal.open(path)  # the restart
    j.reconcile(hdfs)
    assert hdfs.sent == []
    states = {a.path: a.state for a in j.actions.values()}
    assert states == {"/arrived": SENT, "/lost": CANCELLED, "/other": CANCELLED,
                      "/gone": CANCELLED}
    assert j.raised_files() == {"/arrived": 1}
    # sent, copies done once the NameNode reports 3 replicas on every block
    hdfs.replicas["/arrived"] = [3, 2]
    assert j.settle(hdfs) == [] and j.pending()
    hdfs.replicas["/arrived"] = [3, 3]
    assert [a.id for a in j.settle(hdfs)] == [arrived.id] and not j.pending()
    j = Journal.open(path)  # and all of it survives another restart
    assert j.actions[arrived.id].state == DONE and j.actions[lost.id].state == CANCELLED
    assert j.actions[other.id].detail.startswith("reconciled: superseded")
    assert j.actions[gone.id].detail == "file deleted"


def test_base_is_the_first_one_recorded(tmp_path):
    j = Journal.open(tmp_path / "j.jsonl")
    j.mark(j.intent("/f", 1, 2, 1, REASON, 1), SENT)
    j.mark(j.intent("/f", 2, 3, 2, REASON, 2), SENT)  # the plan thought base 2: journal knows 1
    assert j.base["/f"] == 1 and j.actions[2].base == 1 and j.raised_files() == {"/f": 1}
    j.mark(j.intent("/f", 3, 1, 1, {**REASON, "rule": "cold"}, 3), SENT)
    assert j.raised_files() == {}


def test_torn_last_line_is_ignored_a_torn_middle_line_is_an_error(tmp_path):
    path = tmp_path / "j.jsonl"
    j = Journal.open(path)
    j.intent("/f", 1, 2, 1, REASON, 1)
    with open(path, "a") as fh:
        fh.write('{"op": "sent", "id"')
    assert Journal.open(path).actions[1].state == "intent"
    with open(path, "a") as fh:
        fh.write("\n" + '{"op": "sent", "id": 1}' + "\n")
    with pytest.raises(StateError, match="line 2 is malformed"):
        Journal.open(path)


def test_appends_are_fsynced_lines(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    j = Journal.open(tmp_path / "j.jsonl")
    j.mark(j.intent("/f", 1, 2, 1, REASON, 1), SENT)
    assert len(synced) == 2


def test_only_raises_still_making_copies_are_pending_raises(tmp_path):
    """A lowering the NameNode has not finished (after a failover it waits for block reports)
    keeps an extra replica and copies nothing: it is pending, but not a pending raise."""
    j = Journal.open(tmp_path / "j.jsonl")
    up, down = j.intent("/hot", 1, 3, 1, REASON, 1), j.intent("/cool", 4, 3, 1, REASON, 1)
    done = j.intent("/done", 1, 2, 1, REASON, 1)
    for a in (up, down, done):
        j.mark(a, SENT)
    j.mark(done, DONE, "replicas [2]")
    assert {a.id for a in j.pending()} == {up.id, down.id}
    assert [a.id for a in j.pending_raises()] == [up.id]
