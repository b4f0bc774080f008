"""`dsbra docker build | compose`: the cluster's image and compose file (hadoop-docker/)."""

from __future__ import annotations

from pathlib import Path

import click

from dsbra.cluster.docker import DEFAULT_SUBNET, build as build_image, render_compose
from dsbra.cluster.spec import BLOCK_PLACEMENTS, SCHEDULERS, ClusterSpec


@click.group("docker")
def docker() -> None:
    """The bundled cluster in Docker containers: build its image from Debian packages and the
    project's Maven jars (no registry), render its compose file. See hadoop-docker/README.md."""


@docker.command()
@click.option("--mirror", default=None,
              help="Plain-http Debian mirror for debootstrap and apt [default: $DSBRA_DEBIAN_MIRROR or "
                   "http://deb.debian.org/debian].")
@click.option("--force", is_flag=True, help="Build even if an image of the same inputs exists.")
def build(mirror, force) -> None:
    """Build dsbra-base:bookworm (once) and dsbra-hadoop:<the cluster's Hadoop version> (when its
    inputs changed). Needs root (debootstrap)."""
    result = build_image(mirror=mirror, log=lambda msg: click.echo(msg, err=True), force=force)
    click.echo(f"{result.tag} {result.image_id[:19]} ({'built' if result.built else 'cached'}, "
               f"{result.seconds:.0f} s)")


@docker.command()
@click.option("--workers", type=int, default=4, show_default=True, help="Number of worker containers.")
@click.option("--subnet", default=DEFAULT_SUBNET, show_default=True,
              help="Network of the containers; master .1, worker i .(10+i), gateway .254.")
@click.option("--no-daemon", is_flag=True, help="Leave out the dsbra daemon's sidecar service.")
@click.option("--scheduler", type=click.Choice(SCHEDULERS), default=ClusterSpec.scheduler, show_default=True,
              help="The ResourceManager's scheduler (as `dsbra cluster up --scheduler`).")
@click.option("--node-locality-delay", type=int, default=ClusterSpec.node_locality_delay, show_default=True,
              help="Capacity Scheduler: missed scheduling opportunities before a rack-local container.")
@click.option("--rack-locality-additional-delay", type=int,
              default=ClusterSpec.rack_locality_additional_delay, show_default=True,
              help="Capacity Scheduler: further missed opportunities before an off-switch container.")
@click.option("--placement", type=click.Choice(BLOCK_PLACEMENTS), default=ClusterSpec.block_placement,
              show_default=True,
              help="The NameNode's block placement: HDFS's default, or dsbra's heat-aware plugin reading "
                   "the sidecar daemon's /heat (docs/placement.md).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here instead of stdout.")
def compose(workers, subnet, no_daemon, scheduler, node_locality_delay, rack_locality_additional_delay,
            placement, out) -> None:
    """Print the compose file of a cluster of WORKERS workers (hadoop-docker/compose.yaml is the default one)."""
    text = render_compose(workers, subnet, daemon=not no_daemon, scheduler=scheduler,
                          node_locality_delay=node_locality_delay,
                          rack_locality_additional_delay=rack_locality_additional_delay,
                          placement=placement)
    if out:
        out.write_text(text)
    else:
        click.echo(text, nl=False)
