"""The AM start-up arms of benchmarks/run_bench_sitting.py (dsbra.bench.sitting.arm_job_conf):
each changes one setting of the cluster's own mapred-site.xml (as `dsbra cluster up` renders
it) and keeps the rest."""

from __future__ import annotations

import pytest

from dsbra.bench import sitting
from dsbra.cluster.confdir import HostPaths, render_host
from dsbra.cluster.spec import ClusterSpec
from dsbra.observe.hadoop_conf import read_site



@pytest.fixture(scope="module")
def mapred_site(tmp_path_factory):
    conf = tmp_path_factory.mktemp("conf")
    paths = HostPaths(conf=str(conf), data="/d", tmp="/t", lib="/l")
    (conf / "mapred-site.xml").write_text(
        render_host(ClusterSpec(), "client", paths, "/usr/lib/jvm/java-17")["mapred-site.xml"])
    return read_site(conf / "mapred-site.xml")


def test_the_cluster_runs_512_mb_ams_with_the_start_up_options_and_no_uber(mapred_site):
    """What the arms change from: if the template changes, their settings must be looked at again."""
    opts = mapred_site[sitting.AM_OPTS].split()
    assert mapred_site["yarn.app.mapreduce.am.resource.mb"] == "512" and "-Xmx332m" in opts
    assert set(sitting.AM_START_UP_OPTS) <= set(opts)
    assert mapred_site["mapreduce.job.ubertask.enable"] == "false"


def test_uber_turns_on_uber_mode_only(mapred_site):
    assert sitting.arm_job_conf("static-uber", mapred_site) == {"mapreduce.job.ubertask.enable": "true"}


def test_am256_halves_the_container_and_its_heap_and_keeps_every_other_option(mapred_site):
    conf = sitting.arm_job_conf("static-am256", mapred_site)
    assert conf["yarn.app.mapreduce.am.resource.mb"] == "256"
    before, after = mapred_site[sitting.AM_OPTS].split(), conf[sitting.AM_OPTS].split()
    assert "-Xmx166m" in after and "-Xmx332m" not in after
    assert [o for o in before if not o.startswith("-Xmx")] == [o for o in after if not o.startswith("-Xmx")]


def test_am_jvm_default_drops_only_the_start_up_options(mapred_site):
    conf = sitting.arm_job_conf("static-am-jvm-default", mapred_site)
    before, after = mapred_site[sitting.AM_OPTS].split(), conf[sitting.AM_OPTS].split()
    assert [o for o in before if o not in sitting.AM_START_UP_OPTS] == after
    assert not set(sitting.AM_START_UP_OPTS) & set(after) and "-Xmx332m" in after


def test_am_hb100_shortens_only_the_am_heartbeat_from_the_clusters_500_ms(mapred_site):
    assert mapred_site[sitting.AM_HEARTBEAT] == "500"
    assert sitting.arm_job_conf("static-am-hb100", mapred_site) == {sitting.AM_HEARTBEAT: "100"}


@pytest.mark.parametrize("arm", ["static", "dsbra", "oracle", "static-per-job"])
def test_the_other_arms_set_nothing(mapred_site, arm):
    assert sitting.arm_job_conf(arm, mapred_site) == {}
