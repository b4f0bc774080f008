"""`dsbra restore`'s core: the files dsbra left above their base go back to it, journaled, and
nothing else is touched (the command against the bundled cluster: tests/integration/test_guide.py)."""

from __future__ import annotations

from dsbra.act.journal import CANCELLED, DONE, SENT, Journal
from dsbra.act.restore import RESTORE_RULE, restore_bases, wait_settled

REASON = {"policy": "dsbra", "rule": "hot", "rf": 2.5, "gavg": 0.8}


def raised(journal: Journal, path: str, before: int, target: int) -> None:
    journal.mark(journal.intent(path, before, target, before, REASON, 1), SENT)


def test_only_files_dsbra_left_raised_go_back_and_only_to_their_base(tmp_path, fake_hdfs):
    j = Journal.open(tmp_path / "journal.jsonl")
    raised(j, "/hot", 1, 3)
    raised(j, "/cooled", 2, 4)
    j.mark(j.intent("/cooled", 4, 2, 2, REASON, 5), SENT)  # lowered back by the daemon
    raised(j, "/theirs", 1, 2)  # someone set it to 5 since
    raised(j, "/gone", 1, 2)  # deleted since
    hdfs = fake_hdfs({"/hot": 3, "/cooled": 2, "/theirs": 5, "/other": 7})

    dry = restore_bases(j, hdfs, apply=False)
    assert hdfs.sent == []
    assert {r["file"]: r["outcome"] for r in dry} == {
        "/gone": "skipped: file deleted", "/hot": "dry-run",
        "/theirs": "skipped: replication is 5, dsbra set 2: changed by someone else since, "
                   "left as it is"}

    done = restore_bases(j, hdfs, apply=True)
    assert hdfs.sent == [("/hot", 1)]
    assert [(r["file"], r["dsbra_set"], r["base"], r["outcome"]) for r in done
            if r["outcome"] == "sent"] == [("/hot", 3, 1, "sent")]
    assert hdfs.repl == {"/hot": 1, "/cooled": 2, "/theirs": 5, "/other": 7}
    # journaled as the daemon's changes are: a daemon started later knows the file is at base
    again = Journal.open(tmp_path / "journal.jsonl")
    last = max(again.actions.values(), key=lambda a: a.id)
    assert (last.path, last.before, last.target, last.reason) == ("/hot", 3, 1, {"rule": RESTORE_RULE})
    assert "/hot" not in again.raised_files()
    # run again: nothing more to send
    assert [r["outcome"] for r in restore_bases(again, hdfs, apply=True)
            if r["file"] == "/hot"] == []


def test_wait_settled_returns_once_the_namenode_reports_base(tmp_path, fake_hdfs):
    j = Journal.open(tmp_path / "journal.jsonl")
    raised(j, "/hot", 1, 3)
    # the raise's copies were still being made when the daemon stopped: superseded, so
    # neither this wait nor a daemon started later waits for them
    hdfs = fake_hdfs({"/hot": 3}, replicas={"/hot": [3, 2]})
    restore_bases(j, hdfs, apply=True)
    ticks = iter(range(100))
    sleeps = []

    def sleep(s):
        sleeps.append(s)
        if len(sleeps) == 2:  # the NameNode dropped the extra replicas
            hdfs.replicas["/hot"] = [1, 1]

    left = wait_settled(j, hdfs, {"/hot"}, timeout_s=50, every_s=5, clock=lambda: next(ticks),
                        sleep=sleep)
    assert left == set() and len(sleeps) == 2
    assert [a.state for a in j.actions.values()] == [CANCELLED, DONE]
    assert j.pending_raises() == []


def test_wait_settled_names_what_is_still_above_base_at_the_timeout(tmp_path, fake_hdfs):
    j = Journal.open(tmp_path / "journal.jsonl")
    raised(j, "/hot", 1, 3)
    hdfs = fake_hdfs({"/hot": 3}, replicas={"/hot": [3]})
    restore_bases(j, hdfs, apply=True)
    ticks = iter(range(0, 1000, 10))
    assert wait_settled(j, hdfs, {"/hot"}, timeout_s=25, clock=lambda: next(ticks),
                        sleep=lambda s: None) == {"/hot"}
