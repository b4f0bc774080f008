"""hadoop-docker/: the image built without a registry, the compose file's cluster brought up
through testcontainers, and the netns cluster's own checks run against it. The NameNode runs
dsbra's placement plugin (`dsbra docker compose --placement heat`); without usable heat it places
as HDFS's default, so the shared checks hold, and the last tests check its choices here.

The checks are the very test functions of test_cluster_hdfs.py and test_cluster_yarn.py,
imported here: this module's `cluster` and `webhdfs` fixtures point them at the containers.
The grep job's client runs inside the NameNode's container (`container job`), where the jar
paths of the job's conf exist. The cluster is on 172.29.<slot>.0/24 (DSBRA_TEST_SLOT), its
compose project `dsbra-test-slot<slot>`, so test sessions of two slots run side by side.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
import requests

from dsbra.bench.placement_log import heat_placements, log_plugin_at_debug
from dsbra.cluster.confdir import DEFAULT_QUEUES
from dsbra.cluster.docker import DAEMON_HTTP_PORT, work_dir
from dsbra.cluster.spec import ClusterSpec
from harness import (compose_cluster, heat_document, holders, until_logged, until_no_transfers, until_replicas,
                     until_round_read)
from netslots import SLOT
from test_cluster_hdfs import (  # noqa: F401  (collected here, against this module's cluster)
    scratch,
    test_block_locations_name_distinct_worker_hosts,
    test_namenode_and_resourcemanager_agree_on_two_or_more_racks,
    test_setreplication_raises_then_lowers_live_replicas,
    test_webhdfs_write_then_read,
)
from test_cluster_yarn import (  # noqa: F401
    check_concurrent_jobs,
    check_container_geometry,
    check_grep_job,
    test_rm_conf_shows_configured_locality_delay,
    test_scheduler_is_fair_with_configured_queues,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1500)]

WORKERS = 4
SPEC = ClusterSpec(workers=WORKERS, replication=3, subnet=f"172.29.{SLOT}.0/24")
PROJECT = f"dsbra-test-slot{SLOT}"


@pytest.fixture(scope="module")
def compose():
    """The compose file's cluster with the placement plugin, up and ready."""
    with compose_cluster(PROJECT, SPEC, placement="heat") as stack:
        yield stack


@pytest.fixture(scope="module")
def cluster(compose) -> dict:
    """The shape of `dsbra cluster env --json` that the imported checks read."""
    urls = SPEC.urls
    return {
        **{key: urls[key] for key in ("webhdfs", "namenode", "rm", "jhs", "fs")},
        "workers": [{"name": w.name, "host": w.host, "rack": w.rack} for w in SPEC.worker_list],
        "replication": SPEC.replication,
        "queues": [f"root.{q['name']}" for q in DEFAULT_QUEUES],
        "locality_delay": {"node": SPEC.locality_delay_node, "rack": SPEC.locality_delay_rack},
    }


@pytest.fixture(scope="module")
def webhdfs(cluster):
    from hdfs import InsecureClient

    return InsecureClient(cluster["namenode"], user="root")


def test_grep_job_in_containers_runs_data_local_maps_on_several_workers(compose, cluster, webhdfs):
    def grep(src: str, out: str) -> list[str]:
        stdout, _, _ = compose.exec_in_container(
            ["python", "-m", "dsbra.cluster.container", "job", "--queue", "benchmark", "grep", src, out, "needle"],
            service_name="namenode")
        ids = next(line for line in stdout.splitlines() if line.startswith("job ids:")).split()[2:]
        assert ids, stdout[-2000:]
        return ids

    check_grep_job(cluster, webhdfs, grep)


