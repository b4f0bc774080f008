"""dsbra on a TLS-only cluster (`dsbra cluster up --tls`, issue 23): https on every web
endpoint with certificates of the cluster's own CA, plain authentication, no Kerberos.

One two-worker bring-up in the second slot for the module, and one grep job on it that the
tests share. The endpoints answer over https verified against the CA and not over plain
http; `dsbra cluster status`, `dsbra observe --ca-bundle` and a `dsbra run --once` dry run with
``cluster.ca_bundle`` work through it; without the CA, `dsbra run` and `dsbra observe` stop
in one line naming TLS verification.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import requests
import yaml

from dsbra.bench.network import time_reads
from dsbra.cluster.jobs import grep_lines, run_grep
from dsbra.cluster.spec import ClusterSpec
from dsbra.hadoop.hdfs import make_client
from netslots import SECOND

pytestmark = [pytest.mark.cluster, pytest.mark.secure]

TLS_SPEC = ClusterSpec(workers=2, replication=1, **SECOND, tls=True)
INPUT, OUTPUT, PATTERN = "/tls/in/lines.txt", "/tls/out", "XYZ"
#: variables through which requests would trust another CA bundle than the one a test names
CA_ENV = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")


@pytest.fixture(scope="module")
def tls_cluster(second_slot):
    layout, env, _ = second_slot.cluster(TLS_SPEC)
    client = make_client(env["namenode"], user="root", ca_bundle=env["ca_bundle"])
    data = grep_lines(3000, seed=0, match=PATTERN)
    client.write(INPUT, data, overwrite=True)
    return layout, env, client, data


@pytest.fixture(scope="module")
def grep_job(tls_cluster):
    """The examples' grep over the input, run once: its job client speaks RPC, its
    ApplicationMaster and the JobHistoryServer https."""
    layout, _, _, _ = tls_cluster
    return run_grep(INPUT, OUTPUT, PATTERN, state_dir=layout.root)


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in CA_ENV}


def _dsbra(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsbra", *args], capture_output=True, text=True,
                          timeout=180, env=_plain_env())


def _refused_in_one_line(proc: subprocess.CompletedProcess, expected: str) -> None:
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("dsbra: error:")]
    assert len(lines) == 1 and expected in lines[0], proc.stderr[-2000:]


def test_the_web_endpoints_answer_https_with_the_cluster_ca_and_not_plain_http(tls_cluster):
    _, env, _, _ = tls_cluster
    worker = env["workers"][0]
    urls = [f"{env['namenode']}/jmx", f"{env['webhdfs']}/?op=GETFILESTATUS&user.name=root",
            f"{env['rm']}/ws/v1/cluster/info", f"{env['jhs']}/ws/v1/history/info",
            f"{worker['datanode']}/jmx", f"{worker['nodemanager']}/ws/v1/node/info"]
    session = requests.Session()
    session.trust_env = False
    for url in urls:
        assert url.startswith("https://"), url
        assert session.get(url, verify=env["ca_bundle"], timeout=10).status_code == 200, url
        with pytest.raises(requests.exceptions.SSLError):  # the CA is the cluster's own
            session.get(url, timeout=10)
        with pytest.raises(requests.ConnectionError):  # the port speaks TLS only
            session.get(url.replace("https://", "http://", 1), timeout=10)


def test_a_grep_job_runs(tls_cluster, grep_job):
    _, _, client, data = tls_cluster
    assert len(grep_job.job_ids) == 2, grep_job.log[-2000:]  # the search job and the sort job
    with client.read(f"{OUTPUT}/part-r-00000", encoding="utf-8") as reader:
        count, word = reader.read().split()
    assert (int(count), word) == (data.count(PATTERN.encode()), PATTERN)


def test_cluster_status_and_observe_work_through_the_ca(tls_cluster, grep_job):
    layout, env, _, _ = tls_cluster
    status = _dsbra("cluster", "status", "--json", "--state-dir", str(layout.root))
    assert status.returncode == 0, status.stdout + status.stderr[-2000:]
    assert json.loads(status.stdout)["containers"]["nodemanagers"] == TLS_SPEC.workers
    observe = _dsbra("observe", "--history", "--window-s", "900", "--rm", env["rm"], "--webhdfs",
                     env["namenode"], "--jhs", env["jhs"], "--user", "root", "--ca-bundle", env["ca_bundle"])
    assert observe.returncode == 0, observe.stderr[-2000:]
    doc = json.loads(observe.stdout)
    assert sorted(doc["live_nodes"]) == sorted(w["host"] for w in env["workers"]), observe.stdout[:2000]
    assert doc["observe"]["map_tasks"] >= 2, observe.stdout[:2000]  # the grep's search and sort maps


def _daemon_config(tmp_path, env, **cluster) -> str:
    cfg = {"mode": "dry-run", "interval_s": 5, "poll_s": 1, "state_dir": str(tmp_path / "state"),
           "cluster": {"rm": env["rm"], "webhdfs": env["namenode"], "jhs": env["jhs"], "user": "root",
                       **cluster},
           "http": {"enabled": False}}
    path = tmp_path / "daemon.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_a_dry_run_round_works_through_the_ca(tls_cluster, grep_job, tmp_path):
    _, env, _, _ = tls_cluster
    proc = _dsbra("run", "--once", "--config", _daemon_config(tmp_path, env, ca_bundle=env["ca_bundle"]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "round=1 blocks=" in proc.stderr and "skipped" not in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


def test_an_untrusted_certificate_is_a_one_line_refusal(tls_cluster, tmp_path):
    _, env, _, _ = tls_cluster
    _refused_in_one_line(_dsbra("run", "--once", "--config", _daemon_config(tmp_path, env)),
                         "TLS verification of the NameNode failed")
    _refused_in_one_line(_dsbra("observe", "--history", "--rm", env["rm"], "--webhdfs", env["namenode"],
                                "--jhs", env["jhs"]), "TLS verification failed")


def test_reads_of_a_block_are_timed_over_https(tls_cluster):
    """dsbra.bench.network (benchmarks/bench_network.py) on a --tls cluster: the block's holder
    is asked of WebHDFS and every timed read is made over https, both verified against the CA."""
    _, env, client, _ = tls_cluster
    path = "/tls/network/block"
    client.write(path, b"x" * (1 << 20), overwrite=True, replication=1)
    result = time_reads(env, path, repeats=1)
    assert result["holder"] in {w["host"] for w in env["workers"]}
    assert result["bytes"] == 1 << 20
    assert len(result["levels"]) == TLS_SPEC.workers  # node-local, and the other worker's level
