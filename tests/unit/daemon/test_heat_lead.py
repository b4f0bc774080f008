"""The daemon's placement lead (placement.lead_s): it publishes the round's heat document, then
waits for the NameNode's placement plugin to read it before changing replication. Told to stop
during that wait it must not act: on the bundled cluster a daemon stopped 0.4 s into its 3 s
lead lowered a file under the previous round's document, and HDFS dropped the replica its
default picked, not the hottest (docs/placement.md, 2026-12-07)."""

from __future__ import annotations

import json
import time

from dsbra.act.journal import Journal
from dsbra.daemon.config import load_config
from dsbra.daemon.round import decide
from dsbra.daemon.service import Daemon
from dsbra.observe.window import Window
from dsbra.policy.rails import Rails

NODES = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def _raising_round():
    """A round whose plan raises /hot (every map of its one block waited D)."""
    blocks = [{"block_id": "blk_1", "nodes": ["10.0.0.1"], "default_replicas": 1, "tasks": 8,
               "delayed_tasks": 6, "delay_s": 60.0, "path": "/hot"}]
    blocks += [{"block_id": f"blk_{i}", "nodes": ["10.0.0.2", "10.0.0.3"], "default_replicas": 2,
                "tasks": 1, "delayed_tasks": 0, "delay_s": 0.0, "path": f"/cold-{i}"}
               for i in range(2, 8)]
    window = Window.from_document({"params": {"delay_threshold_s": 10.0}, "live_nodes": NODES,
                                   "blocks": blocks})
    res = decide(window, None, {}, profile=None, params={}, rails=Rails(), file_bytes={})
    assert (res.plan.target > res.plan.current).any()
    return res


def _daemon(tmp_path, lead_s: float) -> Daemon:
    cfg = tmp_path / "dsbra.yaml"
    cfg.write_text(f"state_dir: {tmp_path / 'state'}\nmode: apply\n"
                   "cluster: {rm: http://rm:8088, webhdfs: http://nn:9870, lock_path: null}\n"
                   f"placement: {{lead_s: {lead_s}}}\n")
    d = Daemon(load_config(str(cfg)))
    d.dir.mkdir(parents=True)
    d.journal = Journal.open(d.dir / "journal.jsonl")
    d.round = 7
    return d


def test_a_stop_during_the_lead_publishes_the_heat_and_withholds_the_change(tmp_path):
    d = _daemon(tmp_path, lead_s=600)
    d.stop.set()
    t0 = time.monotonic()
    assert d._publish_heat(_raising_round(), acting=True) is False
    assert time.monotonic() - t0 < 5  # the stop ends the wait, and the round does not act
    heat = json.loads(d.heat_file.read_text())
    assert heat["round"] == 7 and heat["raised"] == ["/hot"] and heat["lead_ms"] == 600_000


def test_the_lead_waited_out_lets_the_round_act(tmp_path):
    d = _daemon(tmp_path, lead_s=0.2)
    t0 = time.monotonic()
    assert d._publish_heat(_raising_round(), acting=True) is True
    assert time.monotonic() - t0 >= 0.2


def test_a_round_with_nothing_to_change_does_not_wait(tmp_path):
    d = _daemon(tmp_path, lead_s=600)
    d.stop.set()  # no wait, so nothing to withhold
    assert d._publish_heat(_raising_round(), acting=False) is True
    assert json.loads(d.heat_file.read_text())["raised"] == []