def test_daemon_sidecar_runs_dry_run_beside_the_namenode(compose):
    """`dsbra run` in its own container, in the NameNode's network namespace, polling the RM."""
    url = f"http://{SPEC.master}:{DAEMON_HTTP_PORT}"
    assert requests.get(f"{url}/healthz", timeout=10).status_code in (200, 503)
    metrics = requests.get(f"{url}/metrics", timeout=10).text
    assert "dsbra_" in metrics
    deadline = time.monotonic() + 60
    while True:  # its log says it started in dry-run mode and polls without errors once the RM answers
        logs = compose.get_logs("dsbra")[0] + compose.get_logs("dsbra")[1]
        if "start mode=dry-run" in logs and f"rm=http://{SPEC.master}:8088" in logs:
            break
        assert time.monotonic() < deadline, logs[-1500:]
        time.sleep(2)


def test_benchmark_schedule_replays_inside_the_namenode_container(compose):
    """hadoop-docker/README.md's recipe: `dsbra bench data`, `schedule` and `replay` in the
    NameNode's container, which find the cluster through its client state at /dsbra."""
    out, err, code = compose.exec_in_container(
        ["sh", "-c", "dsbra bench data --size 128m --path /bench/docker-test && "
                     "dsbra bench schedule --jobs 2 --size 128m --path /bench/docker-test "
                     "--inter-arrival-s 3 --out /dsbra/test-schedule.json && "
                     "dsbra bench replay /dsbra/test-schedule.json --out /dsbra/test-results"],
        service_name="namenode")
    assert code == 0, (out + err)[-3000:]
    assert "2 jobs" in out, out[-2000:]
    summary = json.loads(compose.exec_in_container(
        ["cat", "/dsbra/test-results/summary.json"], service_name="namenode")[0])
    assert summary["failed_jobs"] == [] and summary["jobs"] == 2 and summary["maps"] >= 2, summary


def test_job_defaults_fit_the_containers_and_the_load_check_runs_inside(compose, cluster):
    """The containers' ResourceManager grants the very container geometry under which
    test_cluster_yarn's twelve concurrent jobs do not stall on the netns cluster (issue 27: the
    stall came from container sizes against node memory, which the same templates render for
    both); the twelve run there, once. Here `dsbra cluster load` runs in the NameNode's
    container, its jobs granted at the configured size."""
    check_container_geometry(SPEC)
    out, err, code = compose.exec_in_container(
        ["dsbra", "cluster", "load", "--jobs", "3", "--gap-s", "3", "--json"], service_name="namenode")
    assert code == 0, (out + err)[-3000:]
    check_concurrent_jobs(json.loads(out), cluster["rm"], jobs=3)


# ---- the placement plugin in the containers (issue 24) --------------------------------------


