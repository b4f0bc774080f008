"""``dsbra plan``: one DSBRA round offline, JSON in, JSON out (design/dsbra-algorithm.md).

The command's edge (files, stdin, stdout) lives here; the document's reading and the plan
(:mod:`dsbra.policy.roundjson`) are the policy's interface, which the daemon uses too.
"""

from __future__ import annotations

import json
import sys

import click

from dsbra.errors import InputError
from dsbra.policy.profiles import DEFAULT_PROFILE, PARAM_NAMES, PROFILES, parse_assignments
from dsbra.policy.roundjson import plan_document


@click.command("plan", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--input", "input_path", required=True, metavar="PATH",
              help="Round JSON (params, live_nodes, blocks); '-' reads stdin.")
@click.option("--output", "output_path", default="-", show_default=True, metavar="PATH",
              help="Where the plan JSON goes; '-' writes stdout.")
@click.option("--profile", type=click.Choice(sorted(PROFILES)), default=DEFAULT_PROFILE,
              show_default=True, help="Parameter profile filling what 'params' leaves out.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a parameter (repeatable), e.g. --set rf_divisor=2.")
@click.option("--with-rails", is_flag=True,
              help="Also show the file plan after the safety rails (input key 'rails': "
                   "storage_budget_bytes, max_files_per_round, max_replicas_per_round, "
                   "max_bytes_per_round, protected, min_replication, max_replication, "
                   "block_bytes; "
                   "a block's optional 'bytes' sets its file length).")
def plan(input_path: str, output_path: str, profile: str, overrides: tuple[str, ...],
         with_rails: bool) -> None:
    """Compute one DSBRA round offline: per-block metrics in, decisions out.

    Output keys: gavg, rf, y_next, dn_avg, replicate (block -> target nodes in placement
    order), dereplicate (block -> node whose replica goes). Only the max-replication and
    live-node caps apply here; --with-rails adds the rails stage as 'file_plan'.
    """
    doc = _read_json(input_path)
    result = plan_document(doc, profile=profile,
                           overrides=parse_assignments(overrides, "--set", PARAM_NAMES),
                           with_rails=with_rails)
    text = json.dumps(result, indent=2, sort_keys=False) + "\n"
    if output_path == "-":
        click.echo(text, nl=False)
    else:
        try:
            with open(output_path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise InputError(f"cannot write --output {output_path}: {exc.strerror}") from None


def _read_json(path: str):
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read --input {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"--input {path} is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"--input {path} is not valid JSON: {exc.msg} at line {exc.lineno} "
                         f"column {exc.colno}") from None
