"""`dsbra conf` and Spark's locality waits: `delay --engine spark` (the paper's rule over executor
slots), `render` writing spark-defaults.conf, and `check --spark-app` on replies captured from the
bundled cluster: tests/fixtures/spark/4.0.1/grep-hot (its expected.json names the application,
4 executors of 1 core, waits of 3000ms, through the RM's proxy while it ran and from the History
Server after) and that cluster's 4 NodeManagers on 2 racks (hadoop-3.4.2/endpoints, 0002.body).
The "bad" applications are the captured documents with one setting or host changed, as marked."""

from __future__ import annotations

import copy
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml
from requests.adapters import BaseAdapter

from dsbra.cli import main
from dsbra.cluster import spark
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.values import parse_values
from dsbra.conf.delay import replica_reach, size_spark_delay, skip_count
from dsbra.conf.render import render_values
from dsbra.conf.spark_check import app_from_replies, check_app
from dsbra.hadoop.spark_conf import spark_time_ms, waits
from dsbra.errors import ConfigError, HadoopError, InputError
from dsbra.observe.http_fixtures import Replayer

CAPTURED = Path(__file__).parents[2] / "fixtures" / "captured"
GREP = CAPTURED.parent / "spark" / "4.0.1" / "grep-hot"
RM_NODES = CAPTURED / "hadoop-3.4.2" / "endpoints"
APP = json.loads((GREP / "expected.json").read_text())["app_id"]
HISTORY, RM = "http://10.77.0.1:18080", "http://10.77.0.1:8088"


def body(directory: Path, name: str):
    return json.loads((directory / name).read_text())


def history_reply(suffix: str):
    """The History Server's captured reply to /applications/<app><suffix>."""
    manifest = json.loads((GREP / "manifest.json").read_text())
    url = f"{HISTORY}/api/v1/applications/{APP}{suffix}"
    return body(GREP, next(e["body"] for e in manifest["exchanges"] if e["url"] == url and e["status"] == 200))


def first_proxy_reply(suffix: str):
    """The driver's first captured reply through the RM's proxy (the driver alone, then)."""
    manifest = json.loads((GREP / "manifest.json").read_text())
    url = f"{RM}/proxy/{APP}/api/v1/applications/{APP}{suffix}"
    return body(GREP, next(e["body"] for e in manifest["exchanges"] if e["url"] == url and e["status"] == 200))


def environment() -> dict:
    """/environment from the History Server."""
    return history_reply("/environment")


def executors() -> list[dict]:
    """/allexecutors from the History Server: executors 1-4 on 10.77.0.11-14, and the driver."""
    return history_reply("/allexecutors")


def nodes() -> list[dict]:
    return body(RM_NODES, "0002.body")["nodes"]["node"]


def with_properties(env: dict, **changed: str) -> dict:
    """The captured environment with Spark properties set (a variation, not a capture)."""
    env = copy.deepcopy(env)
    props = dict(env["sparkProperties"])
    props.update({key.replace("__", "."): value for key, value in changed.items()})
    env["sparkProperties"] = [[k, v] for k, v in props.items()]
    return env


def app(env=None, execs=None, rm_nodes=None):
    return app_from_replies(APP, env or environment(), execs or executors(), rm_nodes)


# ---- conf delay --engine spark ------------------------------------------------------------


def test_spark_waits_are_the_papers_skip_count_over_executor_slots():
    s = size_spark_delay(0.95, 20, 100, 3, executors=8, executor_cores=4, task_seconds=30,
                         executor_nodes=8, racks=5)
    d = 100 / 3 * math.log(2)  # (1-0.95)*20 = 1: D = (M/R) ln 2
    assert s.skip_count == pytest.approx(d) == skip_count(0.95, 20, 100, 3)
    assert s.slots == 32 and s.node_ms == round(d * 30 / 32 * 1000)
    # the rack level: the same rule over 5 racks, a block on 2 of them
    assert s.rack_skip_count == pytest.approx(5 / 2 * math.log(2))
    assert s.rack_ms == round(5 / 2 * math.log(2) * 30 / 32 * 1000)
    # 8 executors' nodes of 100 hold a replica of 1 - C(92,3)/C(100,3) of the blocks
    assert s.reach == pytest.approx(1 - math.comb(92, 3) / math.comb(100, 3))
    assert any("out of reach whatever the wait" in w for w in s.warnings)


