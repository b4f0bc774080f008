"""The demo (`make demo`): the whole loop on the bundled cluster.

1. Bring the cluster up (time-based delay scheduling, D = 10 s; a cluster already up is used
   as it is). Write one hot one-block file at replication 1 and six cold ones.
2. Replay grep jobs a few seconds apart (map-only, from one submitter JVM, as `dsbra bench
   replay` runs them), each reading the hot file four times and one cold file, so they queue
   for the one node holding the hot block, while the daemon
   (`dsbra run --apply`, a real process) watches, decides and raises the hot file's
   replication. Print per-job locality of the hot file's maps and response time. Should the
   daemon not have raised it three rounds later, the same jobs again (at most BATCHES in all).
3. Wait for the NameNode to make the copies, replay the same jobs: print the same table.
4. Quiet rounds of the daemon until the hot file is lowered back to its base replication;
   then SIGTERM, and the daemon's decision log lines.

What happened is also written to ``<state dir>/demo-summary.json`` (the tables' rows, the
replication raised to and left at, the journal's changes), which the demo's test reads, and
drawn beside it: ``demo-chart.png`` and ``demo-chart.svg``, per job before and after the raise,
the hot file's node-local maps, their wait and the job's response (:func:`write_chart`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import yaml

from dsbra.act.journal import DONE, Journal
from dsbra.bench.grepjar import cluster_grep_jar
from dsbra.bench.submitter import run_schedule
from dsbra.cluster import cluster as cl
from dsbra.cluster import state as st
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from dsbra.daemon.config import bundled_cluster_section
from dsbra.errors import DsbraError, HadoopError
from dsbra.observe.collector import Collector, Endpoints

DEMO_DIR = "/demo"
#: what the chart shows of each job's row: (key, the panel's axis label; maps: a job's most)
CHART_PANELS = (("local", "hot file's maps node-local, of {maps}"), ("wait_s", "their summed wait, s"),
                ("seconds", "job response, s"))
WORDS = ["delay", "scheduling", "locality", "replica", "dsbra", "hadoop", "block", "rack"]
JOBS, GAP_S, WINDOW_S = 6, 3.0, 20
BATCHES = 3  #: the most batches of the jobs replayed while the daemon has not raised the file
DEMO_SPEC = ClusterSpec(continuous_scheduling=True, locality_delay_node_ms=10_000,
                        locality_delay_rack_ms=10_000)


def _text(seed: int) -> bytes:
    return "".join(f"{WORDS[(seed + j) % len(WORDS)]} line {j}\n" for j in range(2000)).encode()


def _replay(ep, layout, hot: str, cold: list[str], label: str) -> list[dict]:
    """Run the jobs; per job, the hot file's maps node-local / all, their wait for a container
    and the job's response (submission to finish, from the JobHistoryServer)."""
    collector = Collector(ep, since_ms=int(time.time() * 1000))
    data = st.load(layout.state_file)
    jar = cluster_grep_jar(data)
    plan = [(GAP_S * i, f"demo-{label}-{i}", ",".join([hot] * 4 + [cold[i % len(cold)]]),
             f"{DEMO_DIR}/out-{label}-{i}") for i in range(JOBS)]
    jobs = run_schedule(layout, jar, plan, int(time.time() * 1000), collector.poll, timeout_s=600,
                        log_path=layout.root / f"demo-submitter-{label}.log")
    if not all(j.ok for j in jobs):
        raise HadoopError(f"a demo job failed ({[(j.index, j.state, j.error) for j in jobs if not j.ok]}); "
                          f"see {layout.root / f'demo-submitter-{label}.log'} and `dsbra cluster logs`")
    collector.poll_until_read([j.job_id for j in jobs], timeout_s=120)
    obs = collector.take()
    rows = []
    for j in jobs:
        job = ep.jhs.job(j.job_id)
        maps = [o for o in obs if o.job_id == j.job_id and o.path == hot]
        rows.append({"job": j.job_id, "local": sum(o.node in o.split_hosts for o in maps),
                     "maps": len(maps), "seconds": (job["finishTime"] - job["submitTime"]) / 1000,
                     "wait_s": sum(o.launch_ms - o.scheduled_ms for o in maps) / 1000})
    return rows


def _daemon(config: Path, log_path: Path) -> subprocess.Popen:
    """The daemon in apply mode, a real `dsbra run` process, round after round."""
    with open(log_path, "w") as log_file:
        return subprocess.Popen([sys.executable, "-m", "dsbra", "run", "--config", str(config),
                                 "--apply"], stderr=log_file)


