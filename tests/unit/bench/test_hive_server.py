"""The pure parts of the hive engine (dsbra/bench/hive.py): the rendered hive-site.xml, the
per-job tables and their symlink files, the job-name mapping, the expected row counts, and the
decoding of the splits Hive writes into a job's job.split."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsbra.bench import hive
from dsbra.bench.data import DatasetPlan, file_content, grep_block
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import InputError
from dsbra.observe import splits


def _props(text: str) -> dict[str, str]:
    root = ET.fromstring(text)
    return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}


def test_hive_site_runs_queries_as_one_map_per_file_mapreduce_jobs(tmp_path):
    paths = hive.ServerPaths(tmp_path / "hive")
    props = _props(hive.render_hive_site("10.80.0.1", 19000, paths, [Path("/h/lib/commons-collections-3.2.2.jar")]))
    assert props["hive.aux.jars.path"] == "file:///h/lib/commons-collections-3.2.2.jar"
    assert props["hive.server2.thrift.bind.host"] == "10.80.0.1"
    assert props["hive.server2.thrift.port"] == "19000"
    assert props["hive.server2.authentication"] == "NOSASL"
    assert props["hive.execution.engine"] == "mr"
    assert props["hive.fetch.task.conversion"] == "none"  # else the filter runs inside the server
    assert props["hive.input.format"] == "org.apache.hadoop.hive.ql.io.HiveInputFormat"
    assert props["mapreduce.job.maps"] == "1"
    assert props["hive.exec.mode.local.auto"] == "false"
    assert props["javax.jdo.option.ConnectionURL"] == \
        f"jdbc:derby:;databaseName={tmp_path / 'hive' / 'metastore_db'};create=true"
    assert props["datanucleus.schema.autoCreateAll"] == "true"
    assert props["hive.exec.local.scratchdir"].startswith(str(tmp_path / "hive"))
    # no HDFS or YARN address here: those come from the cluster's client conf on the classpath
    assert not [k for k in props if k.startswith(("fs.", "yarn.", "mapreduce.framework"))]


def test_server_address_follows_the_clusters_master_and_port_offset():
    spec = ClusterSpec(subnet="10.107.0.0/24", prefix="dsbra3", port_offset=9000)
    assert hive.server_address(spec) == ("10.107.0.1", 19000)
    assert hive.server_address(ClusterSpec()) == ("10.77.0.1", 10000)


def test_server_command_puts_hive_conf_then_cluster_conf_on_the_classpath(tmp_path):
    install = hive.HiveInstall(tmp_path / "h")
    paths = hive.ServerPaths(tmp_path / "state" / "hive")
    cmd = hive.server_command(Path("/jdk"), install, paths, tmp_path / "state" / "conf" / "client")
    cp = cmd[cmd.index("-cp") + 1].split(":")
    assert cp == [str(paths.conf), str(tmp_path / "state" / "conf" / "client"), str(install.lib / "*")]
    assert cmd[0] == "/jdk/bin/java" and cmd[-1] == hive.MAIN_CLASS
    for pkg in ("java.lang", "java.net", "java.nio", "java.util", "java.util.concurrent.atomic"):
        assert f"--add-opens=java.base/{pkg}=ALL-UNNAMED" in cmd


def test_per_job_table_reads_exactly_the_jobs_files():
    inputs = ["/bench/grep/part-00003", "/bench/grep/part-00000"]
    assert hive.symlink_text(inputs) == "/bench/grep/part-00003\n/bench/grep/part-00000\n"
    with pytest.raises(InputError):
        hive.symlink_text(["part-00001"])
    table = hive.table_name("20261124-0700", "job7")
    assert table == "bench_20261124_0700_job7"
    assert hive.query_sql(table) == "SELECT * FROM bench_20261124_0700_job7 WHERE field LIKE '%XYZ%'"
    ddl = hive.create_table_sql(table, "/bench/hive/20261124-0700/job7")
    assert "(key STRING, field STRING)" in ddl and "FIELDS TERMINATED BY '\\t'" in ddl
    assert "INPUTFORMAT 'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat'" in ddl
    assert ddl.startswith("CREATE EXTERNAL TABLE") and ddl.endswith("LOCATION '/bench/hive/20261124-0700/job7'")


def test_table_schema_matches_the_grep_data_format():
    # key = the 10 characters before the tab, field = the 90 after it (row id and value)
    line = grep_block(1, 0)[:-1]
    key, field = line.split(b"\t")
    assert len(key) == 10 and len(field) == 90 and field[:10] == b"0000000000"


def test_job_names_are_the_mapreduce_engines_and_map_back_to_hadoop_jobs():
    assert hive.job_name("job3") == "bench-job3"
    assert hive.session_conf("job3", "benchmark") == {"mapreduce.job.name": "bench-job3",
                                                      "mapreduce.job.queuename": "benchmark"}
    assert hive.session_conf("job3") == {"mapreduce.job.name": "bench-job3"}
    apps = [
        {"id": "application_1_0001", "name": "bench-job0", "startedTime": 500},   # an earlier run
        {"id": "application_1_0004", "name": "bench-job0", "startedTime": 2500},
        {"id": "application_1_0003", "name": "bench-job1", "startedTime": 2200},
        {"id": "application_1_0005", "name": "bench-job0", "startedTime": 2900},  # a later one
        {"id": "application_1_0006", "name": "other", "startedTime": 3000},
    ]
    assert hive.match_jobs(apps, ["bench-job0", "bench-job1", "bench-job2"], since_ms=1000) == \
        ["job_1_0004", "job_1_0003", None]


def test_expected_rows_count_the_lines_whose_field_holds_xyz():
    plan = DatasetPlan(total_bytes=3 << 20, block_bytes=1 << 20, seed=3, path="/d")
    dataset = plan.manifest()
    inputs = [plan.file_path(2), plan.file_path(0)]
    want = sum(1 for f in (2, 0) for line in file_content(plan, f).split(b"\n")
               if b"XYZ" in line.split(b"\t", 1)[-1])
    cache: dict[str, int] = {}
    assert hive.expected_rows(dataset, inputs, cache) == want > 0
    assert set(cache) == set(inputs)
    # XYZ in the key only does not count; in the field it does
    block = bytearray(grep_block(2, 0))
    block[0:3] = b"XYZ"
    block[102 + 50:102 + 53] = b"XYZ"
    assert hive.count_matches(bytes(block)) == hive.count_matches(grep_block(2, 0)[:102]) + 1


def _vlong(i: int) -> bytes:
    """WritableUtils.writeVLong, for non-negative values."""
    if i <= 127:
        return bytes([i])
    raw = i.to_bytes((i.bit_length() + 7) // 8, "big")
    return bytes([256 - 112 - len(raw)]) + raw


def _text(s: str) -> bytes:
    b = s.encode()
    return _vlong(len(b)) + b


def _utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def _file_split(path: str, start: int, length: int) -> bytes:
    return _text(path) + struct.pack(">qq", start, length)


def _split_files(records: list[tuple[bytes, tuple[str, ...]]]) -> tuple[bytes, bytes]:
    data = b"SPL" + struct.pack(">i", 1)
    meta = b"META-SPL" + bytes([1, len(records)])
    for record, hosts in records:
        meta += bytes([len(hosts)]) + b"".join(_text(h) for h in hosts) + _vlong(len(data)) + _vlong(100)
        data += record
    return meta, data


def test_hive_splits_decode_to_the_data_file_they_scan():
    nn = "hdfs://10.80.0.1:17020"
    symlink = (_text(splits.HIVE_SPLIT) + _utf(splits.HIVE_SYMLINK_SPLIT)
               + _file_split(f"{nn}/bench/hive/l/job0/symlink.txt", 0, 0)
               + _file_split(f"{nn}/bench/grep/part-00002", 0, 1048560)
               + _utf(hive.SYMLINK_INPUT_FORMAT))
    plain = (_text(splits.HIVE_SPLIT) + _utf("org.apache.hadoop.mapred.FileSplit")
             + _file_split(f"{nn}/warehouse/t/000000_0", 0, 77) + _utf("org.apache.hadoop.mapred.TextInputFormat"))
    other = _text(splits.HIVE_SPLIT) + _utf("org.apache.orc.OrcSplit") + b"\0" * 8
    meta, data = _split_files([(symlink, ("10.80.0.12", "10.80.0.13")), (plain, ("10.80.0.11",)),
                               (other, ())])
    got = splits.read_splits(meta, data)
    assert got[0] == splits.FileSplit(0, f"{nn}/bench/grep/part-00002", 0, 1048560, ("10.80.0.12", "10.80.0.13"))
    assert got[1] == splits.FileSplit(1, f"{nn}/warehouse/t/000000_0", 0, 77, ("10.80.0.11",))
    assert got[2] is None


def test_replay_without_a_hive_install_is_a_one_line_input_error(tmp_path, monkeypatch):
    from dsbra.cli import cli

    monkeypatch.setenv("DSBRA_HIVE_DIR", str(tmp_path / "no-hive"))
    schedule = tmp_path / "s.json"
    made = CliRunner().invoke(cli, ["bench", "schedule", "--out", str(schedule), "--jobs", "2", "--size", "3m",
                                    "--block-size", "1m"])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(cli, ["bench", "replay", str(schedule), "--out", str(tmp_path / "r"),
                                      "--engine", "hive"])
    assert isinstance(result.exception, InputError)
    assert "Hive 4.0.1 is not installed" in str(result.exception)
    assert "dsbra bench hive install" in str(result.exception)


def test_hive_site_uses_the_clusters_shared_cache_only_when_it_runs_one(tmp_path):
    paths = hive.ServerPaths(tmp_path / "hive")
    cached = _props(hive.render_hive_site("10.80.0.1", 19000, paths, shared_cache=True))
    assert cached["mapreduce.job.sharedcache.mode"] == "jobjar,libjars"
    assert "mapreduce.job.sharedcache.mode" not in _props(hive.render_hive_site("10.80.0.1", 19000, paths))


def test_a_running_servers_shared_cache_use_is_read_from_its_hive_site(tmp_path):
    """How `bench hive start` tells whether the server it finds runs with the cache: from the
    hive-site.xml it was started with (absent: no server configured yet)."""
    paths = hive.ServerPaths(tmp_path / "hive")
    assert not hive.uses_shared_cache(paths)
    paths.conf.mkdir(parents=True)
    for shared_cache in (True, False):
        (paths.conf / "hive-site.xml").write_text(
            hive.render_hive_site("10.80.0.1", 19000, paths, shared_cache=shared_cache))
        assert hive.uses_shared_cache(paths) is shared_cache
