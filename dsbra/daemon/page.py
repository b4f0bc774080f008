"""The daemon's status page (``/``): what it watches, what it decided and why, what it holds.

Server-rendered HTML from the state the daemon already keeps (the status document it writes
each round, its journal), so a stopped daemon's state dir renders the same page (`dsbra status
--html`). No script and no build step: the page refreshes itself with a meta tag, its charts
are inline SVG, and every link is relative, so it works behind the reverse proxies operators
put in front of Hadoop's web UIs. Read-only: nothing on it changes the daemon. It speaks in an
operator's units: "open for 7 d 18 h", "1 file".
"""

from __future__ import annotations

import html
import time
from itertools import groupby
from pathlib import Path

from dsbra.act.journal import CANCELLED, DONE, FAILED, OPEN, SENT, replay_jsonl
from dsbra.experiment.assignment import SWITCHBACK_FILE

#: journal ops that end an action
_CLOSED = (DONE, CANCELLED, FAILED)
#: replication changes drawn per file (the latest ones)
_CHART_POINTS = 50
#: a duration's units, largest first
_UNITS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


def read_journal(path: Path) -> list[dict]:
    """The journal's records, as the daemon replays them at start (a torn last line left out)."""
    records: list[dict] = []
    replay_jsonl(path, "journal", records.append)
    return records


def experiment_estimate(state_dir: Path) -> dict | None:
    """The experiment's read-out (`dsbra impact`) of ``state_dir``; None while there
    is none (no file decided, or no map of one recorded yet) or the records cannot be read
    (a round writing them): the page says so instead."""
    from pyarrow import ArrowException

    from dsbra.errors import DsbraError
    from dsbra.experiment.impact import impact

    try:
        if (state_dir / SWITCHBACK_FILE).is_file():
            from dsbra.experiment.switchback import read_out

            return read_out([state_dir])
        return impact(state_dir)
    except (DsbraError, OSError, ArrowException):
        return None


def raise_effects(state_dir: Path, journal: list[dict]) -> list[dict]:
    """Per file the daemon raised, its maps before its first raise was sent and since (the
    demo's before/after, for a live daemon): how many, the share that ran on a node holding a
    replica, their mean wait for locality. From the map records the daemon keeps
    (``map_records``, as `dsbra impact` reads them); [] when none can be read."""
    from pyarrow import ArrowException

    from dsbra.experiment.impact import per_file_sums
    from dsbra.experiment.records import MAPS_DIR, read_map_records

    first = {path: f["steps"][1][0] for path, f in file_histories(journal).items()
             if f["steps"][1][1] > f["base"]}
    if not first:
        return []
    try:
        maps = read_map_records(state_dir / MAPS_DIR)
    except (OSError, ArrowException):
        return []
    raised = {path: ("raised", int(ts * 1000)) for path, ts in first.items()}
    out = [{"file": path, "raised_s": first[path]} for path in sorted(first)]
    for after in (False, True):
        sums = per_file_sums(maps, raised, "raised", after=after)
        for row, n, local, wait in zip(out, sums.maps, sums.sums["node_locality"],
                                       sums.sums["delay_wait_s"]):
            row["after" if after else "before"] = {
                "maps": int(n), "node_local": float(local / n) if n else None,
                "mean_wait_s": float(wait / n) if n else None}
    return out


def file_histories(journal: list[dict]) -> dict[str, dict]:
    """Per file the daemon changed: its base, its replication now (the last change sent) and
    the changes sent, as (epoch s, replication) steps starting from the first ``before``."""
    intents = {r["id"]: r for r in journal if r.get("op") == OPEN}
    files: dict[str, dict] = {}
    for r in journal:
        if r.get("op") != SENT or r.get("id") not in intents:
            continue
        i = intents[r["id"]]
        f = files.setdefault(i["path"], {"base": i["base"], "steps": [(i["ts"], i["before"])]})
        f["steps"].append((r["ts"], i["target"]))
        f["now"] = i["target"]
    return files