def _stop(proc: subprocess.Popen, log_path: Path) -> list[str]:
    """SIGTERM (the daemon finishes its round); its decision and refusal log lines."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=WINDOW_S + 120)
    err = log_path.read_text()
    if proc.returncode != 0:
        raise DsbraError(f"the daemon failed: {err.strip().splitlines()[-1:]}")
    return [line.split("logger=", 1)[-1] for line in err.splitlines()
            if " decision " in line or "refuse" in line]


def _wait_for(pred, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not pred():
        time.sleep(3)
    return pred()


def _table(rows: list[dict]) -> str:
    out = [f"  {'job':<24} {'hot maps node-local':>20} {'map wait s':>10} {'response s':>10}"]
    for r in rows:
        out.append(f"  {r['job']:<24} {r['local']:>9} of {r['maps']:<8} {r['wait_s']:>10.1f} "
                   f"{r['seconds']:>10.1f}")
    n = len(rows)
    out.append(f"  {'mean':<24} {sum(r['local'] for r in rows) / n:>9.1f} of "
               f"{sum(r['maps'] for r in rows) / n:<8.1f} "
               f"{sum(r['wait_s'] for r in rows) / n:>10.1f} "
               f"{sum(r['seconds'] for r in rows) / n:>10.1f}")
    return "\n".join(out)


def write_chart(summary: dict, stem: Path) -> tuple[Path, Path]:
    """The demo's before/after chart of ``summary`` (its document, demo-summary.json), as
    ``stem``.png and ``stem``.svg: per job, side by side before and after the daemon raised the
    hot file, its maps that ran node-local (of how many), their wait and the job's response.
    The SVG keeps its text as text (searchable, and read by screen readers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    phases = [("before (replication 1)", summary["before"], "tab:orange")]
    if summary["after"]:
        phases.append((f"after (raised to {summary['raised_to']})", summary["after"], "tab:blue"))
    width = 0.8 / len(phases)
    maps = max(r["maps"] for _, rows, _ in phases for r in rows)
    with plt.rc_context({"svg.fonttype": "none"}):
        fig, axes = plt.subplots(1, len(CHART_PANELS), figsize=(12, 3.6))
        for ax, (key, label) in zip(axes, CHART_PANELS):
            for k, (name, rows, color) in enumerate(phases):
                xs = [i + 1 + (k - (len(phases) - 1) / 2) * width for i in range(len(rows))]
                ax.bar(xs, [r[key] for r in rows], width, label=name, color=color)
            ax.set_xlabel("job")
            ax.set_ylabel(label.format(maps=maps))
            ax.set_xticks(range(1, max(len(rows) for _, rows, _ in phases) + 1))
        axes[0].set_ylim(0, maps)
        axes[0].yaxis.set_major_locator(MaxNLocator(integer=True))
        raised = (f"raised to {summary['raised_to']}" if summary["raised"] else "not raised")
        fig.suptitle(f"dsbra demo: {summary['hot']} on {summary['workers']} workers, {raised}, "
                     f"left at {summary['final_replication']}")
        fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncols=len(phases),
                   bbox_to_anchor=(0.5, 0.93), frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.86))
        png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
        fig.savefig(png, dpi=110)
        fig.savefig(svg)
    plt.close(fig)
    return png, svg


