"""The demo's before/after chart (dsbra.demo.write_chart), drawn from its summary document.

No demo summary is committed (each `make demo` writes its own to .dsbra/cluster), so the
documents here have the shape dsbra.demo.demo writes, with round numbers in its rows: the test
checks what is drawn (both files, the SVG well formed, every axis and phase labelled), not a
measurement. tests/integration/test_demo.py checks the chart of a real demo run.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from dsbra.demo import JOBS, write_chart

SVG = "{http://www.w3.org/2000/svg}"


def _rows(local: int, wait_s: float, seconds: float) -> list[dict]:
    """One row per job, as dsbra.demo._replay makes them (the hot file read four times)."""
    return [{"job": f"job_1_{i:04d}", "local": local, "maps": 4, "wait_s": wait_s,
             "seconds": seconds} for i in range(1, JOBS + 1)]


def _summary(raised: bool) -> dict:
    return {"hot": "/demo/in/hot.txt", "workers": 4, "raised": raised, "lowered": raised,
            "before": _rows(2, 40.0, 50.0), "before_batches": 1, "raised_to": 3 if raised else 1,
            "after": _rows(4, 0.0, 30.0) if raised else [], "final_replication": 1,
            "journal": {"changes": 2 if raised else 0, "done": 2 if raised else 0}}


def _texts(svg) -> str:
    return " ".join("".join(t.itertext()) for t in ET.parse(svg).iter(f"{SVG}text"))


def test_the_chart_shows_each_job_before_and_after_as_png_and_svg(tmp_path):
    png, svg = write_chart(_summary(raised=True), tmp_path / "demo-chart")
    assert (png.name, svg.name) == ("demo-chart.png", "demo-chart.svg")
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 10_000
    texts = _texts(svg)
    for label in ("hot file's maps node-local, of 4", "their summed wait, s", "job response, s",
                  "before (replication 1)", "after (raised to 3)",
                  "dsbra demo: /demo/in/hot.txt on 4 workers, raised to 3, left at 1"):
        assert label in texts, texts
    assert texts.count("job") >= 3  # each panel's x axis
    # two bars per job in each of the three panels
    bars = [p for p in ET.parse(svg).iter(f"{SVG}g") if p.get("id", "").startswith("patch_")]
    assert len(bars) >= 3 * 2 * JOBS


def test_a_demo_whose_daemon_did_not_raise_the_file_draws_the_jobs_before(tmp_path):
    png, svg = write_chart(_summary(raised=False), tmp_path / "demo-chart")
    texts = _texts(svg)
    assert "before (replication 1)" in texts and "after" not in texts
    assert "not raised, left at 1" in texts and png.stat().st_size > 0
