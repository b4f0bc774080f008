"""`dsbra conf render/check` against Hadoop itself: a second one-worker cluster started from a
values file (two queues with weights 1 and 3), whose live RM and NameNode must then agree with
the rendered files; a changed weight must be reported, and `--advise` names what costs locality."""

from __future__ import annotations

import json

import pytest

from harness import need_root, run_dsbra
from netslots import SECOND

pytestmark = pytest.mark.cluster

VALUES = """
cluster: {{workers: 1, racks: 1, subnet: {subnet}, prefix: {prefix}, port_offset: {port_offset}}}
hdfs: {{replication: 1, block_size: 16m}}
yarn: {{heartbeat: 1s, locality_threshold_node: 0.5, locality_threshold_rack: 0.25}}
queues:
  - {{name: default, weight: 1}}
  - {{name: analytics, weight: {weight}, policy: fifo, max_running_apps: 7}}
placement:
  - {{rule: specified, create: false}}
  - {{rule: default, queue: default}}
"""


def test_cluster_started_from_rendered_values_agrees_and_a_changed_weight_is_reported(second_cluster_slot):
    need_root()
    tmp = second_cluster_slot
    values, changed, rendered = tmp / "values.yaml", tmp / "changed.yaml", tmp / "rendered"
    values.write_text(VALUES.format(weight=3, **SECOND))
    changed.write_text(VALUES.format(weight=1, **SECOND))
    assert run_dsbra("conf", "render", "--values", str(values), "--out", str(rendered)).returncode == 0
    state = ["--state-dir", str(tmp / "state")]
    try:
        proc = run_dsbra("cluster", "up", *state, "--values", str(values))
        assert proc.returncode == 0, proc.stderr
        env = json.loads(run_dsbra("cluster", "env", "--json", *state).stdout)
        live = ["--rm", env["rm"], "--nn", env["namenode"]]

        proc = run_dsbra("conf", "check", *live, "--values", str(values))
        assert (proc.returncode, proc.stdout.strip()) == (0, "no difference from the live cluster"), proc.stdout
        # the advice: this cluster's count-based delay is on, its AM heartbeat 500 ms
        proc = run_dsbra("conf", "check", *live, "--values", str(values), "--advise")
        lines = proc.stdout.strip().splitlines()
        assert (proc.returncode, lines[-1]) == (0, "no difference from the live cluster"), proc.stdout
        assert lines[0] == ("advice: yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms is 500 ms: set it to "
                            "100 ms in the jobs' mapred-site.xml (the ApplicationMaster sends its asks and "
                            "binds its containers at this beat)"), proc.stdout
        assert [line.split(":")[0] for line in lines[1:3]] == ["  simulator", "  real cluster"], proc.stdout
        assert len(lines) == 4, proc.stdout  # no advice on the delay
        proc = run_dsbra("conf", "check", *live, "--rendered", str(rendered))
        assert proc.returncode == 0, proc.stdout + proc.stderr

        proc = run_dsbra("conf", "check", *live, "--values", str(changed))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = proc.stdout.strip().splitlines()
        assert lines[-1] == "2 difference(s) from the live cluster", proc.stdout
        # weights 1:1 would split the worker's 2560 MB evenly; the RM splits it 1:3
        assert "root.analytics weight 1: its steady fair share would be 1280 MB of 2560 MB, the RM gives it 1920 MB" in proc.stdout
        assert "root.default weight 1: its steady fair share would be 1280 MB of 2560 MB, the RM gives it 640 MB" in proc.stdout
    finally:
        assert run_dsbra("cluster", "down", *state).returncode == 0