def test_spark_settings_are_whole_milliseconds_spark_reads_back():
    s = size_spark_delay(0.95, 8, 4, 3, executors=4, executor_cores=1, task_seconds=3.4, racks=2)
    settings = s.settings()
    assert list(settings) == ["spark.locality.wait", "spark.locality.wait.process",
                              "spark.locality.wait.node", "spark.locality.wait.rack"]
    assert all(re.fullmatch(r"[1-9][0-9]*ms", v) for v in settings.values())
    assert spark_time_ms(settings["spark.locality.wait.node"]) == s.node_ms
    assert settings["spark.locality.wait"] == settings["spark.locality.wait.process"] == f"{s.node_ms}ms"
    assert s.reach == 1.0 and s.executor_nodes == 4 and s.warnings == ()


def test_one_rack_has_no_rack_wait_and_a_tiny_wait_is_not_zero():
    s = size_spark_delay(0.5, 1000, 10, 3, executors=1000, executor_cores=8, task_seconds=0.01)
    assert s.rack_skip_count is None and s.rack_ms == 0
    assert s.node_ms == 1  # 0 would turn delay scheduling off


def test_a_skip_count_above_the_slots_is_capped_at_one_task_length():
    s = size_spark_delay(0.95, 1, 4, 3, executors=2, executor_cores=1, task_seconds=10)
    assert s.skip_count == pytest.approx(-(4 / 3) * math.log(0.05 / 1.05)) and s.skip_count > 2
    assert s.node_ms == 10_000  # every slot is offered once within T
    assert any("exceeds the 2 executor slots" in w for w in s.warnings)


def test_executors_default_to_one_a_node():
    assert size_spark_delay(0.9, 10, 4, 2, executors=8, executor_cores=1, task_seconds=1).executor_nodes == 4
    assert size_spark_delay(0.9, 10, 4, 2, executors=2, executor_cores=1, task_seconds=1).executor_nodes == 2
    assert replica_reach(4, 2, 2) == pytest.approx(1 - 1 / 6)


@pytest.mark.parametrize("kw, word", [
    ({"executors": 0}, "--executors"), ({"executor_cores": 0}, "--executor-cores"),
    ({"executor_nodes": 6}, "--executor-nodes"), ({"racks": 11}, "--racks"),
    ({"task_seconds": float("nan")}, "--task-seconds"), ({"task_seconds": 0}, "--task-seconds"),
])
def test_bad_spark_inputs_name_the_flag(kw, word):
    args = {"executors": 5, "executor_cores": 1, "task_seconds": 1.0} | kw
    with pytest.raises(InputError, match=word):
        size_spark_delay(0.9, 10, 10, 3, **args)


def _dsbra(*args):
    return subprocess.run([sys.executable, "-m", "dsbra", *args], capture_output=True, text=True)


SPARK_DELAY = ["conf", "delay", "--engine", "spark", "--locality", "0.95", "--tasks", "20", "--nodes", "100",
               "--replication", "3", "--executors", "8", "--executor-cores", "4", "--task-seconds", "30",
               "--racks", "5"]


def test_cli_prints_spark_defaults_lines_and_json():
    proc = _dsbra(*SPARK_DELAY)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if not line.startswith("#")]
    assert [line.split()[0] for line in lines] == ["spark.locality.wait", "spark.locality.wait.process",
                                                   "spark.locality.wait.node", "spark.locality.wait.rack"]
    assert all(re.fullmatch(r"[0-9]+ms", line.split()[1]) for line in lines)
    assert "spark.locality.wait.node                21661ms" in lines
    assert "warning: executors on 8 of 100 nodes" in proc.stderr
    doc = json.loads(_dsbra(*SPARK_DELAY, "--json").stdout)
    assert doc["node_ms"] == 21661 and doc["slots"] == 32 and doc["settings"]["spark.locality.wait.rack"] == "1625ms"


