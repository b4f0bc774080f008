"""The simulator's parts: HDFS placement, workloads, scheduling rules, policy wiring, outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dsbra.errors import ConfigError, InputError
from dsbra.results_schema import JOB_SCHEMA, TASK_SCHEMA, size_bin
from dsbra.sim.cli import sim
from dsbra.sim.config import SimConfig
from dsbra.sim.replicas import Replicas, Topology, hdfs_default_placement
from dsbra.sim.run import WorkloadSpec, simulate
from dsbra.sim.workload import BIN_JOBS, fb2009_bins, scaled_bin_maps, swim

TRACES = Path("/work/shared/traces")
FB2009 = TRACES / "FB-2009_samples_24_times_1hr_0.tsv"
FB2010 = TRACES / "FB-2010_withInputPaths_hours00-11.tsv"


def test_hdfs_default_placement_rules():
    topo = Topology(30, 3)
    rng = np.random.default_rng(0)
    p = hdfs_default_placement(topo, 5000, 3, rng)
    racks = topo.rack_of[p]
    assert (racks[:, 0] != racks[:, 1]).all()  # 2nd replica on another rack
    assert (racks[:, 1] == racks[:, 2]).all()  # 3rd on the 2nd's rack
    assert (p[:, 1] != p[:, 2]).all()
    # first replicas spread over all nodes
    assert len(np.unique(p[:, 0])) == 30
    one_rack = hdfs_default_placement(Topology(5, 1), 2000, 4, rng)
    assert all(len(set(row)) == 4 for row in one_rack.tolist())


def test_replicas_never_drop_below_base():
    reps = Replicas(np.array([[0, 1], [2, 3]]), width=4)
    assert not reps.remove(0, 0)  # at base
    assert reps.add(0, 5) and not reps.add(0, 5)
    assert reps.remove(0, 0) and not reps.remove(0, 1)
    assert sorted(reps.holders(0).tolist()) == [1, 5]
    indptr, nodes = reps.csr()
    assert indptr.tolist() == [0, 2, 4] and sorted(nodes[:2].tolist()) == [1, 5]


def test_fb2009_bins_proportions_and_scaling():
    maps, scale = scaled_bin_maps(40)
    assert scale == pytest.approx(0.1)
    assert maps.tolist() == [1, 2, 3, 5, 10, 20, 40, 80, 480]
    assert scaled_bin_maps(4800)[0].tolist() == [1, 2, 10, 50, 100, 200, 400, 800, 4800]
    wl = fb2009_bins(total_slots=40, block_size_mb=64, seed=1)
    assert np.bincount(wl.bins, minlength=10)[1:].tolist() == BIN_JOBS.tolist()
    assert wl.n_tasks == int(maps[wl.bins - 1].sum())
    assert np.mean(np.diff(wl.submit_s)) == pytest.approx(14, rel=0.35)
    # a job never reads the same block twice
    for lo, hi in zip(wl.task_indptr[:-1], wl.task_indptr[1:]):
        assert len(np.unique(wl.task_block[lo:hi])) == hi - lo


def test_swim_fb2009_maps_from_bytes_and_cap():
    wl = swim(FB2009, total_slots=100, block_size_mb=128, jobs=500)
    assert wl.n_jobs == 500
    raw = np.loadtxt(FB2009, usecols=3, dtype=np.int64, max_rows=500)
    full = np.maximum(1, -(-raw // (128 << 20)))
    assert wl.maps.tolist() == np.minimum(full, 100).tolist()
    assert wl.bins.tolist() == size_bin(full).tolist()


def test_swim_fb2010_same_path_same_blocks():
    wl = swim(FB2010, total_slots=200, block_size_mb=128, jobs=3000)
    paths = np.loadtxt(FB2010, usecols=6, dtype=str, max_rows=3000, delimiter="\t")
    first_block = wl.task_block[wl.task_indptr[:-1]]
    by_path: dict = {}
    for p, b in zip(paths, first_block):
        by_path.setdefault(p, set()).add(int(b))
    assert all(len(v) == 1 for v in by_path.values())
    assert len(wl.dataset.file_paths) == len(by_path)


def test_swim_bad_trace_is_a_clear_error(tmp_path):
    bad = tmp_path / "t.tsv"
    bad.write_text("job0\t1\t1\tlots\t0\t0\n")
    with pytest.raises(InputError, match="t.tsv:1"):
        swim(bad, total_slots=4, block_size_mb=8)


def test_config_validation():
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match=r"^copy-streams must be an integer >= 0"):
            SimConfig(copy_streams=bad).validated()
    with pytest.raises(ConfigError, match="racks"):
        SimConfig(nodes=2, racks=3).validated()
    with pytest.raises(ConfigError, match="replication"):
        SimConfig(nodes=2, racks=1, replication=3).validated()


def small_cfg(**kw):
    base = dict(nodes=20, slots_per_node=2, racks=2, replication=2, seed=4)
    return SimConfig(**{**base, **kw})


def test_deterministic_for_a_seed():
    a = simulate(small_cfg(policy="dsbra"), WorkloadSpec(jobs=60))
    b = simulate(small_cfg(policy="dsbra"), WorkloadSpec(jobs=60))
    for k in ("launch_s", "finish_s", "node", "locality", "delay_wait_s"):
        assert np.array_equal(a.tasks[k], b.tasks[k])
    c = simulate(small_cfg(policy="dsbra", seed=5), WorkloadSpec(jobs=60))
    assert not np.array_equal(a.tasks["launch_s"], c.tasks["launch_s"])


def test_every_task_runs_once_and_respects_slots():
    res = simulate(small_cfg(), WorkloadSpec(jobs=80, inter_arrival_s=2))
    t = res.tasks
    assert (t["launch_s"] >= t["scheduled_s"]).all() and (t["finish_s"] > t["launch_s"]).all()
    # at no instant does a node run more maps than it has slots
    for node in np.unique(t["node"]):
        sel = t["node"] == node
        ev = np.concatenate([np.stack([t["launch_s"][sel], np.ones(sel.sum())], 1),
                             np.stack([t["finish_s"][sel], -np.ones(sel.sum())], 1)])
        ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]  # finishes before launches at equal times
        assert np.cumsum(ev[:, 1]).max() <= 2
    # delay wait is capped at D and only where delay scheduling skipped the job
    assert t["delay_wait_s"].max() <= 5.0
    assert (t["delay_wait_s"][~t["delayed"]] == 0).all()
    assert (t["delay_wait_s"] <= t["wait_s"] + 1e-9).all()


def test_no_delay_scheduling_never_delays_and_fifo_orders_by_submission():
    res = simulate(small_cfg(delay_node_s=0, delay_rack_s=0), WorkloadSpec(jobs=50))
    assert res.summary["delayed_tasks"] == 0
    # FIFO: jobs start in submission order when slots go to tasks (under yarn-mr a job's maps
    # start at its own AM's heartbeats, so a later job may start first)
    fifo = simulate(small_cfg(scheduler="fifo", binding="task"),
                    WorkloadSpec(jobs=50, inter_arrival_s=1))
    assert fifo.summary["delayed_tasks"] == 0
    starts = fifo.jobs["start_s"]
    assert (np.diff(starts) >= -1e-9).all()


def test_hfs_wait_bounds_the_locality_wait():
    # every node-local miss happened only after the job waited W1 (+W2 for off-switch)
    res = simulate(small_cfg(racks=2, delay_node_s=3, delay_rack_s=2,
                             delay_threshold_s=100, binding="task"),
                   WorkloadSpec(jobs=100, hot_fraction=0.01, hot_share=0.9, inter_arrival_s=3))
    t = res.tasks
    need = {1: 3.0, 2: 5.0}
    checked = 0
    for job in np.unique(t["job_id"]):
        sel = np.flatnonzero(t["job_id"] == job)
        level = 0  # HFS: a job may launch at the level of its last launch without waiting
        for i in sel[np.argsort(t["launch_s"][sel], kind="stable")]:
            loc = int(t["locality"][i])
            if loc > level:
                assert t["delay_wait_s"][i] >= need[loc] - 1e-9
                checked += 1
            level = loc
    assert checked > 0


def test_policies_run_through_the_api_and_keep_base_replication():
    spec = WorkloadSpec(jobs=300, inter_arrival_s=1, hot_fraction=0.003, hot_share=0.8,
                        bin_scale=0.02)
    out = {}
    for name in ("static", "dsbra", "dsbra-literal", "scarlett", "dare"):
        r = simulate(small_cfg(policy=name, interval_s=30), spec)
        out[name] = r.summary
        assert r.summary["policy_rounds"] > 0
        assert r.summary["extra_storage_mean"] >= 0
        assert all(x["extra_storage"] >= 0 for x in r.rounds)
    assert out["static"]["replicas_added"] == 0 and out["static"]["extra_storage_max"] == 0
    assert out["scarlett"]["replicas_added"] > 0 and out["scarlett"]["extra_storage_max"] > 0
    # the same schedule for every policy
    assert len({s["tasks"] for s in out.values()}) == 1


def test_cli_writes_schema_and_summary(tmp_path):
    out = tmp_path / "run"
    r = CliRunner().invoke(sim, ["--jobs", "30", "--policy", "dsbra", "--out", str(out),
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    assert pq.read_schema(out / "jobs.parquet").equals(JOB_SCHEMA)
    assert pq.read_schema(out / "tasks.parquet").equals(TASK_SCHEMA)
    s = json.loads((out / "summary.json").read_text())
    for key in ("jobs", "node_locality", "rack_locality", "mean_response_s", "by_bin",
                "extra_storage_mean", "extra_storage_max"):
        assert key in s
    assert set(s["by_bin"]) == {str(b) for b in range(1, 10)}
    assert set(s["by_bin"]["1"]) >= {"jobs", "node_locality", "mean_response_s", "mean_wait_s"}
    assert s["jobs"] == 30 == pq.read_table(out / "jobs.parquet").num_rows


@pytest.mark.parametrize("args,needle", [
    (["--nodes", "0"], "nodes must be"),
    (["--policy", "nope"], "unknown policy"),
    (["--workload", "swim:/no/such/trace"], "cannot read trace"),
    (["--workload", "bogus"], "unknown workload"),
    (["--hot-fraction", "2"], "hot fraction"),
    (["--policy-param", "noequals"], "KEY=VALUE"),
    (["--policy", "scarlett", "--policy-param", "bogus=1"], "has no parameter bogus"),
    (["--policy", "dsbra", "--policy-param", "gate=-1"], "gate must be"),
    (["--yarn-threshold-node", "0.5"], "need delay mode yarn"),
])
def test_cli_bad_input_is_one_line_error(tmp_path, capsys, args, needle):
    from dsbra.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["sim", "--out", str(tmp_path / "x"), "--no-progress", *args])
    assert exc.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dsbra: error: ") and needle in err[0]


def test_cli_bad_input_message(tmp_path, capsys):
    from dsbra.cli import main

    with pytest.raises(SystemExit):
        main(["sim", "--out", str(tmp_path / "x"), "--nodes", "0", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dsbra: error: nodes must be an integer >= 1, got 0"]


def test_launches_fall_on_the_nodes_heartbeats_and_none_is_missed():
    from dsbra.sim.engine import Simulation
    from dsbra.sim.run import build_workload

    cfg = small_cfg(delay_node_s=0, delay_rack_s=0, slots_per_node=1,
                    binding="task").validated()
    wl = build_workload(WorkloadSpec(jobs=150, inter_arrival_s=1.5), cfg)
    sim = Simulation(cfg, wl)
    raw = sim.run()
    phase = sim.phase[raw.task_node]
    k = (raw.task_launch - phase) / cfg.heartbeat_s
    assert np.allclose(k, np.round(k), atol=1e-6)  # on the node's own heartbeat grid
    # without delay scheduling a pending map never waits past the first heartbeat of a free
    # node: no node may sit idle through one of its heartbeats while maps are pending
    launch, finish, node = raw.task_launch, raw.task_finish, raw.task_node
    sched = wl.submit_s[np.repeat(np.arange(wl.n_jobs), wl.maps)]
    checked = 0
    for n in range(cfg.nodes):
        mine = np.flatnonzero(node == n)
        mine = mine[np.argsort(launch[mine])]
        busy_until = np.concatenate([[0.0], finish[mine]])
        starts = np.concatenate([launch[mine], [np.inf]])
        for free_from, next_launch in zip(busy_until, starts):
            # first heartbeat of n after it became free
            hb = sim.phase[n] + np.floor((free_from - sim.phase[n]) / cfg.heartbeat_s + 1) * \
                cfg.heartbeat_s
            if hb >= next_launch - 1e-9:
                continue
            # n was free at this heartbeat and launched nothing: no map may have been pending
            pending = (sched <= hb - 1e-9) & (launch > hb + 1e-9)
            assert not pending.any(), (n, hb)
            checked += 1
    assert checked > 20


def test_raised_after_lowering_counts_a_copy_taken_back_once_per_lowering():
    from dsbra.sim.metrics import raised_after_lowering

    rounds = [{"raised_blocks": [1, 2], "lowered_blocks": []},
              {"raised_blocks": [], "lowered_blocks": [1]},
              {"raised_blocks": [], "lowered_blocks": [1, 2]},  # 1 lowered twice: one churn
              {"raised_blocks": [1, 3], "lowered_blocks": []},
              {"raised_blocks": [1], "lowered_blocks": []}]   # raised again, not lowered between
    assert raised_after_lowering(rounds) == 1
    assert raised_after_lowering(rounds + [{"raised_blocks": [2], "lowered_blocks": []}]) == 2


def test_replicas_count_only_once_their_copy_lands():
    spec = WorkloadSpec(jobs=300, inter_arrival_s=1, hot_fraction=0.003, hot_share=0.8,
                        bin_scale=0.02)
    fast = simulate(small_cfg(policy="scarlett", interval_s=30, copy_mbps=1000.0), spec)
    # 64 MB at 0.001 MB/s takes 18 hours: copies start but never land during the run
    slow = simulate(small_cfg(policy="scarlett", interval_s=30, copy_mbps=0.001), spec)
    assert sum(r["copies_started"] for r in fast.rounds) > 0
    assert fast.summary["extra_storage_max"] > 0
    assert sum(r["copies_started"] for r in slow.rounds) > 0
    assert slow.summary["extra_storage_max"] == 0


def test_observed_signals_use_the_real_cluster_rule():
    spec = WorkloadSpec(jobs=200, inter_arrival_s=3, hot_fraction=0.003, hot_share=0.8,
                        bin_scale=0.03)
    cfg = small_cfg(policy="dsbra", signals="observed", task_overhead_s=4.0,
                    read_mbps_local=10.0, read_mbps_rack=5.0, read_mbps_remote=2.5)
    res = simulate(cfg, spec)
    t, s = res.tasks, res.summary
    assert s["signals"] == "observed"
    agree = s["observed_vs_scheduler"]
    assert agree["delayed_both"] + agree["delayed_observed_only"] == int(t["delayed"].sum())
    assert agree["delayed_both"] > 0
    # the rule: every decline comes from a map that waited past the grace period and marks the
    # other maps of its job waiting then (the scheduler delays a job); delay capped at D
    waited = set(t["job_id"][t["wait_s"] > cfg.observed_grace_s].tolist())
    assert set(t["job_id"][t["delayed"]].tolist()) <= waited
    assert t["delay_wait_s"].max() <= cfg.effective_delay_threshold_s + 1e-9
    # the same run under the scheduler's accounting schedules identically (signals only feed
    # the policy, which did not act here)
    ref = simulate(small_cfg(policy="static", task_overhead_s=4.0, read_mbps_local=10.0,
                             read_mbps_rack=5.0, read_mbps_remote=2.5), spec)
    assert np.array_equal(ref.tasks["launch_s"], t["launch_s"]) or s["replicas_added"] > 0


def test_application_masters_hold_slots_queue_on_the_am_share_and_delay_the_maps():
    from dsbra.sim.engine import Simulation
    from dsbra.sim.run import build_workload

    cfg = small_cfg(nodes=4, racks=2, slots_per_node=3, am_slots=1.0, am_startup_s=4.0,
                    max_am_share=0.5).validated()
    wl = build_workload(WorkloadSpec(jobs=60, inter_arrival_s=1.0), cfg)
    sim = Simulation(cfg, wl)
    raw = sim.run()
    assert (raw.job_finish > 0).all()
    ready = raw.job_pending
    assert (ready >= wl.submit_s + 4.0 - 1e-9).all()  # maps pending only after AM start-up
    am_start = ready - 4.0
    job_of = np.repeat(np.arange(wl.n_jobs), wl.maps)
    assert (raw.task_launch >= ready[job_of] - 1e-9).all()
    # the AMs held at once never exceed the share: 0.5 x 12 slots = 6 AMs of one slot
    ev = sorted([(t, 1) for t in am_start] + [(t, -1) for t in raw.job_finish])
    assert max(np.cumsum([d for _, d in ev])) == 6  # reached: 60 jobs at 1 s gaps queue
    assert (ready > wl.submit_s + 4.0 + 1e-6).any()  # some job waited for an AM to end
    # maps beside the AMs of their node never exceed its slots (AM nodes are not recorded in
    # the tables; the cluster-wide count bounds them): maps + AMs <= 12 at every instant
    ev = sorted([(t, 1) for t in am_start] + [(t, -1) for t in raw.job_finish]
                + [(t, 1) for t in raw.task_launch] + [(t, -1) for t in raw.task_finish],
                key=lambda e: (e[0], e[1]))
    assert max(np.cumsum([d for _, d in ev])) <= 12
    # the tables count a map's wait from when its AM asked for it
    res = simulate(cfg, WorkloadSpec(jobs=60, inter_arrival_s=1.0))
    assert np.allclose(res.tasks["scheduled_s"], ready[job_of])


def test_max_am_share_minus_one_is_the_fair_schedulers_no_limit():
    def launches(share):
        return simulate(small_cfg(nodes=4, racks=2, slots_per_node=3, am_slots=1.0,
                                  am_startup_s=4.0, max_am_share=share),
                        WorkloadSpec(jobs=60, inter_arrival_s=5.0)).tasks["launch_s"]

    assert np.array_equal(launches(-1.0), launches(1.0))
    assert not np.array_equal(launches(-1.0), launches(0.25))


@pytest.mark.parametrize("share", [1.0, -1.0])
def test_application_masters_holding_every_slot_is_a_config_error_not_a_hang(share):
    cfg = small_cfg(nodes=4, racks=2, slots_per_node=3, am_slots=1.0, am_startup_s=4.0,
                    max_am_share=share)
    with pytest.raises(ConfigError, match="ApplicationMasters hold every slot"):
        simulate(cfg, WorkloadSpec(jobs=60, inter_arrival_s=1.0))


def test_without_application_masters_maps_are_pending_at_submission():
    res = simulate(small_cfg(), WorkloadSpec(jobs=40))
    submit = dict(zip(res.jobs["job_id"], res.jobs["submit_s"]))
    assert np.array_equal(res.tasks["scheduled_s"], [submit[j] for j in res.tasks["job_id"]])


@pytest.mark.parametrize("kw, needle", [
    (dict(am_slots=3.0), "am-slots must be in [0, slots-per-node 2]"),
    (dict(am_slots=1.0, max_am_share=0.0), "max-am-share must be in (0, 1]"),
    (dict(am_slots=1.0, max_am_share=-0.5), "or -1 for no limit"),
    (dict(nodes=2, racks=1, am_slots=2.0, max_am_share=0.25), "holds no AM of 2.0 slots"),
    (dict(am_startup_s=-1.0), "am-startup-s must be >= 0"),
])
def test_application_master_settings_are_validated(kw, needle):
    with pytest.raises(ConfigError) as info:
        small_cfg(**kw).validated()
    assert needle in str(info.value)
