"""The dsbra cluster in Docker: build its image without any registry, render its compose file.

No image registry is needed, nor any https from inside a container: the base image is Debian
bookworm made by `debootstrap` from a plain-http mirror and `docker import`ed; the JDK comes
from that mirror with apt; the Hadoop jars are the project's own Maven fetch
(.dsbra/hadoop/<version>) and the Python packages a wheelhouse `pip wheel` made on the host.
Everything is staged under .dsbra/docker/context; the image carries a hash of that context
as a label, so an unchanged context is not built again.

The compose file runs the same hosts as `dsbra cluster up`: the master's three daemons share
one network namespace (the NameNode container's), each worker has its own address, and every
container renders its configs from conf-templates/ (dsbra.cluster.container).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml

from dsbra.cluster.install import ensure_hadoop, ensure_placement
from dsbra.cluster.paths import project_root
from dsbra.cluster.spec import HADOOP_VERSION, ClusterSpec
from dsbra.errors import ClusterError

BASE_IMAGE = "dsbra-base:bookworm"
IMAGE_REPO = "dsbra-hadoop"
INPUTS_LABEL = "org.dsbra.inputs"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: outside the netns clusters' 10.77-10.99 and 10.2xx ranges, so both kinds run at once
DEFAULT_SUBNET = "172.29.0.0/24"
#: the Python of Debian bookworm, which runs the wheels made on the host
IMAGE_PYTHON = (3, 11)
DAEMON_HTTP_PORT = 9780


def work_dir() -> Path:
    return project_root() / ".dsbra" / "docker"


def image_tag(version: str = HADOOP_VERSION) -> str:
    return f"{IMAGE_REPO}:{version}"


def docker_client():
    """A client of the local engine; a clear error when there is none."""
    import docker

    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        raise ClusterError(f"no Docker engine answers ({str(exc)[:200]}); install docker.io and start "
                           "dockerd (make docker-deps does both)") from None
    return client


@dataclass(frozen=True)
class BuildResult:
    tag: str
    image_id: str
    built: bool  # False: an image of the same inputs already existed
    seconds: float


def build(version: str = HADOOP_VERSION, mirror: str | None = None, log=print, force: bool = False) -> BuildResult:
    """Idempotent: the base image once, the cluster image when its staged inputs changed."""
    started = time.monotonic()
    mirror = mirror or os.environ.get("DSBRA_DEBIAN_MIRROR", DEFAULT_MIRROR)
    client = docker_client()
    work_dir().mkdir(parents=True, exist_ok=True)
    with open(work_dir() / ".build.lock", "w") as lock:  # one build at a time stages the context
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(client, version, mirror, log, force, started)


def _build(client, version: str, mirror: str, log, force: bool, started: float) -> BuildResult:
    base_id = ensure_base_image(client, mirror, log)
    context = stage_context(version, log)
    key = inputs_key(context, base_id)
    tag = image_tag(version)
    existing = _image(client, tag)
    if existing is not None and not force and existing.labels.get(INPUTS_LABEL) == key:
        log(f"{tag} is up to date (inputs {key[:12]})")
        return BuildResult(tag, existing.id, False, time.monotonic() - started)
    log(f"building {tag} (inputs {key[:12]}; log: {work_dir() / 'build.log'}) ...")
    image_id = _docker_build(client, context, tag, {INPUTS_LABEL: key}, work_dir() / "build.log", log)
    if existing is not None and existing.id != image_id:
        _remove_untagged(client, existing.id)
    return BuildResult(tag, image_id, True, time.monotonic() - started)


def _remove_untagged(client, image_id: str) -> None:
    """The image a rebuild replaced, unless a container still uses it (then it stays, untagged)."""
    import docker

    try:
        client.images.remove(image_id, noprune=False)
    except docker.errors.APIError:
        pass


def _image(client, tag: str):
    import docker

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def ensure_base_image(client, mirror: str, log=print) -> str:
    """Debian bookworm (minbase) from `mirror`, imported as BASE_IMAGE; returns its id."""
    existing = _image(client, BASE_IMAGE)
    if existing is not None:
        return existing.id
    if shutil.which("debootstrap") is None:
        raise ClusterError("debootstrap not found: install it (apt-get install -y debootstrap)")
    if os.geteuid() != 0:
        raise ClusterError("building the base image needs root (debootstrap)")
    scratch = work_dir() / "base"
    shutil.rmtree(scratch, ignore_errors=True)
    rootfs, tarball, out = scratch / "rootfs", scratch / "rootfs.tar", work_dir() / "debootstrap.log"
    scratch.mkdir(parents=True)
    log(f"debootstrap bookworm from {mirror} (log: {out}) ...")
    with open(out, "w") as handle:
        rc = subprocess.call(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), mirror],
                             stdout=handle, stderr=subprocess.STDOUT)
    if rc != 0:
        raise ClusterError(f"debootstrap from {mirror} failed (exit {rc}); see {out}")
    subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
    client.api.import_image_from_file(str(tarball), repository=BASE_IMAGE.split(":")[0],
                                      tag=BASE_IMAGE.split(":")[1], changes=["ENV LANG=C.UTF-8", 'CMD ["bash"]'])
    shutil.rmtree(scratch, ignore_errors=True)
    return client.images.get(BASE_IMAGE).id


def stage_context(version: str, log=print) -> Path:
    """The build context: Dockerfile, Hadoop jars (hard links), the placement plugin's jar,
    wheelhouse, dsbra's source."""
    root = project_root()
    context = work_dir() / "context"
    context.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / "hadoop-docker" / "Dockerfile", context / "Dockerfile")
    install = ensure_hadoop(version)
    jars = context / "hadoop" / version
    if not (jars / ".complete").exists():
        shutil.rmtree(context / "hadoop", ignore_errors=True)
        jars.mkdir(parents=True)
        for name in ("lib", "extra", "webapps-root"):
            shutil.copytree(install.home / name, jars / name, copy_function=_link_or_copy)
        shutil.copyfile(install.home / ".complete", jars / ".complete")
    plugin = context / "placement" / version / "dsbra-placement.jar"
    shutil.rmtree(context / "placement", ignore_errors=True)
    plugin.parent.mkdir(parents=True)
    shutil.copyfile(ensure_placement(version), plugin)
    _wheelhouse(root / "pyproject.toml", context, log)
    src = context / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(root / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root / "dsbra", src / "dsbra", ignore=ignore)
    shutil.copytree(root / "conf-templates", src / "conf-templates", ignore=ignore)
    return context


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _wheelhouse(pyproject: Path, context: Path, log) -> None:
    """Wheels of dsbra's dependencies (wheels/) and of its build backend (build-wheels/), made
    on the host once per dependency list: the image installs them with --no-index."""
    if sys.version_info[:2] != IMAGE_PYTHON:
        raise ClusterError(f"the image runs Python {'.'.join(map(str, IMAGE_PYTHON))}; build it with that "
                           f"Python (this is {sys.version.split()[0]})")
    project = tomllib.loads(pyproject.read_text())
    deps = sorted(project["project"]["dependencies"])
    backend = sorted(project["build-system"]["requires"])
    key = hashlib.sha256(repr((deps, backend, sys.version_info[:2])).encode()).hexdigest()
    marker = context / "wheels" / ".inputs"
    if marker.exists() and marker.read_text() == key:
        return
    log("making the wheelhouse (pip wheel) ...")
    for folder, reqs in (("wheels", deps), ("build-wheels", backend)):
        shutil.rmtree(context / folder, ignore_errors=True)
        rc = subprocess.call([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
                              "-w", str(context / folder), *reqs])
        if rc != 0:
            raise ClusterError(f"pip wheel {' '.join(reqs)} failed (exit {rc})")
    marker.write_text(key)