@pytest.mark.parametrize("args, error", [
    (["--executors", "4"], "dsbra: error: --executors is not for --engine yarn"),
    (["--engine", "spark", "--executors", "4", "--task-seconds", "3", "--scheduler", "capacity"],
     "dsbra: error: --scheduler is not for --engine spark"),
    (["--engine", "spark", "--task-seconds", "3"],
     "dsbra: error: --engine spark needs --executors and --task-seconds (Spark's waits are times)"),
])
def test_cli_keeps_each_engines_options_apart(args, error):
    proc = _dsbra("conf", "delay", "--locality", "0.9", "--tasks", "8", "--nodes", "4", "--replication", "3",
                  *args)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [error]


# ---- conf render: spark-defaults.conf --------------------------------------------------------


SPARK_VALUES = """
spark:
  enabled: true
  locality_wait_process: 0s
  locality_wait_node: 1.5s
  locality_wait_rack: 250ms
render: {java_home: /jvm, spark_python: /opt/spark-venv/bin/python}
"""


def test_spark_values_render_spark_defaults_conf():
    values = parse_values(yaml.safe_load(SPARK_VALUES))
    assert values.spec_fields == {"spark": True, "spark_locality_wait_process_s": 0.0,
                                  "spark_locality_wait_node_s": 1.5, "spark_locality_wait_rack_s": 0.25}
    conf = dict(line.split(None, 1) for line in render_values(values)["spark-defaults.conf"].splitlines()
                if line and not line.startswith("#"))
    assert conf["spark.locality.wait"] == "1500ms" and conf["spark.locality.wait.node"] == "1500ms"
    assert conf["spark.locality.wait.process"] == "0ms" and conf["spark.locality.wait.rack"] == "250ms"
    assert conf["spark.pyspark.python"] == "/opt/spark-venv/bin/python"
    assert conf["spark.yarn.archive"] == "hdfs://10.77.0.1:8020/apps/spark/4.0.1/spark-libs.zip"
    assert "spark-defaults.conf" not in render_values(parse_values({}))


def test_conf_render_writes_what_cluster_up_writes(tmp_path):
    """One template: `conf render`'s spark-defaults.conf is `cluster up --spark`'s for the same
    interpreter and archive."""
    install = spark.SparkInstall(tmp_path / spark.SPARK_VERSION)
    values = parse_values({"spark": {"enabled": True, "locality_wait_node": "2s"},
                           "render": {"spark_python": str(install.python)}})
    theirs = spark.render_conf(values.spec, StateLayout.at(tmp_path / "state"), install, values.java_home)
    assert render_values(values)["spark-defaults.conf"] == theirs["spark-defaults.conf"]


@pytest.mark.parametrize("doc, message", [
    ({"spark": {"locality_wait_node": "1s"}}, "spark.locality_wait_node: Spark's, but spark.enabled is not true"),
    ({"spark": {"enabled": True, "locality_wait_node": 3}}, "spark.locality_wait_node: not a duration"),
    ({"spark": {"enabled": True, "locality_wait": "3s"}}, "spark.locality_wait: unknown key"),
    ({"spark": {"enabled": "yes"}}, "spark.enabled: must be bool"),
    ({"render": {"spark_python": 3}}, "render.spark_python: must be str"),
])
def test_bad_spark_values_are_one_line_errors(doc, message):
    with pytest.raises(ConfigError) as failure:
        parse_values(doc)
    assert str(failure.value).startswith(message)


