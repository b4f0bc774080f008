"""Contention (SimConfig.host_cores, share_links; issue 69): maps reading node-locally share the
host's CPUs, remote reads share their holder's link, both by processor sharing; off, a map's
cost is its own."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner
from repo_scripts import ROOT

from dsbra.errors import ConfigError
from dsbra.report.runs import Run, find_runs
from dsbra.sim import calibration
from dsbra.sim.cli import sim
from dsbra.sim.config import SimConfig, SparkSettings
from dsbra.sim.fitted import simulate_spark_arm
from dsbra.sim.replicas import Replicas
from dsbra.sim.spark import SparkSimulation
from dsbra.sim.workload import Dataset, Workload

SITTING = ROOT / "benchmarks" / "results" / "bench-spark-hotspot"
NETWORK = json.loads((ROOT / "benchmarks" / "results" / "network.json").read_text())
SUBMIT_S = 10.0  # every executor is up by then: the job's tasks launch at its submission


def one_job(mb: list[float]) -> Workload:
    """One job submitted at SUBMIT_S, task k reading block k of ``mb[k]`` MB."""
    n = len(mb)
    return Workload(name="hand-built", job_ids=np.array(["j0"], object),
                    submit_s=np.array([SUBMIT_S]), bins=np.full(1, 3, np.int8),
                    task_indptr=np.array([0, n]), task_block=np.arange(n),
                    task_mb=np.asarray(mb, float), dataset=Dataset.one_block_files(n, 64 << 20))


def run(mb: list[float], holders: list[int], executors: int, policy: str = "static",
        **config) -> SparkSimulation:
    """Spark on 4 nodes of 2 slots on 2 racks, block b on node ``holders[b]`` only; a map costs
    1 s + MB / 64 MB/s at every level; no locality wait."""
    cfg = SimConfig(nodes=4, slots_per_node=2, racks=2, replication=1, max_replication=4,
                    binding="spark", policy=policy, task_overhead_s=1.0, cpu_s_per_mb=0.0,
                    read_mbps_local=64.0, read_mbps_rack=64.0, read_mbps_remote=64.0, seed=0,
                    **{"spark": SparkSettings(executors=executors, locality_wait_s=0.0)} | config)
    sim = SparkSimulation(cfg, one_job(mb))
    sim.replicas = Replicas(np.array(holders)[:, None], width=4)
    sim.run()
    return sim


def durations(sim: SparkSimulation) -> list[float]:
    return (np.frombuffer(sim.t_finish) - np.frombuffer(sim.t_launch)).round(9).tolist()


def executor_nodes(executors: int) -> list[int]:
    """The nodes the run's executors land on (the replicas do not steer them: no dynamic
    allocation asks for a host)."""
    return sorted(e.node for e in run([64.0], [0], executors).apps[0].held.values())


# --- the host's CPUs ------------------------------------------------------------------------
def test_a_map_alone_costs_its_work():
    assert durations(run([64.0], [0], 8, "oracle", host_cores=2)) == [2.0]


def test_four_maps_at_once_on_two_cores_each_take_twice_as_long():
    sim = run([64.0] * 4, [0] * 4, 8, "oracle", host_cores=2)
    assert np.frombuffer(sim.t_launch).tolist() == [SUBMIT_S] * 4
    assert durations(sim) == [4.0] * 4
    assert durations(run([64.0] * 4, [0] * 4, 8, "oracle")) == [2.0] * 4  # off: their own cost


def test_a_map_left_alone_speeds_up_when_the_others_end():
    # 2, 2 and 4 s of work on 2 cores: each at 2/3 until the short ones end at 3 s (2 s of work
    # done each); the long one has 2 s left, alone at full speed: ends at 5 s
    sim = run([64.0, 64.0, 192.0], [0, 0, 0], 8, "oracle", host_cores=2)
    assert durations(sim) == pytest.approx([3.0, 3.0, 5.0])


def test_remote_reads_do_not_load_the_cpus():
    busy = executor_nodes(2)
    idle = next(n for n in range(4) if n not in busy)
    sim = run([64.0, 64.0], [idle, idle], 2, host_cores=1)  # both remote: each at full speed
    assert durations(sim) == [2.0, 2.0]


# --- the holders' links ---------------------------------------------------------------------
def test_two_remote_reads_from_one_holder_share_its_link():
    busy = executor_nodes(2)
    idle = [n for n in range(4) if n not in busy]
    shared = run([64.0, 64.0], [idle[0], idle[0]], 2, share_links=True)
    assert set(np.frombuffer(shared.t_node, np.int32).tolist()) == set(busy)  # both remote
    assert durations(shared) == [4.0, 4.0]
    apart = run([64.0, 64.0], [idle[0], idle[1]], 2, share_links=True)
    assert durations(apart) == [2.0, 2.0]
    assert durations(run([64.0, 64.0], [idle[0], idle[0]], 2)) == [2.0, 2.0]  # off


def test_a_cold_executors_first_task_costs_the_warm_up():
    # one executor, two tasks: the first carries the 3 s warm-up, the second not
    sim = run([64.0, 64.0], [0, 0], 1, "oracle", spark=SparkSettings(
        executors=1, locality_wait_s=0.0, executor_warmup_s=3.0))
    assert durations(sim) == [5.0, 2.0]


# --- configuration --------------------------------------------------------------------------
def test_contention_is_off_by_default_and_absent_from_summaries():
    cfg = SimConfig()
    assert (cfg.host_cores, cfg.share_links, cfg.contended) == (0, False, False)
    assert "host_cores" not in cfg.as_dict() and "share_links" not in cfg.as_dict()
    assert SimConfig(host_cores=2).as_dict()["host_cores"] == 2


@pytest.mark.parametrize("kw, message", [
    ({"host_cores": -1}, "host-cores must be an integer >= 0"),
    ({"host_cores": 1.5}, "host-cores must be an integer >= 0"),
    ({"share_links": 1}, "share-links must be true or false"),
])
def test_bad_contention_settings_are_errors(kw, message):
    with pytest.raises(ConfigError, match=message):
        SimConfig(**kw).validated()


# --- the fit on real runs (calibration.shared_work_s, contended_task_model) ----------------
def fake_run(tasks: list[tuple[float, float, int, str]]) -> SimpleNamespace:
    """A real run's tasks as (launch s, finish s, level, node)."""
    launch, finish, level, node = zip(*tasks)
    return SimpleNamespace(tasks={"launch_s": list(launch), "finish_s": list(finish),
                                  "locality": list(level), "node": list(node)})


