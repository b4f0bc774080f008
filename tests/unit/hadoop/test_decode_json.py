"""dsbra.hadoop.rest.decode_json: orjson where it can, the standard library where orjson refuses
what Java's JSON writers may emit (NaN, Infinity), ValueError for what is not JSON; the same
values as json.loads on every reply captured from the bundled cluster."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dsbra.hadoop.rest import decode_json

CAPTURED = Path(__file__).parents[2] / "fixtures" / "captured" / "hadoop-3.4.2"


def _json_replies():
    for body in sorted(CAPTURED.glob("*/*.body")):
        data = body.read_bytes()
        try:
            expected = json.loads(data)
        except ValueError:
            continue  # job.split, an Avro history file, a DataNode's bytes
        yield body, data, expected


def test_every_captured_json_reply_decodes_as_the_standard_library_does():
    replies = list(_json_replies())
    assert len(replies) > 100
    for body, data, expected in replies:
        assert decode_json(data) == expected, body


def test_what_orjson_refuses_but_java_writes_falls_back():
    doc = decode_json(b'{"beans": [{"name": "x", "AvgTime": NaN, "Max": Infinity}]}')
    assert math.isnan(doc["beans"][0]["AvgTime"]) and doc["beans"][0]["Max"] == math.inf


@pytest.mark.parametrize("body", [b"", b"<html><body>Error 500</body></html>", b'{"a": 1',
                                  b"\xff\xfe{}"])
def test_what_is_not_json_is_a_value_error(body):
    with pytest.raises(ValueError):
        decode_json(body)
