"""Issue 43's policy candidates against the current default, paired by seed.

Reads DIR/sim-matrix-runs.json (written by ``run_sim_matrix.py --results-dir DIR``) and writes
DIR/candidates.md: per setup and variant, the captured share of the oracle's response gain
(static - variant) / (static - oracle) with its 95% t-interval over seeds, the paired difference
of that share against the current default (``dsbra``), the paired relative response difference
against ``dsbra`` and against ``static`` (never-worse-than-static check), node locality and its
paired difference against ``dsbra`` (points), mean extra storage, replicas added and churn
(``raised_after_lowering``: copies started for a block that lost a replica earlier).

    .venv/bin/python benchmarks/sim_candidates_report.py benchmarks/results/sim-policy-candidates
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from dsbra.stats import captured_share, t_interval

REFERENCES = ("static", "oracle", "oracle-reactive")
DEFAULT = "dsbra"


def _ci(xs, k=1.0, digits=1) -> str:
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    ci = t_interval(xs)
    if ci is None:
        return f"{k * xs[0]:.{digits}f}"
    return f"{k * ci[0]:+.{digits}f} [{k * ci[1]:+.{digits}f}, {k * ci[2]:+.{digits}f}]"


def _mean(xs, k=1.0, digits=1) -> str:
    xs = [x for x in xs if x is not None]
    return f"{k * statistics.mean(xs):.{digits}f}" if xs else "-"


def share(s: dict, o: dict, x: dict) -> float | None:
    """The variant's share of the oracle's response gain over static (None without headroom)."""
    return captured_share(s["mean_response_s"], o["mean_response_s"], x["mean_response_s"])


def table(rows: list[dict], setup: str) -> list[str]:
    by = {(r["variant"], r["seed"]): r["summary"] for r in rows if r["setup"] == setup}
    seeds = sorted({seed for (_, seed) in by})
    variants = [v for v in dict.fromkeys(r["variant"] for r in rows if r["setup"] == setup)]
    order = [v for v in REFERENCES if v in variants] + \
        [v for v in variants if v not in REFERENCES]
    lines = [f"## {setup}", "", f"Seeds {seeds}.", "",
             "| variant | captured response share % | - dsbra's share (points, paired) | "
             "response vs dsbra % (paired) | response vs static % (paired) | node locality % | "
             "node locality - dsbra (points, paired) | extra storage mean % | replicas added | "
             "raised after lowering | - dsbra (paired) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for v in order:
        sh, dsh, dresp, sresp, loc, dloc, ext, added, churn, dchurn = ([] for _ in range(10))
        for seed in seeds:
            x, s, o, d = (by.get((name, seed)) for name in (v, "static", "oracle", DEFAULT))
            if x is None:
                continue
            loc.append(x["node_locality"])
            ext.append(x["extra_storage_mean"])
            added.append(x["replicas_added"])
            churn.append(x["raised_after_lowering"])
            if s is not None:
                sresp.append(x["mean_response_s"] / s["mean_response_s"] - 1)
            if s is not None and o is not None:
                sh.append(share(s, o, x))
                if d is not None:
                    a, b = share(s, o, x), share(s, o, d)
                    dsh.append(None if a is None or b is None else a - b)
            if d is not None:
                dresp.append(x["mean_response_s"] / d["mean_response_s"] - 1)
                dloc.append(x["node_locality"] - d["node_locality"])
                dchurn.append(x["raised_after_lowering"] - d["raised_after_lowering"])
        lines.append("| " + " | ".join([
            v, _ci(sh, 100, 0), _ci(dsh, 100, 1), _ci(dresp, 100, 1), _ci(sresp, 100, 1),
            _mean(loc, 100), _ci(dloc, 100, 1), _mean(ext, 100, 2), _mean(added, 1, 0),
            _mean(churn, 1, 1), _ci(dchurn, 1, 1)]) + " |")
    return lines + [""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", type=Path)
    args = ap.parse_args()
    rows = json.loads((args.results_dir / "sim-matrix-runs.json").read_text())
    commands = sorted({r["command"] for r in rows})
    setups = list(dict.fromkeys(r["setup"] for r in rows))
    lines = ["# Issue 43's policy candidates in the simulator (YARN binding)", "",
             "Rows produced by " + "; ".join(f"`{c}`" for c in commands) + "; this table by "
             f"`python benchmarks/sim_candidates_report.py {args.results_dir}`. Binding `yarn-mr` "
             "(the setups' default). Intervals are 95% t-intervals over seeds, paired by seed "
             "(each seed's variant against the same seed's static, oracle and dsbra). Captured "
             "share = (static - variant) / (static - oracle) of mean job response; a seed whose "
             "oracle gap is under 0.5% of static's response gives no share. `dsbra` is the "
             "profile `adaptive`, the default until 2026-12-02; `dsbra-hold` is "
             "`adaptive-hold`, the default since.", ""]
    for setup in setups:
        lines += table(rows, setup)
    (args.results_dir / "candidates.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