def test_a_tasks_work_is_its_time_at_its_share():
    run = fake_run([(0.0, 4.0, 0, "a"), (0.0, 4.0, 0, "b"), (0.0, 4.0, 0, "c"), (0.0, 4.0, 0, "d"),
                    (0.0, 8.0, 1, "a"), (4.0, 8.0, 1, "a"), (0.0, 3.0, 1, "b")])
    # four node-local tasks on 2 cores: 2 s of work each; the remote ones on node a's link
    # share it from 4 s on; node b's remote read has its link to itself
    assert calibration.shared_work_s(run, 2).tolist() == [2.0, 2.0, 2.0, 2.0, 6.0, 2.0, 3.0]


def test_the_contended_model_takes_the_median_works_and_the_executors_warm_up():
    # 2 executors: the first two tasks are their first (5 s of work alone each, at 1 core
    # each of 2), the warm ones 1 s node-local, 16 s remote
    run = fake_run([(0.0, 5.0, 0, "a"), (0.0, 5.0, 0, "b"), (5.0, 6.0, 0, "a"),
                    (5.0, 21.0, 1, "b"), (6.0, 7.0, 0, "a")])
    model, warmup = calibration.contended_task_model([run], 32.0, 2, executors=2, map_mb=64.0)
    assert (model["task_overhead_s"], model["read_mbps_local"], model["read_mbps_rack"],
            model["read_mbps_remote"]) == (0.0, 64.0, 4.0, 4.0)
    assert warmup == 4.0


def test_the_spark_sittings_contended_fit_is_the_committed_one():
    doc = json.loads((SITTING / "sim-vs-real-spark.json").read_text())
    static = find_runs([SITTING / "static"])["static"]
    model, warmup = calibration.contended_task_model(
        static, calibration.local_read_mbps(NETWORK), NETWORK["cpus"], doc["executors"])
    assert model == doc["task_model"]
    assert doc["contention"] == {"host_cores": 2, "share_links": True, "warmup_s": warmup}


def test_dsbra_sim_takes_the_contention_options(tmp_path):
    args = ["--setup", "hotspot-stress", "--binding", "spark", "--spark-executors", "20",
            "--spark-executor-cores", "2", "--out", str(tmp_path)]
    result = CliRunner().invoke(sim, args + ["--host-cores", "2", "--share-links",
                                             "--spark-executor-warmup-s", "4"])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "summary.json").read_text())["config"]
    assert (config["host_cores"], config["share_links"], config["spark"]["executor_warmup_s"]) \
        == (2, True, 4.0)


def test_the_fit_recovers_the_simulators_own_contention(tmp_path):
    # the Spark sitting's schedule simulated with known rules; its tasks fitted as real ones
    model = {"task_overhead_s": 0.0, "cpu_s_per_mb": 0.0, "read_mbps_local": 32.0,
             "read_mbps_rack": 4.0, "read_mbps_remote": 4.0}
    runs = [Run.load(d) for d in simulate_spark_arm(
        "static", SITTING / "schedule.json", tmp_path, 2, model=model, executors=7, heartbeat_s=0.5,
        wait_s=3.0, host_cores=2, share_links=True, warmup_s=3.0)]
    fitted, warmup = calibration.contended_task_model(runs, 32.0, 2, executors=7)
    assert {k: fitted[k] for k in model} == model and warmup == 3.0
    assert fitted["sources"]["maps"]["rack"] > 0  # the links were fitted, not defaulted


