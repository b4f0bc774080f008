"""Issue 68's targets for a new default replication rule, checked on paired simulator runs: not
worse than static on every setup and scale (mean response, paired by seed), extra storage within
5 points; the comparison with the current default beside them. Pure: run rows in, table rows
and markdown out (benchmarks/sim_demand_live.py writes them).

A run row: ``setup``, ``variant``, ``seed``, ``mean_response_s``, ``node_locality`` (%) and
``extra_storage_mean`` (%)."""

from __future__ import annotations

import statistics

from dsbra.stats import t_interval

#: issue 68: a new default's mean extra storage, percent of the base data set
STORAGE_TARGET_PCT = 5.0
REFERENCE = "static"
DEFAULT = "dsbra-hold"


def matrix_rows(runs: list[dict], setups: tuple[str, ...]) -> list[dict]:
    """run_sim_matrix.py's rows (sim-matrix-runs.json) of ``setups`` as run rows (its fractions
    in percent)."""
    return [{"setup": r["setup"], "variant": r["variant"], "seed": r["seed"],
             "mean_response_s": r["summary"]["mean_response_s"],
             "node_locality": 100 * r["summary"]["node_locality"],
             "extra_storage_mean": 100 * r["summary"]["extra_storage_mean"]}
            for r in runs if r["setup"] in setups]


def _paired(by: dict, variant: str, base: str, seeds: list[int], diff) -> tuple | None:
    return t_interval([diff(by[(variant, s)], by[(base, s)]) for s in seeds])


def _relative(key: str):
    return lambda x, b: 100 * (x[key] / b[key] - 1)


def _points(key: str):
    return lambda x, b: x[key] - b[key]


def target_rows(rows: list[dict]) -> list[dict]:
    """Per setup (in the rows' order) and variant other than static: response against static and
    against the default in percent, node locality against static in points (each paired by seed:
    mean, 95% t-interval low and high), mean extra storage, and the two targets. Not worse than
    static: the response interval does not lie above zero (static not shown faster)."""
    out = []
    for setup in dict.fromkeys(r["setup"] for r in rows):
        by = {(r["variant"], r["seed"]): r for r in rows if r["setup"] == setup}
        for variant in dict.fromkeys(r["variant"] for r in rows if r["setup"] == setup):
            if variant == REFERENCE:
                continue
            seeds = sorted(s for v, s in by if v == variant and (REFERENCE, s) in by)
            vs_static = _paired(by, variant, REFERENCE, seeds, _relative("mean_response_s"))
            vs_default = None
            if variant != DEFAULT:
                vs_default = _paired(by, variant, DEFAULT, [s for s in seeds if (DEFAULT, s) in by],
                                     _relative("mean_response_s"))
            storage = statistics.fmean(by[(variant, s)]["extra_storage_mean"] for s in seeds)
            out.append({"setup": setup, "variant": variant, "seeds": len(seeds),
                        "response_vs_static_pct": vs_static, "response_vs_default_pct": vs_default,
                        "node_locality_vs_static_points": _paired(by, variant, REFERENCE, seeds,
                                                                  _points("node_locality")),
                        "extra_storage_mean_pct": storage,
                        "not_worse_than_static": vs_static is not None and vs_static[1] <= 0,
                        "storage_within_target": storage <= STORAGE_TARGET_PCT})
    return out


def verdicts(table: list[dict]) -> dict[str, dict]:
    """Per variant: whether it meets both targets on every setup it ran on, and the setups
    where it misses each."""
    out = {}
    for variant in dict.fromkeys(t["variant"] for t in table):
        mine = [t for t in table if t["variant"] == variant]
        slower = [t["setup"] for t in mine if not t["not_worse_than_static"]]
        storage = [t["setup"] for t in mine if not t["storage_within_target"]]
        out[variant] = {"meets_every_target": not slower and not storage,
                        "worse_than_static_on": slower, "storage_over_target_on": storage}
    return out


def _ci(ci: tuple | None, digits: int = 1) -> str:
    return "-" if ci is None else "{:+.{d}f} [{:+.{d}f}, {:+.{d}f}]".format(*ci, d=digits)


def markdown_table(table: list[dict]) -> list[str]:
    """The target table's markdown lines; a target missed in bold."""
    lines = ["| setup | variant | seeds | response vs static % | response vs dsbra-hold % | "
             "node locality vs static, points | extra storage mean % | not worse than static | "
             f"storage <= {STORAGE_TARGET_PCT:g}% |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for t in table:
        lines.append(
            f"| {t['setup']} | {t['variant']} | {t['seeds']} | {_ci(t['response_vs_static_pct'], 2)} "
            f"| {_ci(t['response_vs_default_pct'], 2)} | {_ci(t['node_locality_vs_static_points'])} "
            f"| {t['extra_storage_mean_pct']:.2f} | "
            + ("yes" if t["not_worse_than_static"] else "**no**") + " | "
            + ("yes" if t["storage_within_target"] else "**no**") + " |")
    return lines
