"""What `dsbra report` writes of arms of runs (dsbra.report.runs): ``report.md`` and its PNGs,
the DSBRA paper's figures and claims next to what the runs show.

The CDF of job response time, node locality per job-size bin, delay-scheduling wait per bin,
extra storage over time; a table per arm (mean +- standard deviation over its repetitions); the
paper's claims for DSBRA against the Fair Scheduler with delay scheduling (-13% response time,
+7% locality, -17% wait, 22% mean / 27% max extra storage) next to what these runs show; with
an oracle arm, the share of the oracle's gain each arm captures; and each arm against the
baseline paired by repetition (rep<k> of one arm with rep<k> of the baseline, run in the same
sitting one after the other, or seed<k> with seed<k>): the mean paired difference with its 95%
t-interval, and the captured share with its 95% Fieller interval over the repetitions.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import numpy as np

from dsbra.report.runs import BINS, REPETITION, Run, arm_table, find_runs
from dsbra.stats import POWER, fieller_ratio, reps_to_separate, t_interval

PAPER_CLAIMS = {"response": -13.0, "locality": 7.0, "wait": -17.0,
                "storage_mean": 22.0, "storage_max": 27.0}


def _ms(values: list[float] | None, digits: int = 1) -> str:
    """Mean +- standard deviation (just the mean for one value)."""
    if not values:
        return "-"
    m = statistics.fmean(values)
    if len(values) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def _change(table, arm: str, baseline: str, key: str, relative: bool) -> float | None:
    a, b = table.get(arm, {}).get(key), table.get(baseline, {}).get(key)
    if not a or not b:
        return None
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    if relative:
        return 100 * (ma - mb) / mb if mb else None
    return ma - mb


def claims_rows(table, arm: str, baseline: str) -> list[str]:
    """The paper's claims for DSBRA against the Fair Scheduler, next to these runs."""
    def fmt(v, unit):
        return "-" if v is None else f"{v:+.1f}{unit}"

    resp = _change(table, arm, baseline, "mean_response_s", True)
    loc = _change(table, arm, baseline, "node_locality", False)
    wait = _change(table, arm, baseline, "delay_wait_s_per_map", True)
    smean = statistics.fmean(table[arm]["extra_storage_mean"]) if table.get(arm, {}).get(
        "extra_storage_mean") else None
    smax = max(table[arm]["extra_storage_max"]) if table.get(arm, {}).get(
        "extra_storage_max") else None
    return [
        f"| claim ({arm} against {baseline}) | paper | these runs |", "| --- | --- | --- |",
        f"| mean job response time | {PAPER_CLAIMS['response']:+.0f}% | {fmt(resp, '%')} |",
        f"| node locality of maps | {PAPER_CLAIMS['locality']:+.0f} points | "
        f"{fmt(loc, ' points')} |",
        f"| delay-scheduling wait per map | {PAPER_CLAIMS['wait']:+.0f}% | {fmt(wait, '%')} |",
        f"| extra storage, mean | {PAPER_CLAIMS['storage_mean']:.0f}% | "
        f"{'-' if smean is None else f'{smean:.1f}%'} |",
        f"| extra storage, max | {PAPER_CLAIMS['storage_max']:.0f}% | "
        f"{'-' if smax is None else f'{smax:.1f}%'} |",
    ]


#: below this gain of the oracle over the baseline (a fraction of the baseline) a captured
#: share is noise divided by noise, and is not reported
MIN_ORACLE_GAIN = 0.02


def captured(table, arm: str, baseline: str, oracle: str, key: str) -> float | None:
    """(baseline - arm) / (baseline - oracle) on ``key``'s means, in percent; None where the
    oracle gains less than MIN_ORACLE_GAIN."""
    try:
        a, b, o = (statistics.fmean(table[x][key]) for x in (arm, baseline, oracle))
    except (KeyError, statistics.StatisticsError):
        return None
    return 100 * (b - a) / (b - o) if b - o > MIN_ORACLE_GAIN * abs(b) else None


#: the paired comparison's metrics: (key of Run.metrics, column title, relative to the baseline)
PAIRED = (("mean_response_s", "mean response", True), ("node_locality", "node locality, points", False),
          ("delay_wait_s_per_map", "delay wait per map", True),
          ("extra_storage_mean", "extra storage mean, points", False))


def paired(arms: dict[str, list[Run]], arm: str, others: list[str], key: str) -> list[tuple[float, ...]]:
    """``key`` of ``arm`` and of each of ``others`` in every repetition they all ran (by name:
    rep<k> with rep<k>), in repetition order."""
    def by_rep(name: str) -> dict[str, float]:
        return {r.path.name: r.metrics()[key] for r in arms.get(name, []) if REPETITION.match(r.path.name)}

    columns = [by_rep(name) for name in (arm, *others)]
    common = sorted(set.intersection(*(set(c) for c in columns)), key=lambda n: int(re.sub(r"\D", "", n)))
    return [tuple(c[n] for c in columns) for n in common
            if all(c[n] is not None for c in columns)]


