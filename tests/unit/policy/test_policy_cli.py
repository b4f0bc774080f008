"""``dsbra plan``: the spec's example, options, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from dsbra.policy.cli import plan

SPEC_EXAMPLE = {
    "params": {"delay_threshold_s": 10, "alpha": 0.5, "rf_divisor": 1, "gavg_scope": "active",
               "gate": 0.2, "cold_low": 0.1, "cold_high": 0.2, "hot_margin": 0.2, "step": 0.2,
               "max_replication": 10},
    "live_nodes": ["dn1", "dn2", "dn3"],
    "blocks": [{"block_id": "b1", "nodes": ["dn1", "dn2"], "default_replicas": 2,
                "tasks": 4, "delayed_tasks": 3, "delay_s": 25.0, "y": 0.1, "n": 3}],
}

# b1 of the spec, plus: b2 read without delay; b3 cold with an extra replica.
# X1 = (3/4 + 25/40)/2 = 0.6875, RF1 = .5*.6875 + .5*.1 = 0.39375
# X2 = 0, RF2 = 0 (active: read); b3: N=0, Y=0.02 -> RF3 = 0.01 (active: Y > 0)
# GAvg = 0.40375/3 = 0.134583 <= 0.2: dereplicate only, RF <= 0.1 and RC > DRC: b3
# DNAvg: dn1 {b1, b3} = 0.201875, dn2 {b1, b2} = 0.196875, dn3 {b3} = 0.01 -> b3 loses dn1
THREE = {
    "params": {"delay_threshold_s": 10},
    "live_nodes": ["dn1", "dn2", "dn3"],
    "blocks": [SPEC_EXAMPLE["blocks"][0],
               {"block_id": "b2", "nodes": ["dn2"], "default_replicas": 1, "tasks": 5,
                "delayed_tasks": 0, "delay_s": 0},
               {"block_id": "b3", "nodes": ["dn1", "dn3"], "default_replicas": 1, "tasks": 0,
                "delayed_tasks": 0, "delay_s": 0, "y": 0.02, "n": 9}],
}


def invoke(doc, *args, profile="calibrated"):
    """``dsbra plan`` on ``doc``; the hand-computed examples use the calibrated profile's fixed
    thresholds (profile=None: the default profile)."""
    chosen = ["--profile", profile] if profile and "--profile" not in args else []
    result = CliRunner().invoke(plan, ["--input", "-", *chosen, *args], input=json.dumps(doc))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_spec_example():
    out = invoke(SPEC_EXAMPLE)
    assert set(out) == {"gavg", "rf", "y_next", "dn_avg", "replicate", "dereplicate"}
    assert out["rf"] == {"b1": pytest.approx(0.39375)}
    assert out["gavg"] == pytest.approx(0.39375)
    assert out["y_next"] == {"b1": pytest.approx((0.1 * 3 + 0.39375) / 4)}
    assert out["dn_avg"] == {"dn1": pytest.approx(0.39375), "dn2": pytest.approx(0.39375),
                             "dn3": 0.0}
    assert out["replicate"] == {} and out["dereplicate"] == {}


def test_three_blocks_by_hand():
    out = invoke(THREE)
    assert out["rf"] == {"b1": pytest.approx(0.39375), "b2": 0.0, "b3": pytest.approx(0.01)}
    assert out["gavg"] == pytest.approx(0.40375 / 3)
    assert out["dn_avg"]["dn1"] == pytest.approx(0.201875)
    assert out["dereplicate"] == {"b3": "dn1"}
    assert out["replicate"] == {}


def test_set_and_profile_override():
    # gate 0.1 opens replication: b1 > GAvg + 0.2 = 0.3346, r = floor(0.2592/0.2) = 1 -> dn3
    out = invoke(THREE, "--set", "gate=0.1")
    assert out["replicate"] == {"b1": ["dn3"]}
    # with gate open, cold_high 0.2 applies: b3 still goes
    assert out["dereplicate"] == {"b3": "dn1"}
    literal = invoke(THREE, "--profile", "paper-literal", "--set", "gate=0.1")
    assert literal["rf"]["b1"] == pytest.approx(0.39375 / 2)
    assert literal["replicate"] == {}
    # --set wins over the input's params
    out = invoke(THREE, "--set", "delay_threshold_s=5")
    assert out["rf"]["b1"] == pytest.approx(0.5 * (0.75 + 25 / 20) / 2 + 0.05)


def test_default_profile_is_adaptive_popular():
    # b1: pressure N x RF = 4 x 0.39375 = 1.575, not above 2 x the read blocks' mean pressure
    # (1.575 / 2) -> not hot; b3 unread with an extra replica -> needs none, loses dn1
    default = invoke(THREE, profile=None)
    assert default == invoke(THREE, profile="adaptive-popular")
    assert default["replicate"] == {} and default["dereplicate"] == {"b3": "dn1"}
    # b1 read 40 times, 30 delayed: pressure 15.75 > 2 x 15.75 / 3 (b1, b2, b4 read)
    b4 = {"block_id": "b4", "nodes": ["dn3"], "default_replicas": 1, "tasks": 1,
          "delayed_tasks": 0, "delay_s": 0}
    hot = dict(THREE, blocks=[dict(THREE["blocks"][0], tasks=40, delayed_tasks=30,
                                   delay_s=250.0), *THREE["blocks"][1:], b4])
    assert invoke(hot, profile=None)["replicate"] == {"b1": ["dn3"]}
    assert invoke(hot)["replicate"] == {}  # calibrated: GAvg under the gate


def test_with_rails_shows_the_file_plan(tmp_path):
    doc = dict(THREE, rails={"protected": ["b3"]})
    out = invoke(doc, "--with-rails")
    files = out["file_plan"]["files"]
    assert files == [{"file": "b3", "current": 2, "wanted": 1, "target": 2,
                      "reason": {"policy": "dsbra", "rule": "cold",
                                 "rf": pytest.approx(0.01), "gavg": pytest.approx(0.40375 / 3)},
                      "status": "protected", "placement": []}]
    target = tmp_path / "plan.json"
    CliRunner().invoke(plan, ["--input", "-", "--profile", "calibrated", "--output", str(target)],
                       input=json.dumps(THREE))
    assert json.loads(target.read_text())["dereplicate"] == {"b3": "dn1"}


def _bad(doc_or_text, *args):
    text = doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text)
    proc = subprocess.run([sys.executable, "-m", "dsbra", "plan", "--input", "-", *args],
                          input=text, capture_output=True, text=True, timeout=60)
    return proc


def _with_block(**changes):
    block = dict(SPEC_EXAMPLE["blocks"][0], **changes)
    return dict(SPEC_EXAMPLE, blocks=[block])


def _without(key):
    block = dict(SPEC_EXAMPLE["blocks"][0])
    del block[key]
    return dict(SPEC_EXAMPLE, blocks=[block])


@pytest.mark.parametrize("doc,args,message", [
    (_without("tasks"), (), "missing field 'tasks'"),
    ({"blocks": []}, (), "missing field 'live_nodes'"),
    (_with_block(tasks=-1), (), "'tasks' must not be negative"),
    (_with_block(delayed_tasks=-2), (), "'delayed_tasks' must not be negative"),
    (_with_block(delay_s=-1.0), (), "'delay_s' must not be negative"),
    (_with_block(tasks=2**40), (), "'tasks' is too large"),
    (_with_block(default_replicas=70000), (), "is too large"),
    (_with_block(tasks="4"), (), "must be an integer count"),
    (_with_block(nodes=["dn1", "dn7"]), (), "unknown node 'dn7'"),
    (_with_block(delayed_tasks=9), (), "delayed_tasks 9 > tasks 4"),
    (dict(SPEC_EXAMPLE, params={"delay_threshold_s": 0}), (), "delay_threshold_s must be > 0"),
    (dict(SPEC_EXAMPLE, params={"delay_threshold_s": -3}), (), "delay_threshold_s must be > 0"),
    (dict(SPEC_EXAMPLE, params={}), (), "missing parameter delay_threshold_s"),
    ("{\"params\": ", (), "not valid JSON"),
    ("[1, 2]", (), "top level must be a JSON object"),
    (SPEC_EXAMPLE, ("--set", "bogus=1"), "unknown parameter 'bogus'"),
    (SPEC_EXAMPLE, ("--set", "nonsense"), "expects KEY=VALUE"),
    (SPEC_EXAMPLE, ("--set", "gavg_scope=some"), "gavg_scope must be one of"),
    (dict(SPEC_EXAMPLE, rails={"min_replication": 0}), ("--with-rails",),
     "input: rails.min_replication must be >= 1, got 0"),
    (dict(SPEC_EXAMPLE, rails={"cluster_min_replication": 2}), ("--with-rails",),
     "input: unknown rail rails.cluster_min_replication"),
])
def test_bad_input_is_one_line_and_nonzero(doc, args, message):
    proc = _bad(doc, *args)
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("dsbra: error: ")
    assert message in lines[0]


def test_help():
    result = CliRunner().invoke(plan, ["--help"])
    assert result.exit_code == 0
    assert "--profile" in result.output and "--with-rails" in result.output