def open_intents(journal: list[dict]) -> list[dict]:
    """Changes not closed yet (decided, or sent and not confirmed by the NameNode)."""
    last: dict[int, str] = {}
    for r in journal:
        if "id" in r:
            last[r["id"]] = r["op"]
    return [r for r in journal if r.get("op") == OPEN and last[r["id"]] not in _CLOSED]


def _e(value) -> str:
    return html.escape(str(value))


def _num(value) -> str:
    """A measured value for the page: three significant digits, '-' for none."""
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else _e(value)


def _when(epoch_s: float | None) -> str:
    return "-" if epoch_s is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch_s))


def duration(seconds: float | None) -> str:
    """``7 d 18 h``, ``1 min 5 s``, ``45 s``: its largest unit and the next, what an operator
    reads at a glance (``humanize`` spells the units out, too wide for the page's tables);
    '-' for none."""
    if seconds is None:
        return "-"
    left = max(round(seconds), 0)
    for k, (unit, size) in enumerate(_UNITS):
        if left >= size or unit == "s":
            out = f"{left // size} {unit}"
            if unit != "s":
                minor, minor_size = _UNITS[k + 1]
                if left % size >= minor_size:
                    out += f" {left % size // minor_size} {minor}"
            return out


def count(n: int, noun: str) -> str:
    """``1 file``, ``2 files``: every noun the page counts takes an s."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _step_chart(steps: list[tuple[float, int]], base: int, now_s: float) -> str:
    """Replication over time as an inline SVG step line, base dashed."""
    steps = steps[-_CHART_POINTS:] + [(now_s, steps[-1][1])]
    t0, t1 = steps[0][0], max(steps[-1][0], steps[0][0] + 1)
    top = max(max(v for _, v in steps), base) + 1
    w, h = 240, 48

    def x(t):
        return round(4 + (w - 8) * (t - t0) / (t1 - t0), 1)

    def y(v):
        return round(h - 4 - (h - 8) * v / top, 1)

    points = []
    for (t, v), (t_next, _) in zip(steps, steps[1:] + [steps[-1]]):
        points += [f"{x(t)},{y(v)}", f"{x(t_next)},{y(v)}"]
    return (f'<svg class="chart" width="{w}" height="{h}" role="img" aria-label="replication '
            f'over time">'
            f'<line x1="4" x2="{w - 4}" y1="{y(base)}" y2="{y(base)}" class="base"/>'
            f'<polyline points="{" ".join(points)}" class="line"/></svg>')


def _scheduler(status: dict) -> str:
    s = status.get("scheduler")
    if not s:
        return "<p>Scheduler: not read yet (no round has reached the ResourceManager).</p>"
    delay = (f"delay scheduling on, D = {s['delay_threshold_s']:.1f} s ({_e(s['delay_source'])})"
             if s["delay_scheduling"] else "delay scheduling off")
    out = f"<p>Scheduler: <b>{_e(s['name'])}</b>, {delay}, {count(s['nodes'], 'node')}.</p>"
    if s.get("refusal"):
        out += f'<p class="bad">{_e(s["refusal"])}</p>'
    return out


def _decision(d: dict) -> str:
    reason = d.get("reason") or {}
    pressure = " ".join(f"{k}={_num(float(reason[k]))}" for k in ("rf", "gavg")
                        if isinstance(reason.get(k), (int, float)))
    status = "" if d.get("status") in (None, "ok") else f" <i>rails: {_e(d['status'])}</i>"
    return (f"{_e(d['file'])} {_e(d['current'])}&rarr;{_e(d['target'])} "
            f"({_e(reason.get('rule', '?'))} {pressure}) {_e(d.get('outcome', ''))}{status}")


def _rounds(status: dict) -> str:
    rounds = status.get("recent_rounds") or ([status["last_round"]] if status.get("last_round") else [])
    if not rounds:
        return "<p>No round has ended yet.</p>"
    return _trend(rounds) + _round_table(rounds)


def _round_table(rounds: list[dict]) -> str:
    rows = []
    for r in reversed(rounds):
        if r.get("skipped"):
            what = f'<span class="bad">skipped: {_e(r["skipped"])}</span>'
        else:
            parts = [_decision(d) for d in r.get("decisions", [])]
            parts += [f'<span class="bad">refused: {_e(x)}</span>' for x in r.get("refusals", [])]
            what = "<br>".join(parts) or "nothing to change"
        end, gavg = r.get("window_end_ms"), r.get("gavg")
        cells = [_num(r.get("round")), _when(end / 1000) if end else "-", _num(r.get("map_tasks")),
                 _engines(r.get("engines")), _num(r.get("blocks")),
                 _num(None if gavg is None else float(gavg))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f"<td>{what}</td></tr>")
    return ("<table><tr><th>round</th><th>window end</th><th>tasks</th><th>by engine: delayed of "
            "tasks</th><th>blocks</th><th>GAvg</th><th>decided, and why</th></tr>" + "".join(rows)
            + "</table>")


def _fast_poll(status: dict) -> str:
    """The fast poll's last decisions (demand.enabled), newest first; nothing without it."""
    fast = status.get("fast_poll")
    if not fast:
        return ""
    held = fast.get("held") or []
    held = held if len(held) <= 10 else held[:10] + [f"and {len(held) - 10} more"]
    out = (f"<h2>Fast poll</h2><p>Every {_num(fast.get('poll_s'))} s; at the last, "
           f"{_num(fast.get('pending_maps'))} maps waiting for a container. Files it raised and "
           f"alone lowers: {_e(', '.join(held)) or 'none'}.</p>")
    rows = [f"<tr><td>{_when(d['at_ms'] / 1000)}</td><td>{_num(d.get('due'))}</td>"
            f"<td>{_num(d.get('servable'))}</td><td>{_decision(d)}</td></tr>"
            for d in reversed(fast.get("recent_decisions") or [])]
    if not rows:
        return out + "<p>No decision yet.</p>"
    return out + ("<table><tr><th>when</th><th>maps due within D</th><th>its holders serve</th>"
                  "<th>decided, and why</th></tr>" + "".join(rows) + "</table>")