# --- the policies' copies on the holders' links (share_links with copy_streams) -------------
class CopiesAt:
    """A policy driver that starts the given (block, target, seconds) copies at its first round
    and nothing after."""

    reads_demand = False

    def __init__(self, copies: list[tuple[int, int, float]]):
        self.copies = copies

    def round(self, now, window, in_flight, attributed, **_):
        copies, self.copies = self.copies, []
        return {"copies": copies, "lowered_blocks": []}


class LandingClock(SparkSimulation):
    """Records when each copy's replica lands (a superseded COPY event adds none)."""

    def _on_copy(self, now, token, blk, node):
        had = self.replicas.holds(blk, node)
        super()._on_copy(now, token, blk, node)
        if not had and self.replicas.holds(blk, node):
            self.landed.append(now - SUBMIT_S)


def read_beside_copies(holders: list[int], copies: list[tuple[int, int, float]],
                       **config) -> LandingClock:
    """One task reading block 0 (64 MB: 2 s alone) on an executor's node, block b on node
    ``holders[b]`` only; the copies start with it, at SUBMIT_S (the first policy round). A
    second job, 30 s later, keeps the run going until every copy has landed."""
    wl = Workload(name="hand-built", job_ids=np.array(["j0", "j1"], object),
                  submit_s=np.array([SUBMIT_S, SUBMIT_S + 30.0]), bins=np.full(2, 3, np.int8),
                  task_indptr=np.array([0, 1, 2]), task_block=np.array([0, 0]),
                  task_mb=np.array([64.0, 64.0]),
                  dataset=Dataset.one_block_files(len(holders), 64 << 20))
    cfg = SimConfig(nodes=4, slots_per_node=2, racks=2, replication=1, max_replication=4,
                    binding="spark", policy="static", task_overhead_s=1.0, cpu_s_per_mb=0.0,
                    read_mbps_local=64.0, read_mbps_rack=64.0, read_mbps_remote=64.0, seed=0,
                    interval_s=SUBMIT_S, spark=SparkSettings(executors=2, locality_wait_s=0.0),
                    **config)
    sim = LandingClock(cfg, wl, CopiesAt(copies))
    sim.landed = []
    sim.replicas = Replicas(np.array(holders)[:, None], width=4)
    sim.run()
    return sim


def test_a_copy_and_a_remote_read_from_one_holder_share_its_link():
    busy = executor_nodes(2)
    idle = [n for n in range(4) if n not in busy]
    # block 0 on idle[0], read remotely; its copy to idle[1] from the same holder: each at
    # half the link, 4 s where alone each takes 2 s
    both = read_beside_copies([idle[0]], [(0, idle[1], 2.0)], share_links=True, copy_streams=2)
    assert int(both.t_node[0]) in busy
    assert durations(both)[0] == 4.0 and both.landed == [4.0]
    alone = read_beside_copies([idle[0]], [], share_links=True, copy_streams=2)
    assert durations(alone)[0] == 2.0


def test_a_copy_from_another_holder_does_not_slow_the_read():
    busy = executor_nodes(2)
    idle = [n for n in range(4) if n not in busy]
    sim = read_beside_copies([idle[0], idle[1]], [(1, idle[0], 2.0)], share_links=True,
                             copy_streams=2)
    assert durations(sim)[0] == 2.0 and sim.landed == [2.0]


def test_copies_on_a_link_respect_the_stream_limit():
    busy = executor_nodes(2)
    idle = [n for n in range(4) if n not in busy]
    holders = [idle[1], idle[0], idle[0]]  # the read from idle[1]; two copies from idle[0]
    copies = [(1, idle[1], 2.0), (2, idle[1], 2.0)]
    one = read_beside_copies(holders, copies, share_links=True, copy_streams=1)
    assert one.landed == [2.0, 4.0]  # one at a time, each with the link to itself
    two = read_beside_copies(holders, copies, share_links=True, copy_streams=2)
    assert two.landed == [4.0, 4.0]  # both at once, each at half the link
    assert durations(one)[0] == durations(two)[0] == 2.0  # another holder's link


def test_copies_stay_off_the_links_without_streams_or_without_shared_links():
    busy = executor_nodes(2)
    idle = [n for n in range(4) if n not in busy]
    for config in ({"share_links": True}, {"copy_streams": 2}):
        sim = read_beside_copies([idle[0]], [(0, idle[1], 2.0)], **config)
        assert durations(sim)[0] == 2.0 and sim.landed == [2.0]
