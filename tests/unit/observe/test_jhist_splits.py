"""The .jhist and split-file readers on files a real cluster wrote (captured over WebHDFS)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbra.errors import HadoopError
from dsbra.observe import jhist, splits
from dsbra.observe.collector import HistoryStream

from observe_captured import bodies, expected


def final_jhist(scenario: str) -> bytes:
    """The final history file of the scenario's search job (done or done_intermediate)."""
    job_id = expected(scenario)["job_ids"][0]
    found = [b for ex, b in bodies(scenario, lambda u: "/history/done" in u and "op=OPEN" in u
                                   and f"/{job_id}-" in u) if ex["status"] == 200]
    assert found, "fixture has no final history file"
    return found[0]


def split_files(scenario: str) -> tuple[bytes, bytes]:
    """job.splitmetainfo and job.split of the scenario's search job."""
    job_id = expected(scenario)["job_ids"][0]
    meta = [b for ex, b in bodies(scenario, lambda u: f"{job_id}/job.splitmetainfo" in u)
            if ex["status"] == 200]
    data = [b for ex, b in bodies(scenario, lambda u: f"{job_id}/job.split?" in u)
            if ex["status"] == 200]
    return meta[0], data[0]


def test_header_names_the_format(scenario):
    data = final_jhist(scenario)
    kind = jhist.read_events(data).kind
    assert kind == (jhist.BINARY if scenario.endswith("binary") else jhist.JSON)


def test_history_file_gives_scheduled_launch_node_and_locality(scenario):
    job = jhist.parse(final_jhist(scenario))
    assert job.status == "SUCCEEDED" and not job.truncated and job.skipped == 0
    maps = [t for t in job.tasks.values() if t.task_type == "MAP"]
    assert len(maps) == job.total_maps > 0
    for t in maps:
        a = t.first_attempt
        assert a is not None and a.state == "SUCCEEDED"
        assert t.scheduled_ms <= a.launch_ms <= a.finish_ms <= job.finish_ms
        assert a.locality in ("NODE_LOCAL", "RACK_LOCAL", "OFF_SWITCH")
        assert (a.locality == "NODE_LOCAL") == (a.node in t.split_hosts)
        assert len(t.split_hosts) >= 1
    assert job.am_containers and job.submit_ms <= job.launch_ms


def test_binary_and_json_files_parse_to_the_same_shape():
    b = jhist.parse(final_jhist("collector-binary"))
    j = jhist.parse(final_jhist("collector-json"))
    assert sorted(t.task_type for t in b.tasks.values()) == \
        sorted(t.task_type for t in j.tasks.values())
    assert b.user == j.user == "root" and b.queue == j.queue


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.77, 0.95])
def test_a_truncated_file_reads_up_to_the_last_whole_record(scenario, cut):
    data = final_jhist(scenario)
    whole = jhist.read_events(data).events
    head = jhist.read_events(data[: int(len(data) * cut)])
    assert head.truncated or len(head.events) == len(whole)
    assert head.events == whole[: len(head.events)]


def test_incremental_reads_equal_one_read(scenario):
    data = final_jhist(scenario)
    stream, events = HistoryStream(), []
    step = 997
    while stream.offset < len(data):
        before = stream.offset
        events += stream.feed(data[stream.offset: stream.offset + step * 7])
        if stream.offset == before:
            step *= 2
            if stream.offset + step * 7 > 4 * len(data):
                break
    assert events == jhist.read_events(data).events


def test_bad_headers_are_hadoop_errors():
    for bad in (b"", b"Avro-Binary", b"Avro-Nope\n{}\n", b"Avro-Json\nnot json\n",
                b'Avro-Binary\n"int"\n\x02'):
        with pytest.raises(HadoopError):
            jhist.read_events(bad)


def test_a_schema_line_that_is_valid_avro_but_not_the_event_record_is_refused():
    # found by fuzzing: '"fields"' -> '"fiHlds"' leaves a valid record of no fields, which
    # decodes zero bytes per record; the reader used to loop until memory ran out
    raw = final_jhist("collector-binary")
    corrupted = raw.replace(b'"fields"', b'"fiHlds"', 1)
    with pytest.raises(HadoopError, match="not the Event"):
        jhist.read_events(corrupted)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupted_history_bytes_never_crash(data):
    raw = final_jhist("collector-binary")
    pos = data.draw(st.integers(0, len(raw) - 1))
    junk = data.draw(st.binary(min_size=1, max_size=16))
    corrupted = raw[:pos] + junk + raw[pos + len(junk):]
    try:
        job = jhist.parse(corrupted)
    except HadoopError:
        return
    assert job.skipped >= 0


def test_split_files_map_task_index_to_file_and_offset(scenario):
    meta, data = split_files(scenario)
    got = splits.read_splits(meta, data)
    metas = splits.read_meta(meta)
    assert len(got) == len(metas) == 5
    for s, m in zip(got, metas):
        assert s is not None and s.hosts == m.hosts and s.length == m.length
        assert splits.strip_scheme(s.path).startswith("/dsbra-fixtures/")
    # JobSubmitter sorts splits largest first
    assert [s.length for s in got] == sorted((s.length for s in got), reverse=True)
    assert sorted(s.start for s in got if s.path.endswith("big-0")) == [0, 8 * 1024 * 1024]


def write_vlong(i: int) -> bytes:
    """WritableUtils.writeVLong, transcribed from the Java source."""
    if -112 <= i <= 127:
        return struct.pack("b", i)
    length = -112
    if i < 0:
        i = ~i
        length = -120
    tmp = i
    while tmp != 0:
        tmp >>= 8
        length -= 1
    out = struct.pack("b", length)
    length = -(length + 120) if length < -120 else -(length + 112)
    for idx in range(length, 0, -1):
        shift = (idx - 1) * 8
        out += bytes([(i >> shift) & 0xFF])
    return out


@settings(deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_vlong_roundtrip(value):
    r = splits._Reader(write_vlong(value))
    assert r.vlong() == value and r.pos == len(r.data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupted_split_files_are_hadoop_errors_or_parse(data):
    meta, body = split_files("collector-binary")
    which = data.draw(st.sampled_from(["meta", "body"]))
    raw = meta if which == "meta" else body
    pos = data.draw(st.integers(0, len(raw) - 1))
    cut = data.draw(st.booleans())
    raw = raw[:pos] if cut else raw[:pos] + bytes([data.draw(st.integers(0, 255))]) + raw[pos + 1:]
    try:
        splits.read_splits(raw if which == "meta" else meta, raw if which == "body" else body)
    except HadoopError:
        pass


def test_old_api_status_string_gives_the_split():
    assert splits.parse_status_split("hdfs://10.77.0.1:8020/data/f1:0+8388608 > map") == \
        ("/data/f1", 0, 8388608)
    assert splits.parse_status_split("map > sort") is None
    assert splits.parse_status_split(None) is None
