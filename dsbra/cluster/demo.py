"""The cluster demo (`make demo`): bring the cluster up, write a few one-block files, run a grep
job, and print the cluster's URLs and where each block lives."""

from __future__ import annotations

import sys
import time

import click
import requests
from hdfs import InsecureClient

from dsbra.cluster import cluster as cl
from dsbra.cluster.jobs import run_grep
from dsbra.cluster.paths import StateLayout, default_state_dir
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import DsbraError

DEMO_DIR = "/demo"
WORDS = ["delay", "scheduling", "locality", "replica", "dsbra", "hadoop", "block", "rack"]


def demo() -> None:
    layout = StateLayout(default_state_dir().resolve())
    _, started = cl.up(ClusterSpec(), layout, log=lambda msg: click.echo(msg, err=True))
    click.echo("cluster " + ("started" if started else "already up"))
    env = cl.env(layout)
    client = InsecureClient(env["namenode"], user="root")
    client.delete(DEMO_DIR, recursive=True)
    for i in range(6):
        text = "".join(f"{WORDS[(i + j) % len(WORDS)]} line {j}\n" for j in range(2000))
        client.write(f"{DEMO_DIR}/in/part-{i}.txt", data=text.encode())
    click.echo(f"wrote 6 one-block files to {DEMO_DIR}/in")

    started_at = time.monotonic()
    result = run_grep(f"{DEMO_DIR}/in", f"{DEMO_DIR}/out", "dsbra|locality")
    click.echo(f"grep ran as {', '.join(result.job_ids)} in {time.monotonic() - started_at:.1f} s; matches:")
    with client.read(f"{DEMO_DIR}/out/part-r-00000", encoding="utf-8") as reader:
        for line in reader.read().splitlines():
            click.echo(f"  {line}")

    click.echo("\ncluster URLs:")
    for key in ("namenode", "webhdfs", "rm", "jhs"):
        click.echo(f"  {key:<9} {env[key]}")
    racks = {w["host"]: w["rack"] for w in env["workers"]}
    click.echo("\nwhere the blocks live (host rack):")
    for name in sorted(client.list(f"{DEMO_DIR}/in")):
        resp = requests.get(f"{env['webhdfs']}{DEMO_DIR}/in/{name}",
                            params={"op": "GET_BLOCK_LOCATIONS", "user.name": "root"}, timeout=10)
        resp.raise_for_status()
        for block in resp.json()["LocatedBlocks"]["locatedBlocks"]:
            hosts = ", ".join(f"{loc['hostName']} {racks.get(loc['hostName'], '?')}" for loc in block["locations"])
            click.echo(f"  {name}  blk_{block['block']['blockId']}  {hosts}")
    click.echo("\nthe cluster stays up; stop it with: .venv/bin/dsbra cluster down")


def main() -> None:
    try:
        demo()
    except DsbraError as exc:
        click.echo(f"dsbra: error: {exc}", err=True)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
