"""Where things live on disk: the project root, the jar cache and the cluster state directory."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from dsbra.errors import ConfigError

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the checkout (editable install)


def project_root() -> Path:
    return Path(os.environ.get("DSBRA_ROOT", PACKAGE_ROOT))


def templates_dir() -> Path:
    path = project_root() / "conf-templates"
    if not path.is_dir() and "DSBRA_ROOT" not in os.environ:  # an installed wheel: its package data
        path = Path(__file__).resolve().parents[1] / "conf-templates"
    if not path.is_dir():
        raise ConfigError(f"config templates not found at {path} (set DSBRA_ROOT to the dsbra checkout)")
    return path


def stage_sources(src: Path) -> None:
    """A fresh copy of what dsbra's wheel is built from (pyproject.toml, README.md, dsbra/,
    conf-templates/) in ``src``, so a build writes nothing into the checkout."""
    root = project_root()
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(root / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root / "dsbra", src / "dsbra", symlinks=True, ignore=ignore)
    shutil.copytree(root / "conf-templates", src / "conf-templates", ignore=ignore)


def staged_build_env() -> dict[str, str]:
    """The environment to build a staged copy in: it has no git metadata for setuptools-scm to
    read the version from, so the wheel is told the version of the dsbra that staged it."""
    return {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_DSBRA": version("dsbra")}


def default_state_dir() -> Path:
    return Path(os.environ.get("DSBRA_STATE_DIR", project_root() / ".dsbra" / "cluster"))


def hadoop_home(version: str) -> Path:
    """Per-version jar cache: lib/ (classpath), extra/ (tests jar), webapps/ (HDFS web UIs)."""
    return Path(os.environ.get("DSBRA_HADOOP_DIR", project_root() / ".dsbra" / "hadoop")) / version


def placement_jar(version: str) -> Path:
    """dsbra's NameNode placement plugin built against Hadoop ``version`` (placement/pom.xml);
    DSBRA_PLACEMENT_DIR moves the per-version folders (the docker image's /opt/dsbra/placement)."""
    folder = Path(os.environ.get("DSBRA_PLACEMENT_DIR", project_root() / ".dsbra" / "placement"))
    return folder / version / "dsbra-placement.jar"


@dataclass(frozen=True)
class StateLayout:
    """The one directory that holds all of a cluster's state."""

    root: Path

    @classmethod
    def at(cls, state_dir: Path | str | None = None) -> "StateLayout":
        """The cluster in ``state_dir``, or in :func:`default_state_dir` (``DSBRA_STATE_DIR``)."""
        return cls(Path(state_dir or default_state_dir()).resolve())

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def heat_file(self) -> Path:
        """Where a dsbra daemon writes its heat document for the NameNode's placement plugin
        (`dsbra cluster up --placement heat`)."""
        return self.root / "placement" / "heat.json"

    @property
    def rm_store(self) -> Path:
        """The ResourceManagers' shared state store (`dsbra cluster up --ha`)."""
        return self.root / "data" / "rmstore"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def conf(self, host: str) -> Path:
        """host: 'master', 'client' or a worker name such as 'w1'."""
        return self.root / "conf" / host

    def data(self, host: str) -> Path:
        return self.root / "data" / host

    def log(self, daemon: str) -> Path:
        return self.logs / f"{daemon}.log"

    def out(self, daemon: str) -> Path:
        return self.logs / f"{daemon}.out"
