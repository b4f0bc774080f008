"""`dsbra observe` and its collector against the bundled real cluster.

Ground truth comes from inputs this test writes: three one-block files and one file of several
blocks. Jobs are the MapReduce examples' grep. The bundled cluster keeps every job's split
files (``mapreduce.task.files.preserve.filepattern`` in its mapred-site); the first test also
asks for it per job, as a user of another cluster would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest
from hdfs import InsecureClient

from dsbra.cluster.jobs import submit_job
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.demand import DemandPoller
from dsbra.observe.window import build_window

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

PRESERVE = {"mapreduce.task.files.preserve.filepattern": "job_.*"}
BLOCK = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def endpoints(cluster) -> Endpoints:
    return Endpoints.from_urls(cluster["rm"], cluster["webhdfs"], cluster["jhs"], user="root")


@pytest.fixture(scope="module")
def inputs(webhdfs) -> dict:
    base = f"/test-observe/{uuid.uuid4().hex[:8]}"
    webhdfs.makedirs(base + "/in")
    line = b"k\t0000000001" + b"a" * 77 + b"XYZ\n"
    paths = []
    for i in range(3):
        p = f"{base}/in/one-block-{i}"
        webhdfs.write(p, line * 500, overwrite=True)
        paths.append(p)
    p = f"{base}/in/three-blocks"
    webhdfs.write(p, line * (3 * BLOCK // len(line)), overwrite=True)  # 3 blocks, last ~full
    paths.append(p)
    yield {"base": base, "paths": paths}
    webhdfs.delete(base, recursive=True)


def truth(endpoints: Endpoints, paths: list[str]) -> dict:
    out = {}
    for p in paths:
        for b in endpoints.hdfs.block_locations(p)["locatedBlocks"]:
            out[(p, b["startOffset"])] = {"block_id": f"blk_{b['block']['blockId']}",
                                         "hosts": sorted(x["hostName"] for x in b["locations"])}
    return out


def poll_until_done(collectors, run, job_ids_of=None, timeout=300):
    deadline = time.monotonic() + timeout
    while run.poll() is None and time.monotonic() < deadline:
        for c in collectors:
            c.poll()
        time.sleep(1.0)
    result = run.wait(timeout=60)
    while time.monotonic() < deadline:
        for c in collectors:
            c.poll()
        if all(all(j in c.done_jobs for j in result.job_ids) for c in collectors):
            return result
        time.sleep(1.0)
    raise AssertionError("history files of the jobs never became readable")


def test_live_collector_maps_every_task_to_its_block_and_survives_a_restart(
        endpoints, inputs, tmp_path):
    since = int(time.time() * 1000)
    reference = Collector(endpoints, since_ms=since)
    state = tmp_path / "collector.json"
    restarted = Collector(endpoints, since_ms=since, state_path=state)
    run = submit_job(["grep", inputs["base"] + "/in", inputs["base"] + "/out-live", "XYZ"],
                     conf=PRESERVE)
    # poll the restartable collector a few times while the job runs, then "crash" it
    t_end = time.monotonic() + 20
    while run.poll() is None and time.monotonic() < t_end:
        reference.poll()
        restarted.poll()
        time.sleep(1.0)
    first_half = restarted.take()
    restarted = Collector(endpoints, since_ms=0, state_path=state)  # a new process, same state
    result = poll_until_done([reference, restarted], run)
    ref = reference.take()
    both = first_half + restarted.take()
    assert sorted(o.attempt_id for o in both) == sorted(o.attempt_id for o in ref)
    assert len({o.attempt_id for o in ref}) == len(ref)

    search = [o for o in ref if o.job_id == result.job_ids[0]]
    t = truth(endpoints, inputs["paths"])
    assert len(search) == len(t) == 6  # 3 one-block files + 3 blocks
    assert {(o.path, o.start) for o in search} == set(t)
    for o in search:
        assert sorted(o.split_hosts) == t[(o.path, o.start)]["hosts"]
        assert o.scheduled_ms <= o.launch_ms <= o.finish_ms
        assert (o.locality == "NODE_LOCAL") == (o.node in o.split_hosts)

    doc = build_window(reference, ref, window_start_ms=since, window_end_ms=int(time.time() * 1000)).document()
    rows = {b["block_id"]: b for b in doc["blocks"]}
    for key, blk in t.items():
        assert rows[blk["block_id"]]["tasks"] == 1
        assert sorted(rows[blk["block_id"]]["nodes"]) == blk["hosts"]
    assert doc["params"]["delay_threshold_s"] > 0
    assert doc["observe"]["unmapped_tasks"] >= 1  # grep's sort job reads a deleted temp dir
    assert doc["observe"]["tasks_judged_on_rm_samples"] >= 1


def test_a_job_between_two_polls_is_counted_from_its_history_file(endpoints, inputs):
    since = int(time.time() * 1000)
    c = Collector(endpoints, since_ms=since)
    c.poll()
    # no per-job conf: the bundled cluster's own mapred-site keeps the split files
    result = submit_job(["grep", inputs["base"] + "/in", inputs["base"] + "/out-between", "XYZ"]
                        ).wait(timeout=600)
    c.poll_until_read(result.job_ids, timeout_s=120, interval_s=1.0)
    assert all(j in c.done_jobs for j in result.job_ids), "history file never read"
    obs = c.take()
    search = [o for o in obs if o.job_id == result.job_ids[0]]
    assert len(search) == 6 and all(o.path for o in search)
    assert {(o.path, o.start) for o in search} == set(truth(endpoints, inputs["paths"]))
    requests_before = endpoints.stats.requests
    c.poll()  # nothing new of ours: a poll costs the free-memory sample and the two app
    # listings (plus whatever other users' running jobs need), never a re-read of history
    assert not [o for o in c.take() if o.job_id in result.job_ids]
    assert not set(result.job_ids) & set(c.jobs)  # done: never read again
    # 3 requests + at most 8 per job of other users running now (conf, splits, history)
    assert endpoints.stats.requests - requests_before <= 3 + 8 * len(c.jobs)


def test_the_demand_poll_sees_pending_maps_on_their_blocks_and_costs_two_requests_idle(endpoints, webhdfs):
    """A job of forty one-block splits at replication 1 (about ten a worker, each of which has
    room for four or five containers): while it runs, the demand poll every half second sees
    its pending maps, each on its own split's block, and blocks whose holder cannot serve
    them all (`dsbra observe --demand` prints it); once nothing runs, a poll is two requests
    and sees nothing."""
    base = f"/test-demand/{uuid.uuid4().hex[:8]}"
    mb = 1024 * 1024
    webhdfs.write(f"{base}/in/many", (b"k\t" + b"a" * 60 + b"XYZ\n") * (40 * mb // 66), replication=1,
                  blocksize=mb, overwrite=True)
    try:
        blocks = {(f"{base}/in/many", b["startOffset"]) for b in
                  endpoints.hdfs.block_locations(f"{base}/in/many")["locatedBlocks"]}
        collector = Collector(endpoints, since_ms=int(time.time() * 1000))
        poller = DemandPoller(collector)
        run = submit_job(["grep", base + "/in", base + "/out", "XYZ"], conf=PRESERVE)
        polls, table = [], None
        deadline = time.monotonic() + 300
        while run.poll() is None and time.monotonic() < deadline:
            collector.poll()
            polls.append(poller.poll())
            if table is None and polls[-1].map_rows:  # the command's view of the same demand
                table = subprocess.run([sys.executable, "-m", "dsbra", "observe", "--demand", "--format", "table"],
                                       capture_output=True, text=True, timeout=120)
            time.sleep(0.5)
        result = run.wait(timeout=60)
        search = result.job_ids[0]
        ours = [(d, key, row) for d in polls for key, row in d.map_rows.items() if key[0] == search]
        assert ours, "no poll saw a pending map of the job"
        assert all(d.blocks[row] in blocks and 0 <= key[1] < len(blocks) for d, key, row in ours)
        assert any(d.judged()["raise"].any() for d, _, _ in ours), [d.document() for d, _, _ in ours][:3]
        assert all(d.judged()["pending"].sum() == len(d.map_rows) for d in polls)
        assert table.returncode == 0 and "pending maps on" in table.stdout, table.stderr[-2000:]
        for _ in range(30):  # the job's AM gone from the running list
            idle = poller.poll()
            if not poller.jobs:
                break
            time.sleep(1)
        assert idle.requests == 2 and idle.blocks == [] and idle.map_rows == {}
    finally:
        webhdfs.delete(base, recursive=True)


def test_observe_pipes_into_plan(cluster):
    cmd = (f"{sys.executable} -m dsbra observe --history --window-s 1800 --output - | "
           f"{sys.executable} -m dsbra plan --input -")
    proc = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    plan = json.loads(proc.stdout)
    assert {"gavg", "rf", "replicate", "dereplicate"} <= set(plan)
    table = subprocess.run([sys.executable, "-m", "dsbra", "observe", "--window-s", "1800", "--history",
                            "--format", "table"], capture_output=True, text=True, timeout=300)
    assert table.returncode == 0 and "D = " in table.stdout


def test_unreachable_cluster_is_a_one_line_error():
    proc = subprocess.run([sys.executable, "-m", "dsbra", "observe", "--rm", "http://127.0.0.1:9",
                           "--webhdfs", "http://127.0.0.1:9", "--jhs", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.startswith("dsbra: error: cannot reach ResourceManager")
    assert "Traceback" not in proc.stderr


def test_collector_on_a_hadoop_3_5_cluster(cluster, second_cluster_slot):
    """Hadoop 3.5.0 answers REST through Jersey 2: a one-worker 3.5.0 cluster, a grep job over
    a file the test wrote, and the live collector maps its map task to the file's block."""
    from dsbra.cluster import cluster as cl
    from dsbra.cluster.paths import StateLayout
    from dsbra.cluster.spec import ClusterSpec
    from netslots import SECOND

    layout = StateLayout(second_cluster_slot.resolve())
    spec = ClusterSpec(workers=1, replication=1, **SECOND, hadoop_version="3.5.0")
    try:
        cl.up(spec, layout, timeout=240, log=lambda *_: None)
        env = cl.env(layout)
        ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
        assert ep.rm.cluster_info()["hadoopVersion"] == "3.5.0"
        line = b"k\t0000000001" + b"a" * 77 + b"XYZ\n"
        InsecureClient(env["namenode"], user="root").write("/t35/in/one", line * 500,
                                                           overwrite=True)
        collector = Collector(ep, since_ms=int(time.time() * 1000))
        run = submit_job(["grep", "/t35/in", "/t35/out", "XYZ"], state_dir=layout.root)
        result = poll_until_done([collector], run)
        search = [o for o in collector.take() if o.job_id == result.job_ids[0]]
        assert len(search) == 1 and search[0].path == "/t35/in/one" and search[0].start == 0
        assert search[0].split_hosts == [spec.worker_list[0].host]
        assert collector.settings().delay_scheduling
    finally:
        cl.down(layout)
