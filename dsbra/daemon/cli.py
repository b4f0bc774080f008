"""``dsbra run``, ``dsbra status``, ``dsbra pause``, ``dsbra resume``."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click

from dsbra.errors import InputError

_CONFIG_HELP = "Daemon config (YAML; DSBRA_* environment variables override it)."


def _config(path, **overrides):
    from dsbra.daemon.config import load_config

    return load_config(path, overrides={k: v for k, v in overrides.items() if v is not None})


def _state_dir(config_path) -> Path:
    return Path(_config(config_path).state_dir)


def _log_setup() -> None:
    """key=value lines on stderr for the daemon's own loggers, INFO and up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        "ts=%(asctime)s level=%(levelname)s logger=%(name)s %(message)s"))
    for name in ("dsbra.daemon", "dsbra.act", "dsbra.hadoop"):  # the last: failovers
        lg = logging.getLogger(name)
        lg.setLevel(logging.INFO)
        lg.addHandler(handler)
        lg.propagate = False


@click.command("run", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help=_CONFIG_HELP)
@click.option("--apply", "apply_", is_flag=True, help="Change HDFS (same as 'mode: apply').")
@click.option("--once", is_flag=True, help="Run one round, then exit.")
def run(config_path, apply_, once):
    """Run the sidecar: observe a window, run DSBRA, act through WebHDFS, every interval_s.

    Dry run unless --apply or 'mode: apply'. See docs/daemon.md.
    """
    from dsbra.daemon.service import Daemon

    overrides = {"mode": "apply"} if apply_ else {}
    cfg = _config(config_path, **overrides)
    _log_setup()
    Daemon(cfg, config_path, overrides).run(once=once)


@click.command("status", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help=_CONFIG_HELP)
@click.option("--json", "as_json", is_flag=True, help="The full status document.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the status page (what a running daemon serves at /) to this file.")
def status(config_path, as_json, html_path):
    """The daemon's last round: decisions, refusals, top hot files (from its state dir)."""
    from dsbra.statedir import JOURNAL_FILE, PAUSE_FILE, STATUS_FILE

    sd = _state_dir(config_path)
    path = sd / STATUS_FILE
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"no daemon status in {sd} (has 'dsbra run' run with this config?)") \
            from None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    doc["paused"] = (sd / PAUSE_FILE).exists()
    if html_path is not None:
        from dsbra.daemon.page import experiment_estimate, raise_effects, read_journal, render

        exp = doc.get("experiment") or {}
        estimate = (experiment_estimate(sd) if exp.get("holdout") or exp.get("design") == "switchback"
                    else None)
        journal = read_journal(sd / JOURNAL_FILE)
        try:
            html_path.write_text(render(doc, journal, estimate=estimate,
                                        effects=raise_effects(sd, journal)))
        except OSError as exc:
            raise InputError(f"cannot write {html_path}: {exc.strerror}") from None
        click.echo(str(html_path))
        return
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    last = doc.get("last_round") or {}
    click.echo(f"state {doc.get('state')}{' (paused)' if doc['paused'] else ''}, mode "
               f"{doc.get('mode')}, rounds {doc.get('rounds')}, pending actions "
               f"{doc.get('pending_actions', 0)}")
    sched = doc.get("scheduler")
    if sched:
        delay = (f"delay scheduling on, D {sched['delay_threshold_s']:.1f} s "
                 f"({sched['delay_source']})" if sched["delay_scheduling"]
                 else "delay scheduling off")
        click.echo(f"scheduler {sched['name']}: {delay}, {sched['nodes']} nodes")
    exp = doc.get("experiment") or {}
    if exp.get("holdout") or any((exp.get("files") or {}).values()):
        files = exp.get("files", {})
        click.echo(f"experiment: holdout {exp.get('holdout')}, seed {exp.get('seed')}; files "
                   f"treated {files.get('treatment', 0)}, held out {files.get('control', 0)} "
                   "(dsbra impact STATE_DIR reads the result)")
    sb = exp.get("switchback")
    if sb:
        click.echo(f"experiment: switchback, periods of {sb['period_s']:g} s (burn-in "
                   f"{sb['burn_in_s']:g} s), now period {sb['period']} with the policy {sb['arm']} "
                   "(dsbra impact STATE_DIR reads the result)")
    guard = doc.get("guard")
    if guard:
        click.echo(f"guard: {guard['reason'] if guard['fired'] else 'not fired'} "
                   f"(last check: {guard['verdict']})")
    if last.get("skipped"):
        click.echo(f"last round {last['round']} skipped: {last['skipped']}")
    for reason in last.get("refusals", []):
        click.echo(f"refused: {reason}")
    for d in last.get("decisions", []):
        target = d.get("would_target", d["target"])
        click.echo(f"{d['file']}: {d['current']} -> {target} ({d['reason']['rule']}, "
                   f"RF {d['reason']['rf']:.3f}) {d['outcome']}")
    for h in last.get("top_hot_files", [])[:5]:
        click.echo(f"hot: {h['file']} RF {h['rf']:.3f} tasks {h['tasks']}")