def _compose(*args: str, stdin: str | None = None) -> str:
    run = subprocess.run(["docker", "compose", *args], cwd=work_dir() / PROJECT, input=stdin, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, (args, run.stderr[-1500:])
    return run.stdout


def _namenode_log() -> str:
    return _compose("exec", "-T", "namenode", "cat", "/dsbra/logs/namenode.log")


def test_the_namenodes_plugin_places_by_the_sidecars_heat(compose):
    """The NameNode's plugin reads the dry-run sidecar's /heat over the namespace they share."""
    url = f"http://{SPEC.master}:{DAEMON_HTTP_PORT}/heat"
    deadline = time.monotonic() + 240  # the sidecar's first round ends one interval (60 s) after it starts
    while requests.get(url, timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the sidecar published no heat"
        time.sleep(5)
    doc = requests.get(url, timeout=10).json()
    assert doc["format"] == "dsbra-heat" and doc["version"] == 1, doc
    until_logged(_namenode_log, r"dsbra heat usable \(round \d+, \d+ DataNodes\)", timeout_s=30)


@pytest.fixture(scope="module")
def hand_heat(compose, cluster):
    """The sidecar stopped; the NameNode's heat URI (127.0.0.1:9780/heat in its namespace) served
    from a document the test writes, so each of the plugin's choices is known in advance."""
    log_plugin_at_debug(cluster["namenode"])
    missing_before = _namenode_log().count("dsbra heat missing")
    _compose("stop", "dsbra")
    _compose("exec", "-d", "namenode", "sh", "-c",
             f"mkdir -p /tmp/heatdoc && exec python -m http.server {DAEMON_HTTP_PORT} --bind 127.0.0.1 "
             "--directory /tmp/heatdoc")
    # the plugin logs a state's change only: it must see the sidecar's heat gone before the
    # first document here, whose "usable" line the test reads (a CI run published while the
    # plugin still held the sidecar's document, and no line for round 10 came)
    deadline = time.monotonic() + 60
    while _namenode_log().count("dsbra heat missing") <= missing_before:
        assert time.monotonic() < deadline, _namenode_log()[-3000:]
        time.sleep(1)

    def publish(heat: dict[str, float], raised=(), round_: int = 1, lowering=None) -> None:
        doc = heat_document(heat, raised, round_, lowering)
        _compose("exec", "-T", "namenode", "sh", "-c",
                 "mkdir -p /tmp/heatdoc && cat > /tmp/heatdoc/.heat && mv /tmp/heatdoc/.heat /tmp/heatdoc/heat",
                 stdin=doc)
        until_round_read(_namenode_log, round_)

    return publish


RACK = {w.host: w.rack for w in SPEC.worker_list}


def _heat_lines() -> list[str]:
    """The plugin's last lines in the NameNode's log: what it read before a placement."""
    return [line for line in _namenode_log().splitlines() if "dsbra heat" in line][-6:]


def test_a_raised_files_new_copy_goes_to_the_least_heated_node_the_rack_rule_allows(hand_heat, webhdfs):
    """RF 1 -> 2: HDFS puts the second replica on the other rack; the plugin, on that rack's
    least heated node (HDFS's default: either of the two) unless HDFS's load rule refuses it
    (a CI run's: "too busy (1 xceivers)", the file's own write still in the heartbeat), as
    the plugin's line for the placement says; then on the other."""
    nodes = list(RACK)
    for i in range(3):
        path, round_ = f"/docker-placement/raise-{i}", 10 + i
        webhdfs.write(path, b"x" * 1024, overwrite=True, replication=1)
        first = holders(webhdfs, path)
        other_rack = [n for n in nodes if RACK[n] != RACK[first[0]]]
        coolest = other_rack[i % len(other_rack)]
        heat = {n: 0.9 for n in nodes}
        heat[coolest] = 0.1
        hand_heat(heat, raised=[path], round_=round_)
        until_no_transfers(webhdfs.url)
        webhdfs.set_replication(path, 2)
        placed = until_replicas(webhdfs, path, 2)
        refused = heat_placements(_namenode_log()).get((round_, path))
        assert refused is not None, (i, heat, _heat_lines())
        expected = next(n for n in [coolest] + other_rack if n not in refused)
        assert placed == sorted(first + [expected]), (i, heat, _heat_lines())
    assert re.search(r"dsbra heat usable \(round 10, 4 DataNodes\)", _namenode_log())


def test_an_excess_replica_goes_from_the_hottest_holder_the_rack_rule_allows(hand_heat, webhdfs):
    """RF 4 -> 3 -> 2 -> 1, each lowering in the heat document: HDFS may drop any of 4, then
    only one of the rack left with two, then either; the plugin drops the one marked hottest
    (HDFS's default by chance: 1 in 16)."""
    nodes = list(RACK)
    path = "/docker-placement/lower"
    webhdfs.write(path, b"y" * 1024, overwrite=True, replication=4)
    assert until_replicas(webhdfs, path, 4) == sorted(nodes)
    left = list(nodes)
    for step in range(3):
        full_racks = {r for r in RACK.values() if sum(RACK[n] == r for n in left) > 1}
        allowed = [n for n in left if RACK[n] in full_racks] or left
        hottest = allowed[step % len(allowed)]
        heat = {n: 0.2 for n in nodes}
        heat[hottest] = 0.8
        hand_heat(heat, round_=20 + step, lowering={path: (len(left) - 1, left)})
        webhdfs.set_replication(path, len(left) - 1)
        left.remove(hottest)
        assert until_replicas(webhdfs, path, len(left)) == sorted(left), (step, heat, _heat_lines())
