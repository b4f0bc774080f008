"""Following the active NameNode and ResourceManager of an HA cluster, on replies captured
from the bundled cluster in `--ha` mode (tools/capture_ha_fixtures.py): after a manual
failover to nn2 and rm2, the first NameNode answers StandbyException (HTTP 403) and the first
RM redirects to the second (HTTP 307) or answers haState STANDBY. Each server's replies are
mounted at its own URL, so a client asking the standby first meets what it met live."""

from __future__ import annotations

import json
import socket
from collections import deque
from pathlib import Path

import pytest
import requests

from dsbra.errors import HadoopError
from dsbra.hadoop.hdfs import HdfsActor, make_client
from dsbra.hadoop.rest import Jmx, ResourceManager, WebHdfs, split_urls
from dsbra.observe.collector import Endpoints
from dsbra.observe.http_fixtures import Replayer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ha" / "hadoop-3.4.2"
URLS: dict[str, str] = json.loads((FIXTURES / "urls.json").read_text())
NN, RM = [URLS["nn1"], URLS["nn2"]], [URLS["rm1"], URLS["rm2"]]
FILE = "/ha-fixture/data.txt"


@pytest.fixture
def replay():
    """A session answering as the four servers did; (session, {server: its Replayer})."""
    session = requests.Session()
    servers = {name: Replayer(FIXTURES / name) for name in URLS}
    for name, url in URLS.items():
        session.mount(url + "/", servers[name])
    return session, servers


def closed_port_url() -> str:
    """An http URL nothing listens on (a port just freed): connection refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_split_urls_takes_one_several_or_a_list():
    assert split_urls("http://a:1/") == ["http://a:1"]
    assert split_urls(" http://a:1, http://b:2/ ,") == ["http://a:1", "http://b:2"]
    assert split_urls(["http://a:1", "http://b:2"]) == ["http://a:1", "http://b:2"]


def test_webhdfs_passes_the_standby_namenode_and_stays_on_the_active(replay):
    session, servers = replay
    nn = WebHdfs(NN, session=session, user="root")
    assert nn.file_status(FILE)["replication"] == 2
    assert nn.base_url == URLS["nn2"]
    assert sum(servers["nn1"].served.values()) == 1  # the standby's 403, once
    assert nn.stats.requests == 2


def test_a_lone_standby_is_an_error_naming_standby_exception(replay):
    session, _ = replay
    with pytest.raises(HadoopError) as err:
        WebHdfs([URLS["nn1"]], session=session, user="root").file_status(FILE)
    assert err.value.exception == "StandbyException" and err.value.status == 403


def test_an_unreachable_namenode_is_passed_over(replay):
    session, _ = replay
    nn = WebHdfs([closed_port_url(), URLS["nn2"]], session=session, user="root")
    assert nn.file_status(FILE)["replication"] == 2
    assert nn.base_url == URLS["nn2"]


def test_no_active_namenode_fails_the_request_naming_every_url(replay):
    session, _ = replay
    dead = closed_port_url()
    with pytest.raises(HadoopError) as err:
        WebHdfs([URLS["nn1"], dead], session=session, user="root").file_status(FILE)
    assert URLS["nn1"] in str(err.value) and dead in str(err.value)


def test_jmx_health_comes_from_the_active_namenode(replay):
    session, servers = replay
    standby = json.loads((FIXTURES / "nn1" / "0001.body").read_bytes())
    assert standby["beans"][0]["tag.HAState"] == "standby"
    jmx = Jmx(NN, session=session)
    health = jmx.namenode_health()
    assert jmx.base_url == URLS["nn2"]
    assert health["num_live"] == 3 and not health["safe_mode"]


def test_jmx_with_no_active_namenode_fails_naming_every_url(replay):
    """A standby's JMX answers with counts it has not caught up on: with no active NameNode
    among the URLs (the other one unreachable), health is an error, not the standby's counts."""
    session, _ = replay
    dead = closed_port_url()
    with pytest.raises(HadoopError) as err:
        Jmx([URLS["nn1"], dead], session=session).namenode_health()
    assert err.value.exception == "StandbyException"
    assert "no active one among" in str(err.value)
    assert URLS["nn1"] in str(err.value) and dead in str(err.value)


def test_rm_follows_the_standbys_redirect_then_asks_the_active_directly(replay):
    session, servers = replay
    rm = ResourceManager(RM, session=session)
    assert rm.apps() == []
    assert rm.base_url == URLS["rm2"]
    rm.metrics()  # straight to rm2: the standby is not asked again
    assert sum(servers["rm1"].served.values()) == 1


def test_rm_cluster_info_of_a_standby_is_passed_over(replay):
    session, servers = replay
    rm = ResourceManager(RM, session=session)
    assert rm.cluster_info()["haState"] == "ACTIVE"
    assert rm.base_url == URLS["rm2"]


def test_endpoints_take_comma_separated_webhdfs_urls(replay):
    session, _ = replay
    ep = Endpoints.from_urls(",".join(RM), ",".join(f"{u}/webhdfs/v1" for u in NN), RM[0],
                             user="root", session=session)
    assert ep.hdfs.urls == NN and ep.jmx.urls == NN and ep.rm.urls == RM
    assert ep.hdfs.file_status(FILE)["replication"] == 2