def test_cli_render_writes_spark_defaults(tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(SPARK_VALUES)
    proc = _dsbra("conf", "render", "--values", str(values), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "spark.locality.wait.node                1500ms" in (tmp_path / "out" / "spark-defaults.conf").read_text()


# ---- conf check --spark-app -------------------------------------------------------------------


@pytest.mark.parametrize("text, ms", [("3000ms", 3000), ("3s", 3000), ("3", 3), (" 3S ", 3000), ("1min", 60000),
                                      ("2m", 120000), ("500us", 0), ("0", 0), ("-1", -1),
                                      ("3.0s", None), ("3sec", None), ("", None)])
def test_times_are_read_as_spark_reads_them(text, ms):
    assert spark_time_ms(text) == ms


def test_the_captured_application_wastes_nothing():
    problems, notes = check_app(app(rm_nodes=nodes()), locality=0.95, tasks=8)
    assert problems == []
    assert notes[0].startswith("spark.dynamicAllocation.enabled = false: spark.executor.instances = 4 executors")
    assert notes[1].startswith("4 executors (4 task slots) on 4 of the 4 NodeManagers' nodes (10.77.0.11, "
                               "10.77.0.12, 10.77.0.13, 10.77.0.14): 100% of the blocks (3 replicas)")
    # T = the executors' task time over their 8 tasks
    live = [e for e in executors() if e["id"] != "driver"]
    mean_s = sum(e["totalDuration"] for e in live) / sum(e["totalTasks"] for e in live) / 1000
    expected = size_spark_delay(0.95, 8, 4, 3, executors=4, executor_cores=1, task_seconds=mean_s, racks=2)
    assert notes[2] == (f"the waits are node 3000ms, rack 3000ms; `dsbra conf delay --engine spark` sizes node "
                        f"{expected.node_ms}ms, rack {expected.rack_ms}ms (locality 0.95, N=8, M=4, R=3, S=4, "
                        f"2 rack(s), T={mean_s:.2f} s, the executors' mean task)")


def test_waits_come_from_each_level_else_the_base_key():
    assert waits(dict(environment()["sparkProperties"]))["node"] == ("spark.locality.wait.node", "3000ms")
    assert waits({"spark.locality.wait": "0"})["rack"] == ("spark.locality.wait", "0")
    assert waits({})["process"] == ("spark.locality.wait (Spark's default)", "3s")


def test_a_wait_of_zero_is_delay_scheduling_off():
    env = with_properties(environment(), spark__locality__wait__node="0", spark__locality__wait__process="0s")
    problems, notes = check_app(app(env, rm_nodes=nodes()))
    assert problems == ["spark.locality.wait.node = 0: delay scheduling off: a task runs on the first free "
                        "executor, wherever its data is; dsbra sees no wait for locality, and a replica it "
                        "adds cannot help a task that does not wait"]
    assert "spark.locality.wait.process = 0s: only cached partitions lose their executor; an HDFS read has " \
           "no process level" in notes


def test_a_zero_base_wait_reaches_the_levels_that_do_not_set_their_own():
    props = dict(environment()["sparkProperties"])
    env = environment() | {"sparkProperties": [[k, v] for k, v in props.items()
                                               if k not in ("spark.locality.wait.node", "spark.locality.wait.rack")]}
    env = with_properties(env, spark__locality__wait="0ms")  # a variation
    problems, _ = check_app(app(env, rm_nodes=nodes()))
    assert [p.split(":")[0] for p in problems] == ["spark.locality.wait.node (from spark.locality.wait) = 0ms",
                                                   "spark.locality.wait.rack (from spark.locality.wait) = 0ms"]


def test_a_zero_rack_wait_is_harmless_on_one_rack_only():
    env = with_properties(environment(), spark__locality__wait__rack="0")
    assert check_app(app(env, rm_nodes=nodes()))[0][0].startswith("spark.locality.wait.rack = 0: once the node wait")
    one_rack = [n | {"rack": "/rack1"} for n in nodes()]  # the captured nodes on one rack: a variation
    problems, notes = check_app(app(env, rm_nodes=one_rack))
    assert problems == [] and "spark.locality.wait.rack = 0: one rack: every executor is rack-local, no loss" in notes


def test_the_legacy_reset_rule_and_an_unreadable_wait_are_problems():
    env = with_properties(environment(), spark__locality__wait__legacyResetOnTaskLaunch="TRUE",
                          spark__locality__wait__node="3.0s")
    problems, _ = check_app(app(env))
    assert problems[0] == ("spark.locality.wait.node = 3.0s: not a time Spark reads (an integer with us, ms, "
                           "s, m, min, h or d)")
    assert problems[1].startswith("spark.locality.wait.legacyResetOnTaskLaunch = true: the rule before Spark 3.1")


def test_dynamic_allocation_is_a_note_either_way():
    env = with_properties(environment(), spark__dynamicAllocation__enabled="true")
    problems, notes = check_app(app(env))
    assert problems == []
    assert notes[0].startswith("spark.dynamicAllocation.enabled = true: the driver asks YARN for new executors "
                               "on the nodes of its pending tasks' data")


def on_hosts(execs: list[dict], hosts: list[str]) -> list[dict]:
    """The captured executors moved onto ``hosts`` in turn (a variation, not a capture)."""
    moved = copy.deepcopy(execs)
    for i, e in enumerate(sorted((e for e in moved if e["id"] != "driver"), key=lambda e: e["id"])):
        e["hostPort"] = f"{hosts[i % len(hosts)]}:{e['hostPort'].rsplit(':', 1)[1]}"
    return moved


def test_executors_on_too_few_nodes():
    packed = on_hosts(executors(), ["10.77.0.11", "10.77.0.13"])
    problems, _ = check_app(app(execs=packed, rm_nodes=nodes()))
    assert problems == ["executors on too few nodes: 4 executors (4 task slots) on 2 of the 4 NodeManagers' nodes "
                        "(10.77.0.11, 10.77.0.13): 100% of the blocks (3 replicas) have a replica on one of them, "
                        "node locality's ceiling; ask for executors of fewer cores (more of them), or dynamic "
                        "allocation's locality hints"]
    # with one replica half the blocks are out of reach: too few for a target of 0.9 too
    env = copy.deepcopy(environment())
    env["hadoopProperties"] = [[k, "1" if k == "dfs.replication" else v] for k, v in env["hadoopProperties"]]
    two = on_hosts([e for e in executors() if e["id"] in ("1", "2", "driver")], ["10.77.0.11", "10.77.0.13"])
    problems, _ = check_app(app(env, two, nodes()), locality=0.9, tasks=8)
    assert problems[0].startswith("executors on too few nodes: 2 executors (2 task slots) on 2 of the 4 "
                                  "NodeManagers' nodes (10.77.0.11, 10.77.0.13): 50% of the blocks (1 replicas)")


def test_a_wait_under_half_the_sizing_is_a_problem():
    env = with_properties(environment(), spark__locality__wait__node="500ms")
    problems, _ = check_app(app(env, rm_nodes=nodes()), locality=0.95, tasks=8)
    assert problems == [p for p in problems if p.startswith("spark.locality.wait.node is 500ms, under half the ")]
    assert len(problems) == 1 and problems[0].endswith("tasks give up on their data too soon")


def test_what_is_unknown_is_said_not_guessed():
    _, notes = check_app(app())
    assert notes[1] == ("4 executors (4 task slots) on 4 nodes (10.77.0.11, 10.77.0.12, 10.77.0.13, 10.77.0.14); "
                        "the cluster's size is unknown (give --rm)")
    assert notes[2] == "waits not compared with `dsbra conf delay --engine spark`: give --locality and --tasks"
    _, notes = check_app(app(rm_nodes=nodes()), locality=0.9, tasks=8, task_seconds=2)
    assert notes[2].endswith("2 rack(s), T=2 s)")
    # through the proxy at the start: the driver alone, no executor yet
    _, notes = check_app(app(first_proxy_reply("/environment"), first_proxy_reply("/allexecutors"), nodes()),
                         locality=0.9, tasks=8)
    assert notes[-1].startswith("no executors yet (the driver only)")


def test_a_malformed_environment_is_one_error_line():
    broken = {k: v for k, v in environment().items() if k != "sparkProperties"}  # a variation
    with pytest.raises(HadoopError) as failure:
        app_from_replies(APP, broken, executors(), None)
    assert str(failure.value) == (f"Spark REST API /environment of {APP}: malformed reply (no sparkProperties "
                                  "list of [key, value] pairs)")


class Replayed(BaseAdapter):
    """The Spark capture, and the RM's nodes from the same cluster's Hadoop capture."""

    def __init__(self):
        super().__init__()
        self.spark, self.rm = Replayer(GREP), Replayer(RM_NODES)

    def send(self, request, **kw):
        replayer = self.rm if request.path_url == "/ws/v1/cluster/nodes" else self.spark
        return replayer.send(request, **kw)

    def close(self):
        pass


@pytest.fixture
def replayed(monkeypatch):
    session_class = requests.Session

    def session():
        s = session_class()
        s.mount("http://", Replayed())
        return s

    monkeypatch.setattr(requests, "Session", session)


def _check(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["conf", "check", "--spark-app", *args])
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_cli_check_from_the_history_server_with_the_rms_nodes(replayed, capsys):
    code, out, err = _check(capsys, APP, "--spark-history", HISTORY, "--rm", RM, "--locality", "0.95",
                            "--tasks", "8")
    assert code == 0, err
    lines = out.splitlines()
    assert all(line.startswith("note: ") for line in lines[:-1]) and len(lines) == 4
    assert lines[-1] == f"nothing wastes locality in {APP}"


def test_cli_check_through_the_proxy_before_the_executors(replayed, capsys):
    code, out, _ = _check(capsys, APP, "--rm", RM)
    assert code == 0
    assert "note: no executors yet (the driver only)" in out


def test_cli_check_exits_1_on_a_problem(replayed, capsys, monkeypatch):
    """The captured environment read with a node wait of 0 (a variation of the History Server's)."""
    zero = with_properties(environment(), spark__locality__wait__node="0")
    monkeypatch.setattr("dsbra.hadoop.rest.SparkApi.environment", lambda self, app_id: zero)
    code, out, _ = _check(capsys, APP, "--spark-history", HISTORY)
    assert code == 1
    assert out.splitlines()[0].startswith("spark.locality.wait.node = 0: delay scheduling off")
    assert out.splitlines()[-1] == f"1 problem(s) wasting locality in {APP}"


@pytest.mark.parametrize("args, error", [
    (["application_1796546292471_0099", "--spark-history", HISTORY],
     "dsbra: error: no Spark application application_1796546292471_0099 at the Spark REST API "
     "http://10.77.0.1:18080 (HTTP 404)"),
    ([APP], "dsbra: error: --spark-app needs --spark-history URL (a finished or running application) or --rm URL "
            "(a running one, through the ResourceManager's proxy)"),
    ([APP, "--rm", RM, "--values", "v.yaml"], "dsbra: error: --values is not for --spark-app"),
])
def test_cli_check_errors_are_one_line(replayed, capsys, args, error):
    code, out, err = _check(capsys, *args)
    assert code != 0 and out == ""
    assert err.strip().splitlines() == [error]


def test_a_history_server_that_is_down_is_one_line():
    proc = _dsbra("conf", "check", "--spark-app", APP, "--spark-history", "http://127.0.0.1:1")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == ["dsbra: error: cannot reach Spark REST API at http://127.0.0.1:1: "
                                                "ConnectionError"]


def test_spark_only_options_need_spark_app():
    proc = _dsbra("conf", "check", "--rm", RM, "--values", "v.yaml", "--tasks", "8")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["dsbra: error: --tasks is not for a cluster check"]


@pytest.mark.parametrize("command, words", [
    ("delay", ["--engine", "spark.locality.wait", "--executors", "--executor-nodes", "--racks"]),
    ("check", ["--spark-app", "--spark-history", "--locality", "--task-seconds"]),
    ("render", ["spark-defaults.conf"]),
])
def test_help_names_the_spark_options(command, words):
    proc = _dsbra("conf", command, "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert all(word in text for word in words)
