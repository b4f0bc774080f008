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
        from dsbra.daemon.page import experiment_estimate, read_journal, render

        exp = doc.get("experiment") or {}
        estimate = (experiment_estimate(sd) if exp.get("holdout") or exp.get("design") == "switchback"
                    else None)
        try:
            html_path.write_text(render(doc, read_journal(sd / JOURNAL_FILE), estimate=estimate))
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
