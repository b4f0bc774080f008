"""The matrix's setups under the Spark binding beside the YARN binding (issue 69), paired by seed.

Reads the result sets of ``run_sim_matrix.py --binding spark --results-dir DIR`` (``--spark``,
one per application mode) and of the YARN binding (``--yarn``, searched in the order given) and
writes OUT/spark-matrix.md and OUT/spark-matrix.json: per application mode, setup and variant,
the mean response, node locality, the captured share of the oracle's response gain (static -
variant) / (static - oracle) with its 95% t-interval over seeds (each seed's share against that
seed's static and oracle: dsbra.stats.captured_share), mean and max extra storage; beside it the
same variant's share under the YARN binding, from the first YARN set holding the most of the
Spark seeds (static, oracle and the variant; the seeds it lacks are named), and the paired
difference Spark - YARN over the seeds both have; each policy's share minus the default's
(``dsbra-hold``), paired by seed. Per setup and mode, the policy (not an oracle) with the
largest mean share.

    python benchmarks/sim_spark_matrix_report.py \\
        --spark benchmarks/results/sim-spark-matrix/per-job benchmarks/results/sim-spark-matrix/shared \\
        --yarn benchmarks/results/sim-hold/seeds10 benchmarks/results \\
        --out benchmarks/results/sim-spark-matrix
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from dsbra.stats import captured_share, t_interval

ORACLES = ("oracle", "oracle-reactive")
DEFAULT = "dsbra-hold"


def load(result_set: Path) -> list[dict]:
    rows_file = result_set / "sim-matrix-runs.json"
    if not rows_file.is_file():
        sys.exit(f"sim_spark_matrix_report.py: error: no {rows_file} (a run_sim_matrix.py "
                 "--results-dir)")
    return json.loads(rows_file.read_text())


def by_seed(rows: list[dict], setup: str) -> dict[tuple[str, int], dict]:
    return {(r["variant"], r["seed"]): r["summary"] for r in rows if r["setup"] == setup}


def shares(by: dict, variant: str, seeds: list[int]) -> dict[int, float]:
    """Each seed's captured share of the variant (seeds without static, oracle or headroom
    left out)."""
    out = {}
    for seed in seeds:
        s, o, x = (by.get((v, seed)) for v in ("static", "oracle", variant))
        if s is None or o is None or x is None:
            continue
        got = captured_share(s["mean_response_s"], o["mean_response_s"], x["mean_response_s"])
        if got is not None:
            out[seed] = got
    return out


def interval(values: list[float]) -> dict | None:
    """Mean, 95% t-interval (None under two values) and count, in percent."""
    if not values:
        return None
    ci = t_interval(values)
    mean, low, high = (100 * v for v in ci) if ci else (100 * values[0], None, None)
    return {"mean": mean, "low": low, "high": high, "n": len(values)}


def yarn_record(yarn_sets: list[tuple[Path, list[dict]]], setup: str, variant: str,
                spark: dict[int, float]) -> dict:
    """The variant under the YARN binding from the set holding it on most of the Spark seeds
    (the first such in the order given): its shares, its mean extra storage and the oracle's
    gain over those seeds, the seeds it lacks, and Spark - YARN paired by seed."""
    source, yarn, by = None, {}, {}
    for path, rows in yarn_sets:
        got = shares(by_seed(rows, setup), variant, sorted(spark))
        if len(got) > len(yarn):
            source, yarn, by = str(path), got, by_seed(rows, setup)
    return {"source": source, "missing_seeds": [s for s in sorted(spark) if s not in yarn],
            "share": interval(list(yarn.values())),
            "extra_storage_mean": 100 * statistics.fmean(
                by[(variant, s)]["extra_storage_mean"] for s in yarn) if yarn else None,
            "oracle_gain": interval([1 - by[("oracle", s)]["mean_response_s"]
                                     / by[("static", s)]["mean_response_s"] for s in yarn]),
            "spark_minus_yarn": interval([spark[s] - yarn[s] for s in spark if s in yarn])}


def summarise(spark_rows: list[dict], yarn_sets: list[tuple[Path, list[dict]]]) -> list[dict]:
    """One record per setup and variant of a Spark result set."""
    records = []
    for setup in dict.fromkeys(r["setup"] for r in spark_rows):
        by = by_seed(spark_rows, setup)
        seeds = sorted({seed for (v, seed) in by if v == "static"})
        gains = [1 - by[("oracle", s)]["mean_response_s"] / by[("static", s)]["mean_response_s"]
                 for s in seeds if ("oracle", s) in by]
        default = shares(by, DEFAULT, seeds)
        for variant in dict.fromkeys(r["variant"] for r in spark_rows if r["setup"] == setup):
            runs = [by[(variant, s)] for s in seeds if (variant, s) in by]
            spark = shares(by, variant, seeds)
            policy = variant not in ("static", DEFAULT) + ORACLES
            record = {
                "setup": setup, "variant": variant, "seeds": [s for s in seeds if (variant, s) in by],
                "oracle_gain": interval(gains),
                "mean_response_s": statistics.fmean(x["mean_response_s"] for x in runs),
                "node_locality": 100 * statistics.fmean(x["node_locality"] for x in runs),
                "extra_storage_mean": 100 * statistics.fmean(x["extra_storage_mean"] for x in runs),
                "extra_storage_max": 100 * max(x["extra_storage_max"] for x in runs),
                "share": interval(list(spark.values())), "yarn": None,
                "minus_default": interval([spark[s] - default[s] for s in spark if s in default])
                if policy else None}
            if variant not in ("static", "oracle"):
                record["yarn"] = yarn_record(yarn_sets, setup, variant, spark)
            records.append(record)
    return records


def best_profile(records: list[dict]) -> list[dict]:
    """Per setup, the policy with the largest mean share and its paired difference from the
    default (None for the default itself)."""
    out = []
    for setup in dict.fromkeys(r["setup"] for r in records):
        policies = [r for r in records if r["setup"] == setup and r["share"]
                    and r["variant"] not in ("static",) + ORACLES]
        if policies:
            best = max(policies, key=lambda r: r["share"]["mean"])
            out.append({"setup": setup, "best": best["variant"],
                        "best_minus_default": best["minus_default"]})
    return out


def cell(ci: dict | None, digits: int = 0, unit: str = "") -> str:
    if ci is None:
        return "-"
    if ci["low"] is None:
        return f"{ci['mean']:.{digits}f}{unit} (1 seed)"
    return f"{ci['mean']:.{digits}f} [{ci['low']:.{digits}f}, {ci['high']:.{digits}f}]{unit}"


def yarn_cell(y: dict | None) -> str:
    if y is None or y["share"] is None:
        return "none for these seeds"
    lacks = f"; lacks seeds {y['missing_seeds']}" if y["missing_seeds"] else ""
    return (f"{cell(y['share'])} at {y['extra_storage_mean']:.2f}% storage (n = "
            f"{y['share']['n']}, {y['source']}{lacks})")


def markdown(app: str, records: list[dict], best: list[dict]) -> list[str]:
    lines = [f"## Application {app}", ""]
    for setup in dict.fromkeys(r["setup"] for r in records):
        sel = [r for r in records if r["setup"] == setup]
        gain = sel[0]["oracle_gain"]
        yarn = next((r["yarn"] for r in sel if r["yarn"] and r["yarn"]["share"]), None)
        lines += [f"### {setup} ({app})", "",
                  f"Seeds {sel[0]['seeds']}; the oracle gains {cell(gain, 1, '%')} of static's mean "
                  "response" + (f" (under YARN {cell(yarn['oracle_gain'], 1, '%')}, {yarn['source']})"
                                if yarn else "") + ".", "",
                  "| variant | mean response s | node locality % | captured share %, Spark | "
                  f"share - {DEFAULT}'s, points (paired) | extra storage mean % (max) | "
                  "captured share %, YARN (storage, seeds, source) | Spark - YARN, points "
                  "(paired) |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in sel:
            y = r["yarn"]
            lines.append(
                f"| {r['variant']} | {r['mean_response_s']:.1f} | {r['node_locality']:.1f} | "
                f"{cell(r['share'])} | {cell(r['minus_default'])} | "
                f"{r['extra_storage_mean']:.2f} ({r['extra_storage_max']:.2f})"
                f" | {'-' if y is None else yarn_cell(y)} | "
                f"{'-' if y is None else cell(y['spark_minus_yarn'])} |")
        for b in best:
            if b["setup"] == setup:
                lines += ["", f"Largest mean share among the policies: `{b['best']}`"
                          + (" (the default)." if b["best"] == DEFAULT else
                             f", {cell(b['best_minus_default'], 1)} points above the "
                             f"default's (paired).")]
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spark", type=Path, nargs="+", required=True,
                    help="run_sim_matrix.py --binding spark result sets, one per application mode")
    ap.add_argument("--yarn", type=Path, nargs="*", default=[],
                    help="YARN-binding result sets to take the same variants' shares from")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    command = "python benchmarks/sim_spark_matrix_report.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    yarn_sets = [(p, [r for r in load(p) if not r.get("spark_app")]) for p in a.yarn]
    report = {"command": command, "apps": {}}
    lines = ["# The matrix under the Spark binding, beside the YARN binding (issue 69)", "",
             f"`{command}`; runs by " + "; ".join(
                 f"`{c}`" for p in a.spark for c in sorted({r["command"] for r in load(p)})) + ".",
             "", "Captured share = (static - variant) / (static - oracle) of the mean job "
             "response, per seed, mean [95% t-interval] over seeds; a seed whose oracle gap is "
             "under 0.5% of static's gives none. YARN: the same variant and seeds from a "
             "YARN-binding result set (its source and any seeds it lacks named); Spark - YARN: "
             "paired by seed (the same placement and schedule, the other binding). Extra storage: "
             "mean over the policy rounds, in percent of the base bytes.", ""]
    for path in a.spark:
        rows = load(path)
        apps = {r.get("spark_app") for r in rows}
        if len(apps) != 1 or None in apps:
            ap.error(f"{path} is not one Spark result set (spark apps {sorted(map(str, apps))})")
        app = apps.pop()
        records = summarise(rows, yarn_sets)
        best = best_profile(records)
        report["apps"][app] = {"result_set": str(path), "records": records, "best": best}
        lines += markdown(app, records, best)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "spark-matrix.json").write_text(json.dumps(report, indent=1) + "\n")
    (a.out / "spark-matrix.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