def demo(spec: ClusterSpec = DEMO_SPEC) -> dict:
    """The demo on ``spec``'s cluster (the state dir's, if one is up there); its summary."""
    logging.getLogger("dsbra.observe").setLevel(logging.ERROR)
    layout = StateLayout.at()
    _, started = cl.up(spec, layout, log=lambda msg: click.echo(msg, err=True))
    click.echo("cluster " + ("started (time-based delay scheduling, D = 10 s)" if started
                             else "already up; used as it is"))
    env = cl.env(layout)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    client = cl.hdfs_client(env["namenode"])
    client.delete(DEMO_DIR, recursive=True)
    hot = f"{DEMO_DIR}/in/hot.txt"
    client.write(hot, data=_text(0), replication=1)
    cold = [f"{DEMO_DIR}/in/cold-{i}.txt" for i in range(6)]
    for i, path in enumerate(cold):
        client.write(path, data=_text(i + 1), replication=1)
    click.echo(f"wrote {hot} (one block, replication 1) and 6 cold files")

    state_dir = layout.root / "demo-daemon"
    shutil.rmtree(state_dir, ignore_errors=True)
    config = layout.root / "demo-daemon.yaml"
    cfg = {"interval_s": WINDOW_S, "poll_s": 3, "state_dir": str(state_dir),
           "cluster": bundled_cluster_section(env), "http": {"enabled": False}}
    config.write_text(yaml.safe_dump(cfg))

    click.echo(f"\nbefore: {JOBS} grep jobs {GAP_S:.0f} s apart, while the daemon (apply mode, "
               f"{WINDOW_S} s rounds) watches")
    state_dir.mkdir(parents=True)
    log_path = state_dir / "daemon.log"
    proc = _daemon(config, log_path)
    summary = {"hot": hot, "workers": len(env["workers"]), "raised": False, "lowered": False,
               "after": []}
    try:
        summary["before"] = before = _replay(ep, layout, hot, cold, "before")
        click.echo(_table(before))
        summary["raised"] = _wait_for(lambda: client.status(hot)["replication"] > 1, 3 * WINDOW_S)
        summary["before_batches"] = 1
        while not summary["raised"] and summary["before_batches"] < BATCHES:
            # the maps' waits can fall in too few of the daemon's rounds for it to act (full
            # nodes are no delay): as on a cluster whose hot file stays hot, the load goes on
            summary["before_batches"] += 1
            click.echo(f"\n{hot} not raised yet: the same jobs again (batch "
                       f"{summary['before_batches']} of at most {BATCHES})")
            click.echo(_table(_replay(ep, layout, hot, cold, "before")))
            summary["raised"] = _wait_for(lambda: client.status(hot)["replication"] > 1,
                                          3 * WINDOW_S)
        summary["raised_to"] = repl = client.status(hot)["replication"]
        if not summary["raised"]:
            click.echo(f"{hot}: the daemon did not raise it (its decisions below)")
        else:
            _wait_for(lambda: min(len(b["locations"]) for b in ep.hdfs.block_locations(hot)[
                "locatedBlocks"]) >= repl, 120)
            hosts = sorted({loc["hostName"] for b in ep.hdfs.block_locations(hot)["locatedBlocks"]
                            for loc in b["locations"]})
            click.echo(f"{hot}: replication raised to {repl}; replicas on {', '.join(hosts)}")
            click.echo("\nafter: the same jobs again")
            summary["after"] = after = _replay(ep, layout, hot, cold, "after")
            click.echo(_table(after))
            click.echo(f"\ncool-down: quiet rounds until {hot} is back to base")
            summary["lowered"] = _wait_for(lambda: client.status(hot)["replication"] <= 1,
                                           6 * WINDOW_S)
            click.echo(f"{hot}: replication {client.status(hot)['replication']}"
                       + (" (back to base)" if summary["lowered"] else " (not lowered yet)"))
            # a change is done once the NameNode reports its replicas, which the daemon checks
            # at its next round: the lowering's is seen a round later
            _wait_for(lambda: _all_done(_changes(state_dir)), 2 * WINDOW_S)
    finally:
        lines = _stop(proc, log_path)
    summary["final_replication"] = client.status(hot)["replication"]
    click.echo(f"\nthe daemon's decisions (full log: {log_path}):")
    for line in lines:
        click.echo("  " + line)
    changes, done = _changes(state_dir)
    summary["journal"] = {"changes": changes, "done": done}
    click.echo(f"\njournal {state_dir / 'journal.jsonl'}: {changes} change(s), {done} reported done "
               f"by the NameNode")
    (layout.root / "demo-summary.json").write_text(json.dumps(summary, indent=1))
    try:
        png, svg = write_chart(summary, layout.root / "demo-chart")
        click.echo(f"\nthe chart of the jobs before and after: {png} and {svg}")
    except ModuleNotFoundError as exc:
        if exc.name != "matplotlib":
            raise
        click.echo("\nno chart: it needs the plots extra (pip install 'dsbra[plots]')")
    click.echo("\nthe cluster stays up; stop it with: .venv/bin/dsbra cluster down")
    return summary


def _changes(state_dir: Path) -> tuple[int, int]:
    """The daemon journal's changes, and those the NameNode reported done."""
    actions = Journal.open(state_dir / "journal.jsonl").actions.values()
    return len(actions), sum(a.state == DONE for a in actions)


def _all_done(changes: tuple[int, int]) -> bool:
    return changes[0] == changes[1]


@click.command()
@click.option("--prefix", default=DEMO_SPEC.prefix, show_default=True,
              help="Names of the cluster's bridge and network namespaces.")
@click.option("--subnet", default=DEMO_SPEC.subnet, show_default=True,
              help="The cluster's hosts' addresses.")
@click.option("--port-offset", type=int, default=DEMO_SPEC.port_offset, show_default=True,
              help="Added to every port of the master's daemons.")
def cli(prefix: str, subnet: str, port_offset: int) -> None:
    """The whole loop on the bundled cluster (`make demo`): hot-file jobs, the daemon raises
    the file, the same jobs again, the file lowered back. The cluster is the one of
    $DSBRA_STATE_DIR (default .dsbra/cluster), brought up if it is not; it stays up."""
    try:
        demo(dataclasses.replace(DEMO_SPEC, prefix=prefix, subnet=subnet, port_offset=port_offset))
    except (DsbraError, ValueError) as exc:
        click.echo(f"dsbra: error: {exc}", err=True)
        sys.exit(getattr(exc, "exit_code", 2))


if __name__ == "__main__":
    cli()