def paired_difference(arms, arm: str, baseline: str, key: str, relative: bool):
    """Mean of (arm - baseline) per repetition, in percent of the baseline's mean if
    ``relative``, with its 95% t-interval and the number of pairs; None under two pairs."""
    pairs = paired(arms, arm, [baseline], key)
    ci = t_interval([a - b for a, b in pairs])
    if ci is None:
        return None
    scale = 100 / statistics.fmean(b for _, b in pairs) if relative else 1.0
    return tuple(x * scale for x in ci) + (len(pairs),)


def captured_interval(arms, arm: str, baseline: str, oracle: str, key: str = "mean_response_s"):
    """The captured share of the oracle's gain, mean(baseline - arm) / mean(baseline - oracle)
    over the repetitions all three ran, in percent, with its 95% Fieller interval (bounds None
    where the oracle's own gain is not separated from zero, as 3-6 repetitions easily leave
    it: then no finite interval holds the share); None under three triples or without an
    oracle gain."""
    rows = paired(arms, arm, [baseline, oracle], key)
    if len(rows) < 3:
        return None
    a, b, o = (np.asarray(col, float) for col in zip(*rows))
    if (b - o).mean() <= MIN_ORACLE_GAIN * abs(b.mean()):
        return None
    low, high = (None if v is None else 100 * v for v in fieller_ratio(b - a, b - o))
    return 100 * float((b - a).mean() / (b - o).mean()), low, high, len(rows)


def _captured_cell(cap) -> str:
    if cap is None:
        return "-"
    if cap[1] is None:
        return f"{cap[0]:.0f} (unbounded: the oracle's gain is not separated from 0)"
    return f"{cap[0]:.0f} [{cap[1]:.0f}, {cap[2]:.0f}]"


def paired_rows(arms, baseline: str, oracle: str) -> list[str]:
    """The table of each arm against the baseline, paired by repetition."""
    def fmt(ci, unit: str) -> str:
        return "-" if ci is None else f"{ci[0]:+.1f}{unit} [{ci[1]:+.1f}, {ci[2]:+.1f}]"

    head = (["arm", "pairs"] + [title for _, title, _ in PAIRED] + ["reps to separate response"]
            + (["captured: response %"] if oracle in arms else []))
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for arm in arms:
        if arm == baseline:
            continue
        cells = [paired_difference(arms, arm, baseline, key, rel) for key, _, rel in PAIRED]
        n = max((c[3] for c in cells if c), default=0)
        row = [arm, str(n)] + [fmt(c, "%" if rel else "") for c, (_, _, rel) in zip(cells, PAIRED)]
        need = reps_to_separate([a - b for a, b in paired(arms, arm, [baseline], "mean_response_s")])
        row.append("-" if need is None else str(need))
        if oracle in arms:
            cap = captured_interval(arms, arm, baseline, oracle) if arm != oracle else None
            row.append(_captured_cell(cap))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def daemon_cost_rows(arms: dict[str, list[Run]]) -> list[str]:
    """Per arm that ran a daemon (`bench replay` records its CPU in summary.json): its CPU
    seconds per round and per run, and its share of the machine's CPU over the run."""
    rows = []
    for name, runs in arms.items():
        docs = [json.loads((r.path / "summary.json").read_text()) for r in runs
                if (r.path / "summary.json").exists()]
        docs = [d for d in docs if d.get("daemon_cpu_s") is not None]
        if not docs:
            continue
        per_round = [d["daemon_cpu_s_per_round"] for d in docs if d.get("daemon_cpu_s_per_round")]
        share = [100 * d["daemon_cpu_share"] for d in docs if d.get("daemon_cpu_share") is not None]
        rows.append(f"| {name} | {len(docs)} | {_ms(per_round, 3)} | "
                    f"{_ms([d['daemon_rounds'] for d in docs])} | "
                    f"{_ms([d['daemon_cpu_s'] for d in docs])} | {_ms(share, 2)} |")
    if not rows:
        return []
    return ["## The daemon's own cost", "",
            "CPU seconds (user + system) the daemon process used over each run, from the "
            "kernel's account of the reaped process; per round over its rounds; share: of "
            "the machine's CPUs over the daemon's life.", "",
            "| arm | runs | CPU s per round | rounds | CPU s per run | share of the machine % |",
            "| --- | --- | --- | --- | --- | --- |", *rows, ""]