def locality_trend(rounds: list[dict]) -> list[tuple[dict, float, float] | None]:
    """Per round: the share of its window's tasks (every engine's) that ran node-local and
    their mean wait for locality (s); None for a round that saw no task, or skipped."""
    out: list[tuple[dict, float, float] | None] = []
    for r in rounds:
        counts = (r.get("engines") or {}).values()
        tasks = sum(c["tasks"] for c in counts)
        out.append((r, sum(c["node_local_tasks"] for c in counts) / tasks,
                    sum(c["locality_wait_s"] for c in counts) / tasks) if tasks else None)
    return out


def _trend(rounds: list[dict]) -> str:
    """The last rounds' node locality (blue, 0-100%) and mean wait for locality (orange, 0 to
    the highest) as an inline SVG, a gap where a round saw no task; each point's title says
    its round and numbers (the browser shows it on hover, no script)."""
    points = locality_trend(rounds)
    drawn = [(i, p) for i, p in enumerate(points) if p is not None]
    if len(drawn) < 2:
        return "<p>No trend yet: fewer than two of the last rounds counted their tasks' locality.</p>"
    w, h, pad_left, pad_right, pad_top, pad_bottom = 520, 150, 44, 56, 10, 30
    top_wait = max(p[2] for _, p in drawn) or 1.0

    def x(i: int) -> float:
        return round(pad_left + (w - pad_left - pad_right) * i / (len(points) - 1), 1)

    def y(fraction: float) -> float:
        return round(h - pad_bottom - (h - pad_top - pad_bottom) * fraction, 1)

    shapes = []
    for name, height in (("local", lambda p: p[1]), ("wait", lambda p: p[2] / top_wait)):
        for present, run in groupby(enumerate(points), key=lambda ip: ip[1] is not None):
            if present:
                xy = " ".join(f"{x(i)},{y(height(p))}" for i, p in run)
                shapes.append(f'<polyline points="{xy}" class="{name}"/>')
        shapes += [f'<circle cx="{x(i)}" cy="{y(height(p))}" r="3" class="{name}"><title>round '
                   f"{_e(p[0].get('round', '-'))}, window end {_when(p[0]['window_end_ms'] / 1000)}: "
                   f"{p[1]:.0%} of its tasks node-local, mean wait {p[2]:.3g} s</title></circle>"
                   for i, p in drawn]

    def label(x_at, y_at, text, cls="", anchor="start"):
        return f'<text x="{x_at}" y="{y_at}" class="{cls}" text-anchor="{anchor}">{text}</text>'

    def clock(r):
        return time.strftime("%H:%M", time.localtime(r["window_end_ms"] / 1000))

    axes = [f'<line x1="{pad_left}" x2="{w - pad_right}" y1="{y(0)}" y2="{y(0)}" class="axis"/>',
            label(pad_left - 4, y(1) + 4, "100%", "local", "end"),
            label(pad_left - 4, y(0) + 4, "0%", "local", "end"),
            label(w - pad_right + 4, y(1) + 4, f"{top_wait:.3g} s", "wait"),
            label(w - pad_right + 4, y(0) + 4, "0 s", "wait"),
            label(pad_left, h - 8, f"window end {clock(rounds[0])}"),
            label(w - pad_right, h - 8, clock(rounds[-1]), anchor="end")]
    return ('<p>Each round\'s window: the share of its tasks that ran <span class="local">'
            'node-local</span> and their <span class="wait">mean wait for locality</span>.</p>'
            f'<svg class="trend" width="{w}" height="{h}" role="img" aria-label="node locality and '
            f'wait over the last {count(len(rounds), "round")}">{"".join(axes + shapes)}</svg>')