def inputs_key(context: Path, base_id: str) -> str:
    """Hash of every staged file (path and content) and of the base image."""
    digest = hashlib.sha256(base_id.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(context)).encode() + b"\0")
        with open(path, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def _docker_build(client, context: Path, tag: str, labels: dict, log_path: Path, log) -> str:
    """docker build through the engine API (the classic builder: no buildx needed)."""
    image_id, lines = None, []
    with open(log_path, "w") as out:
        for chunk in client.api.build(path=str(context), tag=tag, labels=labels, rm=True, forcerm=True,
                                      pull=False, decode=True):
            if "error" in chunk:
                out.write(chunk["error"] + "\n")
                tail = " | ".join(line.strip() for line in lines[-3:] if line.strip())
                raise ClusterError(f"docker build of {tag} failed: {chunk['error'].strip()} ({tail[:300]}); "
                                   f"see {log_path}")
            text = chunk.get("stream", "")
            if text:
                out.write(text)
                lines.append(text)
                if text.startswith("Step "):
                    log("  " + text.strip()[:120])
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = chunk["aux"]["ID"]
    if image_id is None:
        raise ClusterError(f"docker build of {tag} reported no image; see {log_path}")
    return image_id


# ---- compose -------------------------------------------------------------------------------


def compose_document(workers: int = 4, subnet: str = DEFAULT_SUBNET, image: str | None = None,
                     daemon: bool = True, scheduler: str = ClusterSpec.scheduler,
                     node_locality_delay: int = ClusterSpec.node_locality_delay,
                     rack_locality_additional_delay: int = ClusterSpec.rack_locality_additional_delay,
                     placement: str = ClusterSpec.block_placement) -> dict:
    """The compose file of a cluster of `workers` workers on `subnet` (a dict for yaml). No
    top-level `name` (docker-compose 1.x rejects it): the project is `-p` or COMPOSE_PROJECT_NAME.
    With placement "heat" the NameNode runs dsbra's placement plugin; it reads the sidecar
    daemon's /heat over the namespace they share (without the sidecar: /dsbra/placement/heat.json)."""
    spec = ClusterSpec(workers=workers, replication=min(3, workers), subnet=subnet,
                       scheduler=scheduler, node_locality_delay=node_locality_delay,
                       rack_locality_additional_delay=rack_locality_additional_delay,
                       block_placement=placement)
    image = image or image_tag(spec.hadoop_version)
    args = ["--workers", str(workers), "--subnet", subnet]
    if scheduler != ClusterSpec.scheduler:
        args += ["--scheduler", scheduler, "--node-locality-delay", str(node_locality_delay),
                 "--rack-locality-additional-delay", str(rack_locality_additional_delay)]
    if placement != ClusterSpec.block_placement:
        args += ["--placement", placement]
        if daemon:
            args += ["--heat-uri", f"http://127.0.0.1:{DAEMON_HTTP_PORT}/heat"]
    gateway = str(spec.network.broadcast_address - 1)  # .1 is the master, as in the netns cluster
    # each host's name is its address, as in the netns cluster (no DNS there): Hadoop asks for
    # the canonical names of addresses, and docker would answer a container id (its /etc/hosts)
    # or `<container>.<project>_<network>` (its DNS; the '_' breaks Hadoop's hdfs:// URIs)
    hosts = [f"{h}:{h}" for h in (spec.master, *(w.host for w in spec.worker_list))]
    master = {"image": image, "volumes": ["master:/dsbra"], "network_mode": "service:namenode",
              "depends_on": ["namenode"]}
    services: dict[str, dict] = {
        "namenode": {"image": image, "command": ["namenode", *args], "volumes": ["master:/dsbra"],
                     "hostname": spec.master, "extra_hosts": hosts,
                     "networks": {"dsbra": {"ipv4_address": spec.master}}},
        "resourcemanager": {**master, "command": ["resourcemanager", *args]},
        "historyserver": {**master, "command": ["historyserver", *args]},
    }
    for w in spec.worker_list:
        services[w.name] = {"image": image, "command": ["worker", str(w.index), *args],
                            "hostname": w.host, "extra_hosts": hosts,
                            "networks": {"dsbra": {"ipv4_address": w.host}}}
    if daemon:
        urls = spec.urls
        services["dsbra"] = {
            "image": image, "entrypoint": ["dsbra"], "command": ["run"],  # dry run unless DSBRA_MODE=apply
            "network_mode": "service:namenode", "depends_on": ["namenode", "resourcemanager"],
            "restart": "unless-stopped", "volumes": ["daemon:/var/lib/dsbra"],
            "environment": {"DSBRA_CLUSTER__RM": urls["rm"], "DSBRA_CLUSTER__WEBHDFS": urls["namenode"],
                            "DSBRA_CLUSTER__JHS": urls["jhs"], "DSBRA_CLUSTER__USER": "root",
                            "DSBRA_HTTP__HOST": "0.0.0.0", "DSBRA_HTTP__PORT": str(DAEMON_HTTP_PORT)},
        }
        if scheduler == "capacity":  # the RM's /conf does not show capacity-scheduler.xml's delay
            services["dsbra"]["environment"]["DSBRA_CLUSTER__NODE_LOCALITY_DELAY"] = str(node_locality_delay)
        if placement == "heat":  # the plugin reads /heat every second: act 3 s after publishing
            services["dsbra"]["environment"]["DSBRA_PLACEMENT__LEAD_S"] = "3"
    return {
        "services": services,
        "volumes": {"master": {}, **({"daemon": {}} if daemon else {})},
        "networks": {"dsbra": {"ipam": {"config": [{"subnet": subnet, "gateway": gateway}]}}},
    }


COMPOSE_HEADER = """\
# The dsbra cluster in containers: the hosts of `dsbra cluster up` (NameNode, ResourceManager
# with {scheduler}, JobHistoryServer, {workers} workers on two racks) and the dsbra daemon
# (`dsbra run`, dry run) beside the NameNode. Made by `dsbra docker compose`; edit that, not this.
# Build the image first (`dsbra docker build`), then see hadoop-docker/README.md.
"""

PLUGIN_HEADER = """\
# The NameNode places replicas with dsbra's heat-aware plugin (docs/placement.md), reading the
# daemon's /heat; without usable heat it places as HDFS's default.
"""


def render_compose(workers: int = 4, subnet: str = DEFAULT_SUBNET, image: str | None = None,
                   daemon: bool = True, **options) -> str:
    """``options``: compose_document's scheduler, node_locality_delay,
    rack_locality_additional_delay and placement."""
    doc = compose_document(workers, subnet, image, daemon, **options)
    name = "the Capacity Scheduler" if options.get("scheduler") == "capacity" else "the Fair Scheduler"
    plugin = PLUGIN_HEADER if options.get("placement") == "heat" else ""
    return COMPOSE_HEADER.format(workers=workers, scheduler=name) + plugin + yaml.dump(doc, Dumper=_ComposeDumper, sort_keys=False, width=110)


class _ComposeDumper(yaml.SafeDumper):
    """Readable compose YAML: no anchors, lists of plain values on one line."""

    def ignore_aliases(self, data):
        return True

    def represent_list(self, data):
        flow = all(isinstance(item, str) for item in data)
        return self.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_ComposeDumper.add_representer(list, _ComposeDumper.represent_list)
