"""benchmarks/sim_spark_matrix_report.py: the captured shares of a Spark result set, paired by
seed, beside the YARN set holding the most of its seeds."""

from __future__ import annotations

import json

import pytest
from repo_scripts import load_script

report = load_script("benchmarks/sim_spark_matrix_report.py")

RESPONSE = {"static": 100.0, "oracle": 60.0, "dsbra-hold": 80.0, "scarlett": 90.0}


def rows(seeds, scale=1.0, spark_app=None, drop=()):
    out = []
    for seed in seeds:
        for variant, response in RESPONSE.items():
            if (variant, seed) in drop:
                continue
            # the policies gain a little more on later seeds, static and oracle do not move
            r = response - (seed - 100) * scale * (variant not in ("static", "oracle"))
            out.append({"setup": "hotspot-stress", "variant": variant, "seed": seed,
                        "command": "cmd", "summary": {
                            "mean_response_s": r, "node_locality": 0.5,
                            "extra_storage_mean": 0.01, "extra_storage_max": 0.02},
                        **({"spark_app": spark_app} if spark_app else {})})
    return out


def write(path, data):
    path.mkdir()
    (path / "sim-matrix-runs.json").write_text(json.dumps(data))
    return path


def test_shares_are_paired_by_seed_beside_the_yarn_set_with_most_seeds(tmp_path):
    spark = write(tmp_path / "spark", rows([100, 101, 102], spark_app="per-job"))
    few = write(tmp_path / "few", rows([100], scale=0.0))
    most = write(tmp_path / "most", rows([100, 101, 102], scale=0.0,
                                         drop={("scarlett", 102)}))
    report.main(["--spark", str(spark), "--yarn", str(few), str(most), "--out", str(tmp_path)])
    out = json.loads((tmp_path / "spark-matrix.json").read_text())["apps"]["per-job"]
    by = {r["variant"]: r for r in out["records"]}
    # dsbra-hold: 20/40, 21/40, 22/40 under Spark; 20/40 on every seed under YARN
    assert by["dsbra-hold"]["share"]["mean"] == pytest.approx(52.5)
    assert by["dsbra-hold"]["yarn"]["source"] == str(most)
    assert by["dsbra-hold"]["yarn"]["share"]["mean"] == pytest.approx(50.0)
    assert by["dsbra-hold"]["yarn"]["spark_minus_yarn"]["mean"] == pytest.approx(2.5)
    assert by["scarlett"]["yarn"]["missing_seeds"] == [102]
    assert by["static"]["yarn"] is None and by["oracle"]["share"]["mean"] == 100.0
    # scarlett: 10/40, 11/40, 12/40, each a quarter of the oracle's gap below dsbra-hold
    assert by["scarlett"]["minus_default"]["mean"] == pytest.approx(-25.0)
    assert by["dsbra-hold"]["minus_default"] is None
    assert out["best"] == [{"setup": "hotspot-stress", "best": "dsbra-hold",
                            "best_minus_default": None}]
    assert "lacks seeds [102]" in (tmp_path / "spark-matrix.md").read_text()


def test_a_yarn_set_is_not_taken_for_spark(tmp_path):
    yarn = write(tmp_path / "yarn", rows([100, 101]))
    with pytest.raises(SystemExit):
        report.main(["--spark", str(yarn), "--out", str(tmp_path)])
