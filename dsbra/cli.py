"""The ``dsbra`` command line.

Each command lives with the code it drives and is imported only when invoked, so
``dsbra --help`` stays fast and a broken optional dependency cannot break unrelated commands.
"""

from __future__ import annotations

import importlib
import logging
import sys

import click

from dsbra.errors import DsbraError

# command name -> "module:attribute" of a click command or group
COMMANDS: dict[str, str] = {
    "bench": "dsbra.bench.cli:bench",
    "cluster": "dsbra.cluster.cli:cluster",
    "conf": "dsbra.conf.cli:conf",
    "impact": "dsbra.experiment.cli:impact_command",
    "docker": "dsbra.cluster.cli:docker",
    "plan": "dsbra.policy.cli:plan",
    "report": "dsbra.report.cli:report_command",
    "observe": "dsbra.observe.cli:observe",
    "pause": "dsbra.daemon.cli:pause",
    "restore": "dsbra.daemon.cli:restore",
    "resume": "dsbra.daemon.cli:resume",
    "run": "dsbra.daemon.cli:run",
    "status": "dsbra.daemon.cli:status",
    "sim": "dsbra.sim.cli:sim",
}

HELP = {
    "bench": "The reproduction benchmark on the bundled cluster: grep data, job schedules, replay.",
    "cluster": "Run the bundled real Hadoop cluster (up, down, status, env, logs).",
    "conf": "Size delay scheduling (YARN, Spark), render configs from values, check a cluster or Spark app.",
    "docker": "The bundled cluster in Docker: build its image (no registry), render its compose file.",
    "impact": "Treated against held-out files of a daemon run: the experiment's 95% intervals.",
    "plan": "Compute one DSBRA round offline: per-block metrics in, decisions out.",
    "report": "The paper's plots and claims from result sets (bench replay or sim runs).",
    "observe": "Derive per-block delay-scheduling metrics from a live cluster.",
    "pause": "Let a running daemon observe but not act.",
    "restore": "Set every file dsbra raised back to its base replication (before uninstalling).",
    "resume": "Let a paused daemon act again.",
    "run": "Run the sidecar daemon: observe, decide, act through WebHDFS, safely.",
    "status": "The daemon's last round: decisions, refusals, hot files.",
    "sim": "Simulate a cluster at scale with the same policy code.",
}


# an optional package -> the extra that installs it (pyproject.toml); the default install is
# the daemon and its CLI, and a command that imports one of these without it refuses in one line
EXTRAS = {"matplotlib": "plots", "scipy": "plots", "docker": "docker", "pyhive": "bench", "thrift": "bench",
          "gssapi": "kerberos", "requests_kerberos": "kerberos"}


def _missing_extra(exc: ModuleNotFoundError, argv: list[str]) -> str | None:
    """``dsbra <command>: needs the <extra> extra: pip install 'dsbra[<extra>]'``, if ``exc`` is
    an optional package's absence."""
    extra = EXTRAS.get((exc.name or "").split(".")[0])
    if extra is None:
        return None
    command = next((a for a in argv if a in COMMANDS), None)
    return f"dsbra{' ' + command if command else ''}: needs the {extra} extra: pip install 'dsbra[{extra}]'"


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
# the installed distribution's version (its tag, by setuptools-scm), read only for --version
@click.version_option(package_name="dsbra", prog_name="dsbra")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """dsbra: find hot HDFS blocks from delay scheduling and replicate them."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")


def main(argv: list[str] | None = None) -> None:
    try:
        rv = cli.main(args=argv, prog_name="dsbra", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("dsbra: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except DsbraError as exc:
        click.echo(f"dsbra: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except ModuleNotFoundError as exc:
        line = _missing_extra(exc, sys.argv[1:] if argv is None else argv)
        if line is None:
            raise
        click.echo(line, err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("dsbra: interrupted", err=True)
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) else 0)
