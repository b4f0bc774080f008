"""`dsbra report`: the paper's figures and claims from result sets (dsbra.report.paper)."""

from __future__ import annotations

from pathlib import Path

import click

from dsbra.report.paper import report


@click.command("report", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("results", nargs=-1, required=True,
                type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", "out", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="Directory for report.md and its PNGs.")
@click.option("--arm", default="dsbra", show_default=True,
              help="The arm the paper's claims are about.")
@click.option("--baseline", default="static", show_default=True,
              help="The arm the claims compare against (static replication, delay scheduling on).")
@click.option("--oracle", default="oracle", show_default=True,
              help="The arm whose gain the captured share is taken of, when present.")
def report_command(results, out, arm, baseline, oracle) -> None:
    """A markdown report with the DSBRA paper's plots from RESULTS: directories of runs
    (jobs.parquet + tasks.parquet, as `dsbra bench replay` and `dsbra sim` write them),
    grouped into arms by directory name (<arm>/seed<k>, rep<k> or run<k> are repetitions)."""
    md = report(list(results), out, arm=arm, baseline=baseline, oracle=oracle)
    click.echo(str(md))