def test_the_acting_client_sends_setreplication_to_the_active_namenode(replay, caplog):
    session, servers = replay
    actor = HdfsActor(make_client(NN, user="root", session=session))
    with caplog.at_level("INFO", logger="dsbra.hadoop.rest"):
        actor.set_replication(FILE, 3)  # no error: the standby refused it, the active took it
    for name in ("nn1", "nn2"):
        assert [k for k in servers[name].served if "SETREPLICATION" in k], name
    assert actor.client.namenodes.base_url == URLS["nn2"]  # and stays on the active one
    assert actor.client._urls == deque([URLS["nn2"]])  # HdfsCLI sees only that one
    # the one rule of every client, with its log line
    assert f"failover service=WebHDFS to={URLS['nn2']}" in caplog.text


def test_writes_share_the_read_endpoints_choice_of_namenode(replay):
    """The daemon hands its WebHDFS read endpoint to the acting client: once a read has found
    the active NameNode, a write goes straight to it, and the standby is not asked again."""
    session, servers = replay
    reads = WebHdfs(NN, session=session, user="root")
    assert reads.file_status(FILE)["replication"] == 2
    asked = sum(servers["nn1"].served.values())
    actor = HdfsActor(make_client(reads, user="root", session=session))
    actor.set_replication(FILE, 3)
    assert sum(servers["nn1"].served.values()) == asked
    assert [k for k in servers["nn2"].served if "SETREPLICATION" in k]


def test_a_lone_standby_refuses_a_write_naming_standby_exception(replay):
    session, _ = replay
    with pytest.raises(HadoopError) as err:
        HdfsActor(make_client([URLS["nn1"]], user="root", session=session)).set_replication(FILE, 3)
    assert err.value.exception == "StandbyException"
    assert str(err.value).startswith(f"WebHDFS SETREPLICATION {FILE}=3: StandbyException")


def test_no_active_namenode_fails_a_write_naming_every_url(replay):
    session, _ = replay
    dead = closed_port_url()
    actor = HdfsActor(make_client([URLS["nn1"], dead], user="root", session=session))
    with pytest.raises(HadoopError) as err:
        actor.status(FILE)
    assert str(err.value).startswith(f"WebHDFS GETFILESTATUS {FILE}: no active one among")
    assert URLS["nn1"] in str(err.value) and dead in str(err.value)


def test_rms_that_know_no_active_one_fail_the_request_as_standby():
    """Both RMs standby (mid-failover): each answers 307 with no Location, "Can not find any
    active RM"; the request fails naming both, not as a reply that is not JSON."""
    session = requests.Session()
    for name in ("rm1", "rm2"):
        session.mount(URLS[name] + "/", Replayer(FIXTURES / "no-active-rm" / name))
    with pytest.raises(HadoopError) as err:
        ResourceManager(RM, session=session).nodes()
    assert err.value.exception == "StandbyException"
    assert "no active one among" in str(err.value) and URLS["rm2"] in str(err.value)


def test_a_setreplication_lost_in_a_failover_is_reconciled_not_failed(replay, tmp_path):
    """The active NameNode gone mid-request and the standby refusing: the acting client's
    error is one apply.py leaves open (it may have reached the shared edit log), and the next
    round's reconcile closes it from the new active NameNode's answer."""
    from dsbra.act.apply import UNSURE
    from dsbra.act.journal import Journal

    session, _ = replay
    lost = HdfsActor(make_client([closed_port_url(), URLS["nn1"]], user="root", session=session))
    with pytest.raises(HadoopError) as err:
        lost.set_replication(FILE, 3)
    assert err.value.exception in UNSURE
    journal = Journal.open(tmp_path / "journal.jsonl")
    action = journal.intent(FILE, before=2, target=3, base=2, reason={}, round_=1)
    assert action.pending  # what apply.py leaves after that error
    active = HdfsActor(make_client(URLS["nn2"], user="root", session=session))
    assert journal.reconcile(active) == [action]  # nn2 reports replication 2: never arrived
    assert action.state == "cancelled" and not journal.pending()


def test_the_load_checks_clients_follow_the_active_namenode_and_resourcemanager(replay):
    """`dsbra cluster load` asks every NameNode and RM of the cluster's spec, not the first."""
    from dsbra.cluster import loadcheck
    from dsbra.cluster.spec import ClusterSpec

    session, _ = replay
    spec = ClusterSpec(ha=True, subnet="10.88.0.0/24", port_offset=4000)  # the captured cluster's
    assert {**spec.namenode_urls, **spec.rm_urls} == URLS
    rm, client = loadcheck.cluster_clients(spec, session)
    assert rm.urls == [URLS["rm1"], URLS["rm2"]]
    active_metrics = json.loads((FIXTURES / "rm2" / "0002.body").read_bytes())["clusterMetrics"]
    assert rm.metrics() == active_metrics  # rm1 redirected to rm2
    assert rm.base_url == URLS["rm2"]
    assert client.status(FILE)["replication"] == 2  # nn1 answered StandbyException
    assert client.namenodes.base_url == URLS["nn2"]


def test_the_bench_and_demo_client_takes_the_envs_comma_separated_namenodes(replay):
    """`dsbra cluster env`'s ``namenode`` (an --ha cluster's NameNodes, comma-separated), as
    `dsbra bench`, the demo and the benchmark scripts hand it over: every NameNode is tried."""
    from dsbra.cluster import cluster as cl

    session, _ = replay
    client = cl.hdfs_client(",".join(NN), session, timeout=10)
    assert client.status(FILE)["replication"] == 2  # nn1 answered StandbyException
    assert client.namenodes.base_url == URLS["nn2"]
