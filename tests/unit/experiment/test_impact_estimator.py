"""`dsbra impact`'s estimator: per-map rates per group, of the maps after a file's first decision
(its bootstrap over files and the files an undecided experiment still needs: tests/unit/test_stats.py;
no interval under MIN_FILES: test_impact_recorded.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dsbra.experiment.records import MAP_RECORD_SCHEMA
from dsbra.experiment.impact import FileSums, per_file_sums


def _sums(local_per_file: list[tuple[int, int]]) -> FileSums:
    """Files of (node-local maps, maps)."""
    maps = np.array([m for _, m in local_per_file])
    local = np.array([k for k, _ in local_per_file], float)
    return FileSums([f"/f{i}" for i in range(len(maps))], maps,
                    {"node_locality": local, "delay_wait_s": np.zeros(len(maps)),
                     "map_s": np.zeros(len(maps))},
                    {"node_locality": maps, "delay_wait_s": maps, "map_s": maps})


def test_rates_are_per_map_not_per_file():
    s = _sums([(9, 10), (0, 90)])
    assert s.rate("node_locality") == pytest.approx(0.09)
    assert s.rate("node_locality", [0]) == pytest.approx(0.9)


def test_only_maps_after_a_files_first_decision_count():
    rows = {"window_end_ms": [9] * 4, "job_id": ["j"] * 4, "attempt_id": list("abcd"),
            "file": ["/a", "/a", "/b", None], "block_id": [1, 1, 2, None],
            "node": ["n"] * 4, "scheduler_locality": [None] * 4,
            "split_local": [False, False, True, False],
            "replica_local": [False, True, True, None], "delayed": [True, False, False, False],
            "delay_wait_s": [4.0, 0.0, 0.0, 0.0], "scheduled_ms": [0] * 4,
            "launch_ms": [100, 300, 300, 300], "finish_ms": [200, 1300, None, 400],
            "period": [None] * 4}
    maps = pa.table(rows, schema=MAP_RECORD_SCHEMA)
    s = per_file_sums(maps, {"/a": ("treatment", 250), "/b": ("control", 0)}, "treatment")
    assert s.files == ["/a"] and list(s.maps) == [1]
    assert s.rate("node_locality") == 1.0 and s.rate("map_s") == pytest.approx(1.0)
    before = per_file_sums(maps, {"/a": ("treatment", 250)}, "treatment", after=False)
    assert before.rate("delay_wait_s") == 4.0
    c = per_file_sums(maps, {"/a": ("treatment", 250), "/b": ("control", 0)}, "control")
    assert list(c.maps) == [1] and c.rate("map_s") is None  # /b's map has not finished
