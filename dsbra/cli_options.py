"""Options and callbacks more than one command shares, declared once (a command lives in its
package's ``cli.py``; what two of them take alike lives here)."""

from __future__ import annotations

from pathlib import Path

import click

from dsbra.errors import InputError

state_dir_option = click.option(
    "--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Directory holding all cluster state [default: $DSBRA_STATE_DIR or .dsbra/cluster].",
)


def job_properties(ctx, param, values: tuple[str, ...]) -> dict[str, str]:
    """Click callback: repeated KEY=VALUE properties (Hadoop job or Spark) as a dict (a later KEY wins, as
    with Hadoop's -D)."""
    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key.strip() or key != key.strip():
            raise click.BadParameter(f"{value!r} is not KEY=VALUE (a property name, '=', its value)")
        out[key] = val
    return out



def security_options(command):
    """--ca-bundle, --kerberos, --principal and --keytab: what a TLS and/or Kerberized
    cluster needs, as the daemon's cluster.ca_bundle, kerberos, kerberos_principal, keytab."""
    options = [
        click.option("--ca-bundle", type=click.Path(dir_okay=False, exists=True),
                     help="Verify https endpoints against this CA bundle (PEM)."),
        click.option("--kerberos", is_flag=True, help="Authenticate by SPNEGO (Kerberos)."),
        click.option("--principal", help="With --kerberos: the principal to authenticate as "
                                         "[default: the ticket cache's]."),
        click.option("--keytab", type=click.Path(dir_okay=False),
                     help="With --kerberos and --principal: log in from this keytab instead of "
                          "a ticket cache."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def secure_sessions(sessions, *, ca_bundle: str | None, kerberos: bool, principal: str | None,
                    keytab: str | None) -> None:
    """Set up ``sessions`` from :func:`security_options`; a bad keytab, principal or missing
    ticket is a one-line error here, before any request."""
    from dsbra.hadoop.auth import check_ticket, login_from_keytab, secure_session

    if keytab and not (kerberos and principal):
        raise InputError("--keytab needs --kerberos and the --principal to log in as")
    if kerberos:
        if keytab:
            login_from_keytab(keytab, principal)
        check_ticket(principal)
    for session in sessions:
        secure_session(session, ca_bundle=ca_bundle, kerberos=kerberos, principal=principal)
