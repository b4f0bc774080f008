"""`dsbra impact`: the read-out of a daemon run's experiment."""

from __future__ import annotations

import json
from pathlib import Path

import click

from dsbra.errors import InputError
from dsbra.experiment import impact, switchback


@click.command("impact", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("directories", nargs=-1, required=True,
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--json", "as_json", is_flag=True, help="The full result as JSON.")
@click.option("--plot", "png", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the differences and the per-file before/after view to this PNG.")
@click.option("--slots", type=click.IntRange(min=1),
              help="A switchback's queue adjustment: the cluster's map slots (containers that "
                   "run at once); by default the most maps the records show running at once.")
def impact_command(directories: tuple[Path, ...], as_json: bool, png: Path | None,
                   slots: int | None) -> None:
    """What the policy did, read from a daemon run's experiment, with 95% intervals: treated
    against held-out files (experiment.holdout: locality, wait and map time), or on periods
    against off ones (experiment.design switchback: job response too, and the response with
    the queue the periods share taken out, docs/daemon.md "The queue adjustment"). DIRECTORIES: a daemon
    state dir, or a `dsbra bench replay` results dir run with --daemon-config; several runs
    pool (a holdout's by draw, a file under one seed; a switchback's blocks)."""
    states = [impact.state_dir_of(d) for d in directories]
    switchbacks = [impact.is_switchback(s) for s in states]
    if any(switchbacks):
        if not all(switchbacks):
            raise InputError("a switchback and a holdout answer different questions: read "
                             "their directories apart")
        if png is not None:
            raise InputError("--plot draws a holdout's files; a switchback has none to draw")
        result = switchback.read_out(states, adjust_queue=True, slots=slots)
        click.echo(json.dumps(result, indent=1) if as_json else switchback.text(result))
        return
    if slots is not None:
        raise InputError("--slots sets a switchback's queue adjustment; a holdout has none")
    result = impact.impact(list(directories))
    if png is not None:
        impact.plot(result, png)
    click.echo(json.dumps(result, indent=1) if as_json else impact.text(result))