def _engines(engines: dict | None) -> str:
    """``mapreduce 3 of 40<br>spark 12 of 48``: each engine's delayed tasks of its tasks."""
    if not engines:
        return "-"
    return "<br>".join(f"{_e(name)} {_num(c.get('delayed_tasks'))} of {_num(c.get('tasks'))}"
                       for name, c in engines.items())


def _hottest(status: dict) -> str:
    """The last round's blocks of highest RF, with the reads behind it."""
    top = (status.get("last_round") or {}).get("top_hot_files") or []
    if not top:
        return "<p>No block was read in the last round's window.</p>"
    rows = [f"<tr><td>{_e(b['file'])}</td><td>{_e(b['block_id'])}</td><td>{_num(b['rf'])}</td>"
            f"<td>{_num(b['tasks'])}</td><td>{_num(b['delayed_tasks'])}</td></tr>" for b in top]
    return ("<table><tr><th>file</th><th>block</th><th>RF</th><th>maps that read it</th>"
            "<th>of them delayed for locality</th></tr>" + "".join(rows) + "</table>")


def _raised(journal: list[dict], now_s: float) -> str:
    files = {p: f for p, f in file_histories(journal).items() if f["now"] > f["base"]}
    if not files:
        return "<p>No file is above its base replication.</p>"
    rows = [f"<tr><td>{_e(p)}</td><td>{f['base']}</td><td>{f['now']}</td>"
            f"<td>{_when(f['steps'][1][0])}</td><td>{_step_chart(f['steps'], f['base'], now_s)}</td></tr>"
            for p, f in sorted(files.items())]
    return ("<table><tr><th>file</th><th>base</th><th>now</th><th>first raised</th>"
            "<th>replication over time</th></tr>" + "".join(rows) + "</table>")


def _bars(effect: dict) -> str:
    """Before (orange) and since (blue) the raise, side by side: the share of the file's maps
    that ran node-local (0-100%) and their mean wait for locality (0 to the larger of the two);
    each bar's title says its number (the browser shows it on hover)."""
    w, h, bar = 200, 56, 22
    sides = (("before", effect["before"]), ("since", effect["after"]))
    top_wait = max(side["mean_wait_s"] or 0 for _, side in sides) or 1.0
    panels = (("node-local", "node_local", 1.0), ("wait", "mean_wait_s", top_wait))
    shapes = []
    for k, (label, metric, scale) in enumerate(panels):
        for j, (name, side) in enumerate(sides):
            if side[metric] is None:
                continue
            height = round((h - 16) * side[metric] / scale, 1)
            shapes.append(f'<rect x="{8 + k * 100 + j * (bar + 4)}" y="{h - 14 - height}" '
                          f'width="{bar}" height="{height}" class="{name}"><title>{name} the '
                          f'raise: {label} {_share_or_seconds(metric, side[metric])}</title></rect>')
        shapes.append(f'<text x="{8 + k * 100}" y="{h - 2}">{label}</text>')
    return (f'<svg class="bars" width="{w}" height="{h}" role="img" aria-label="node locality and '
            f'wait before and since the raise">{"".join(shapes)}</svg>')