def plots(arms: dict[str, list[Run]], table, out: Path) -> list[str]:
    """The paper's four figures as PNGs in ``out``; returns their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(arms)
    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for arm in names:
        resp = np.sort(np.concatenate([np.asarray(r.jobs["response_s"], float) for r in arms[arm]]))
        if len(resp):
            ax.step(resp, np.arange(1, len(resp) + 1) / len(resp), where="post", label=arm)
    ax.set(xlabel="job response time, s", ylabel="fraction of jobs", title="CDF of job response time")
    ax.legend(fontsize=7)
    written.append(_save(fig, out / "response-cdf.png"))

    bins = [b for b in BINS if any(f"locality_bin{b}" in table[a] for a in names)]
    for key, ylabel, fname in (("locality_bin", "node-local maps, %", "locality-by-bin.png"),
                               ("delay_bin", "delay-scheduling wait per map, s", "delay-by-bin.png")):
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.8 / max(len(names), 1)
        for i, arm in enumerate(names):
            vals = [statistics.fmean(table[arm].get(f"{key}{b}", [np.nan])) for b in bins]
            ax.bar(np.arange(len(bins)) + i * width, vals, width, label=arm)
        ax.set_xticks(np.arange(len(bins)) + 0.4 - width / 2, [str(b) for b in bins])
        ax.set(xlabel="job-size bin (delay scheduling paper, Table 3)", ylabel=ylabel)
        ax.legend(fontsize=7)
        written.append(_save(fig, out / fname))

    fig, ax = plt.subplots(figsize=(6, 4))
    for arm in names:
        for k, run in enumerate(arms[arm]):
            if len(run.storage_t):
                ax.plot(run.storage_t, 100 * run.storage_extra, lw=1,
                        color=f"C{names.index(arm) % 10}", label=arm if k == 0 else None)
    ax.set(xlabel="time since the schedule's start, s", ylabel="extra storage over base, %",
           title="Extra storage over time")
    ax.legend(fontsize=7)
    written.append(_save(fig, out / "storage-over-time.png"))
    return written


def _save(fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path.name


def render(arms: dict[str, list[Run]], table, *, arm: str, baseline: str, oracle: str,
           sources: list[str], images: list[str]) -> str:
    lines = ["# dsbra report", "",
             f"Runs: {', '.join(sources)}. Arms are directories; `<arm>/seed<k>`, `rep<k>` and "
             "`run<k>` are repetitions of one arm; values are mean ± standard deviation over "
             "them. Locality: share of map tasks node-local. Delay wait: delay-scheduling wait "
             "per map (each map's capped at D). Extra storage: replica bytes over base, sampled "
             "over the run.", "",
             "| arm | runs | jobs | mean response s | node locality % | delay wait s/map | "
             "extra storage mean % | max % |" + (" captured: response % | captured: delay wait % |"
                                                 if oracle in table else ""),
             "| --- | --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- |"
                                                                    if oracle in table else "")]
    for name, per in table.items():
        row = (f"| {name} | {len(arms[name])} | {_ms(per.get('jobs'), 0)} | "
               f"{_ms(per.get('mean_response_s'))} | {_ms(per.get('node_locality'))} | "
               f"{_ms(per.get('delay_wait_s_per_map'), 2)} | "
               f"{_ms(per.get('extra_storage_mean'))} | {_ms(per.get('extra_storage_max'))} |")
        if oracle in table:
            for key in ("mean_response_s", "delay_wait_s_per_map"):
                c = captured(table, name, baseline, oracle, key)
                row += f" {'-' if c is None else f'{c:.0f}'} |"
        lines.append(row)
    lines.append("")
    if baseline in table and len(table) > 1:
        lines += [f"## Against {baseline}, paired by repetition", "",
                  f"Each arm's repetition k minus {baseline}'s repetition k (run in the same sitting), "
                  "mean over the pairs with its 95% t-interval; response and delay wait in percent "
                  f"of {baseline}'s mean, locality and storage in points. Captured: mean({baseline} - "
                  f"arm) / mean({baseline} - {oracle}) on response, 95% Fieller interval over the "
                  "repetitions (not shown under three, or where the oracle gains under "
                  f"{MIN_ORACLE_GAIN:.0%}; unbounded where the oracle's own gain is not separated "
                  "from 0). An interval that spans 0 does not separate the arm "
                  f"from {baseline}. Reps to separate: the repetitions a paired t-test at 5% would "
                  f"need for {POWER:.0%} power on mean response, were the true difference and its "
                  "spread the measured ones.", ""] + paired_rows(arms, baseline, oracle) + [""]
    if arm in table and baseline in table:
        lines += ["## Against the paper's claims", ""] + claims_rows(table, arm, baseline) + [""]
    else:
        lines += [f"(No claims table: it needs the arms `{arm}` and `{baseline}`; "
                  f"found {', '.join(table)}.)", ""]
    lines += daemon_cost_rows(arms)
    lines += ["## Figures", ""] + [f"![{i}]({i})" for i in images] + [""]
    return "\n".join(lines)


def report(paths: list[Path], out: Path, *, arm: str = "dsbra", baseline: str = "static",
           oracle: str = "oracle") -> Path:
    """Write ``out``/report.md and its PNGs; returns the markdown's path."""
    arms = find_runs(paths)
    out.mkdir(parents=True, exist_ok=True)
    table = arm_table(arms)
    images = plots(arms, table, out)
    md = out / "report.md"
    md.write_text(render(arms, table, arm=arm, baseline=baseline, oracle=oracle,
                         sources=[str(p) for p in paths], images=images))
    return md