def _flag(config_path, on: bool) -> None:
    from dsbra.statedir import PAUSE_FILE

    sd = _state_dir(config_path)
    sd.mkdir(parents=True, exist_ok=True)
    flag = sd / PAUSE_FILE
    if on:
        flag.write_text("paused by dsbra pause\n")
    else:
        flag.unlink(missing_ok=True)
    click.echo(f"{'paused' if on else 'resumed'}: {sd}")


@click.command("pause", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help=_CONFIG_HELP)
def pause(config_path):
    """Stop acting (the daemon keeps observing and deciding) until 'dsbra resume'."""
    _flag(config_path, True)


@click.command("resume", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help=_CONFIG_HELP)
def resume(config_path):
    """Let a paused daemon act again."""
    _flag(config_path, False)


#: how long ``dsbra restore --wait`` waits for the NameNode to drop the extra replicas
RESTORE_WAIT_S = 600.0


@click.command("restore", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help=_CONFIG_HELP)
@click.option("--apply", "apply_", is_flag=True,
              help="Change HDFS; without it, list what would change.")
@click.option("--wait", is_flag=True, help=f"Then wait (up to {RESTORE_WAIT_S:.0f} s) until the "
              "NameNode reports every restored file's blocks at their base.")
def restore(config_path, apply_, wait):
    """Set every file dsbra left above its base back to that base: before uninstalling it.

    Reads the daemon's journal; stop the daemon first (its state directory is locked while it
    runs). A file someone else changed since, or deleted, is left as it is. The NameNode
    chooses which replicas go. Dry run unless --apply.
    """
    from dsbra.act.health import refusals
    from dsbra.act.restore import SENT_OUTCOME, restore_bases, wait_settled
    from dsbra.daemon.service import Daemon
    from dsbra.errors import HadoopError, SafetyError

    cfg = _config(config_path, **({"mode": "apply"} if apply_ else {}))
    daemon = Daemon(cfg, config_path)
    try:
        daemon.acquire_lock()
    except SafetyError as exc:
        raise SafetyError(f"{exc}: stop the daemon first (systemctl stop dsbra)") from None
    daemon.connect_hdfs()
    try:
        if apply_:
            reasons = refusals(daemon.ep.jmx.namenode_health(), cfg.health)
            if reasons:
                raise SafetyError(f"not restoring while the cluster is unfit: {'; '.join(reasons)}")
            daemon.hold_cluster_lock()
            daemon.journal.reconcile(daemon.actor)  # a change the daemon left unsure
        records = restore_bases(daemon.journal, daemon.actor, apply=apply_)
        for r in records:
            click.echo(f"{r['file']}: {r['dsbra_set']} -> {r['base']} (its base) {r['outcome']}")
        sent = {r["file"] for r in records if r["outcome"] == SENT_OUTCOME}
        if not records:
            click.echo("no file above its base: dsbra left HDFS as it found it")
        elif not apply_:
            click.echo(f"dry run: {len(records)} file(s) would go back to their base; "
                       "--apply changes HDFS")
        else:
            click.echo(f"{len(sent)} of {len(records)} file(s) set back to their base")
        if wait and sent:
            left = wait_settled(daemon.journal, daemon.actor, sent, RESTORE_WAIT_S)
            if left:
                raise HadoopError(f"after {RESTORE_WAIT_S:.0f} s the NameNode still reports "
                                  f"replicas above base for {', '.join(sorted(left))}")
            click.echo(f"the NameNode reports every block of the {len(sent)} file(s) at base")
        failed = [r["file"] for r in records if r["outcome"].startswith(("failed", "unsure"))]
        if failed:
            raise HadoopError(f"not restored: {', '.join(failed)} (run it again)")
    finally:
        if daemon.cluster_lock is not None:
            daemon.cluster_lock.release()