def _share_or_seconds(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0%}" if metric == "node_local" else f"{value:.3g} s"


def _effects(effects: list[dict]) -> str:
    if not effects:
        return "<p>No file raised yet, or no map of one recorded.</p>"

    def cell(side, metric):
        return _share_or_seconds(metric, side[metric])

    rows = [f"<tr><td>{_e(e['file'])}</td><td>{_when(e['raised_s'])}</td>"
            f"<td>{e['before']['maps']} / {e['after']['maps']}</td>"
            f"<td>{cell(e['before'], 'node_local')} &rarr; {cell(e['after'], 'node_local')}</td>"
            f"<td>{cell(e['before'], 'mean_wait_s')} &rarr; {cell(e['after'], 'mean_wait_s')}</td>"
            f"<td>{_bars(e)}</td></tr>" for e in effects]
    return ('<p>Each raised file\'s maps <span class="before">before</span> its first raise and '
            '<span class="since">since</span> (as the demo draws them): a raise that helps shows '
            'more maps node-local and shorter waits. Not a controlled comparison: the jobs differ '
            '(hold files out for one: <code>experiment.holdout</code>).</p>'
            "<table><tr><th>file</th><th>first raised</th><th>maps before / since</th>"
            "<th>node-local</th><th>mean wait for locality</th><th>before and since</th></tr>"
            + "".join(rows) + "</table>")


def _open(journal: list[dict], now_s: float) -> str:
    pending = open_intents(journal)
    if not pending:
        return "<p>None: every change the daemon sent is confirmed by the NameNode.</p>"
    rows = [f"<tr><td>{r['id']}</td><td>{_e(r['path'])}</td><td>{r['before']}&rarr;{r['target']}</td>"
            f"<td>{_e(r.get('round'))}</td><td>{duration(now_s - r['ts'])}</td></tr>" for r in pending]
    return ("<table><tr><th>id</th><th>file</th><th>change</th><th>round</th><th>open for</th></tr>"
            + "".join(rows) + "</table>")


def _switchback(e: dict, estimate: dict | None) -> str:
    sb = e.get("switchback") or {}
    out = (f"<p>Switchback (seed {_e(e.get('seed'))}): periods of {duration(sb.get('period_s'))}, "
           f"the first {duration(sb.get('burn_in_s'))} of each left out; now period "
           f"{_e(sb.get('period'))}, the policy <b>{_e(sb.get('arm'))}</b>"
           + (" (burn-in)" if sb.get("in_burn_in") else "") + ".</p>")
    if estimate is None:
        return out + "<p>No estimate yet: no job or map recorded outside a burn-in.</p>"
    return out + _estimate_table(estimate, "pairs", ("blocks", "on - off (response: relative)"),
                                 lambda v: (v["pairs"], _num(v["diff"])))


def _estimate_table(estimate: dict, key: str, headers: tuple[str, ...], cells) -> str:
    """The verdict and one row per metric of ``estimate`` (its entries holding ``key``): the
    metric, ``cells(entry)`` under ``headers``, and the 95% interval."""
    rows = []
    for metric, v in estimate.items():
        if isinstance(v, dict) and key in v:
            ci = v.get("ci95")
            interval = "-" if ci is None else f"[{_num(ci[0])}, {_num(ci[1])}]"
            rows.append(f"<tr><td>{_e(metric)}</td>" + "".join(f"<td>{c}</td>" for c in cells(v))
                        + f"<td>{interval}</td></tr>")
    return (f"<p>{_e(estimate.get('verdict', ''))}</p><table><tr><th>metric</th>"
            + "".join(f"<th>{h}</th>" for h in headers) + "<th>95% interval</th></tr>"
            + "".join(rows) + "</table>")


def _experiment(status: dict, estimate: dict | None) -> str:
    e = status.get("experiment") or {}
    if e.get("design") == "switchback":
        return _switchback(e, estimate)
    if not e.get("holdout"):
        return "<p>No experiment (experiment.holdout is 0).</p>"
    files = e.get("files") or {}
    out = (f"<p>Holdout {e['holdout']:.0%} (seed {_e(e.get('seed'))}): "
           f"{count(files.get('treatment', 0), 'file')} treated, {files.get('control', 0)} held out.</p>")
    if estimate is None:
        return out + "<p>No estimate yet: no map of a decided file has been recorded since.</p>"
    return out + _estimate_table(estimate, "diff", ("treated", "held out", "difference"),
                                 lambda v: (_num(v["treated"]), _num(v["control"]), _num(v["diff"])))


_STYLE = """body{font:14px/1.4 sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f3f3f3}.bad{color:#b00}
.chart .line{fill:none;stroke:#1565c0;stroke-width:2}.chart .base{stroke:#999;stroke-dasharray:4 3}
.trend polyline{fill:none;stroke-width:2}.trend text{font-size:11px}.trend .axis{stroke:#999}
polyline.local{stroke:#1565c0}polyline.wait{stroke:#e65100}circle.local,text.local{fill:#1565c0}
circle.wait,text.wait{fill:#e65100}span.local{color:#1565c0}span.wait{color:#e65100}
nav a{margin-right:1em}.bars rect.before,span.before{fill:#e65100;color:#e65100}
.bars rect.since,span.since{fill:#1565c0;color:#1565c0}.bars text{font-size:10px}"""


def render(status: dict, journal: list[dict], *, refresh_s: float | None = None,
           estimate: dict | None = None, effects: list[dict] | None = None,
           now_s: float | None = None) -> str:
    """The page, from a status document (/status), the journal's records, the holdout
    experiment's read-out (dsbra.experiment.impact), if any, and the raised files' maps before
    and since their raise (:func:`raise_effects`)."""
    now_s = time.time() if now_s is None else now_s
    state, mode = status.get("state", "?"), status.get("mode", "?")
    last = status.get("last_round") or {}
    why = ""
    if state == "paused":
        why = " &mdash; paused by <code>dsbra pause</code> (resume with <code>dsbra resume</code>)"
    elif mode == "dry-run":
        why = " &mdash; dry run: it decides and logs, and changes nothing"
    cluster = status.get("cluster") or {}
    where = ", ".join(f"{k} {_e(v)}" for k, v in cluster.items() if v) or "not connected yet"
    refresh = f'<meta http-equiv="refresh" content="{refresh_s:g}">' if refresh_s else ""
    rails = [d for d in last.get("decisions", []) if d.get("status") not in (None, "ok")]
    rails_html = ("<p>None in the last round.</p>" if not rails else
                  "<ul>" + "".join(f"<li>{_decision(d)}</li>" for d in rails) + "</ul>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">{refresh}<title>dsbra: {_e(state)}</title>
<style>{_STYLE}</style></head><body>
<h1>dsbra: {_e(state)}, {_e(mode)}{why}</h1>
<nav><a href="status">status (JSON)</a><a href="metrics">metrics</a><a href="heat">heat</a><a href="#raises">before and since each raise</a></nav>
<p>Cluster: {where}. Rounds: {_e(status.get('rounds', 0))}; updated {_when(now_s)}.</p>
{_scheduler(status)}
<h2>Last rounds</h2>{_rounds(status)}
{_fast_poll(status)}
<h2>Hottest blocks of the last round</h2>{_hottest(status)}
<h2>Files above their base replication</h2>{_raised(journal, now_s)}
<h2 id="raises">Before and since each raise</h2>{_effects(effects or [])}
<h2>Open changes</h2>{_open(journal, now_s)}
<h2>Held back by the rails</h2>{rails_html}
<h2>Experiment</h2>{_experiment(status, estimate)}
</body></html>
"""
