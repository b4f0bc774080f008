"""The default install is the daemon and its CLI (issue 23): with the extras' packages
(matplotlib, scipy, docker, pyhive, thrift) absent, every command's --help works and a command that
needs one refuses in one line naming the extra; the dependency lists say the same; the
config templates reach an installed wheel; `dsbra --version` is the installed distribution's,
which setuptools-scm takes from the repository's tags (issue 70)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from dsbra.cli import EXTRAS, _missing_extra, main
from dsbra.cluster import paths
from dsbra.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = ("matplotlib", "scipy", "docker", "pyhive", "thrift")

# run in a subprocess: a finder that refuses the extras' packages, then the CLI
BLOCKED = """
import sys
BLOCK = set(sys.argv[1].split(","))
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Refuse())
"""

HELP_ALL = BLOCKED + """
import contextlib, io, json
import click
from dsbra.cli import cli, main

def paths(group, prefix):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield prefix + [name]
        if isinstance(cmd, click.Group):
            yield from paths(cmd, prefix + [name])

codes = {}
for argv in [[]] + list(paths(cli, [])):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv + ["--help"])
        except SystemExit as exc:
            code = exc.code
    codes[" ".join(argv)] = [code, "Usage:" in out.getvalue(), err.getvalue()]
codes["__loaded__"] = sorted({m.split(".")[0] for m in sys.modules} & BLOCK)
print(json.dumps(codes))
"""


def _blocked(script: str, *args: str, block=OPTIONAL, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script, ",".join(block), *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_every_commands_help_without_the_extras():
    done = _blocked(HELP_ALL)
    assert done.returncode == 0, done.stderr[-3000:]
    codes = json.loads(done.stdout)
    assert codes.pop("__loaded__") == []
    # the daemon's commands and every other one, groups and their subcommands
    for name in ("", "run", "observe", "plan", "status", "pause", "resume", "conf", "conf render",
                 "conf check", "conf delay", "impact", "report", "docker", "docker build", "bench",
                 "bench replay", "bench hive", "bench hive start", "sim", "cluster", "cluster up"):
        assert name in codes, sorted(codes)
    for name, (code, usage, err) in codes.items():
        assert code == 0 and usage and not err, (name, code, err)


@pytest.mark.parametrize("argv, extra", [
    (["docker", "build"], "docker"),
    (["impact", str(ROOT / "tests/fixtures/impact/daemon-holdout"), "--plot", "{tmp}/impact.png"], "plots"),
])
def test_a_command_needing_an_extra_refuses_in_one_line(argv, extra, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    done = _blocked(BLOCKED + "from dsbra.cli import main\nmain(sys.argv[2:])\n", *argv, cwd=tmp_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr == f"dsbra {argv[0]}: needs the {extra} extra: pip install 'dsbra[{extra}]'\n"


def test_report_without_matplotlib_refuses(tmp_path):
    """`dsbra report` on real runs (the committed simulator runs) draws plots: the plots extra."""
    runs = ROOT / "benchmarks/results/sim-paper-h1/dsbra-yarn"
    if not any(runs.glob("*/jobs.parquet")):
        pytest.skip(f"no committed runs in {runs}")
    done = _blocked(BLOCKED + "from dsbra.cli import main\nmain(sys.argv[2:])\n", "report", str(runs),
                    "--out", str(tmp_path / "report"), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "dsbra report: needs the plots extra: pip install 'dsbra[plots]'\n"


def test_missing_extra_names_the_extra():
    exc = ModuleNotFoundError("No module named 'pyhive.hive'", name="pyhive.hive")
    assert _missing_extra(exc, ["-v", "bench", "replay", "s.json"]) == \
        "dsbra bench: needs the bench extra: pip install 'dsbra[bench]'"
    assert _missing_extra(ModuleNotFoundError("x", name="thrift"), []) == \
        "dsbra: needs the bench extra: pip install 'dsbra[bench]'"
    # any other missing module is a bug, not a missing extra: it keeps its traceback
    assert _missing_extra(ModuleNotFoundError("x", name="numpy"), ["run"]) is None


def test_dependencies_and_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {d.split(">")[0].split("[")[0].lower() for d in project["dependencies"]}
    assert not base & {"matplotlib", "scipy", "docker", "pyhive", "thrift", "gssapi", "testcontainers"}
    extras = project["optional-dependencies"]
    assert {"plots", "docker", "bench", "kerberos", "dev"} <= set(extras)
    assert set(EXTRAS.values()) <= set(extras)
    # the test suite's install (the Makefile's .[dev]) has every extra
    dev = next(d for d in extras["dev"] if d.startswith("dsbra["))
    assert set(dev[len("dsbra["):-1].split(",")) >= {"plots", "docker", "bench", "kerberos"}


def test_templates_reach_the_wheel(monkeypatch, tmp_path):
    """The package's conf-templates (a symlink to the checkout's, package data in the wheel)
    are the templates when the project root has none and DSBRA_ROOT is not set."""
    link = ROOT / "dsbra" / "conf-templates"
    assert link.is_symlink() and link.resolve() == (ROOT / "conf-templates").resolve()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "conf-templates/*" in package_data["dsbra"]
    monkeypatch.delenv("DSBRA_ROOT", raising=False)
    monkeypatch.setattr(paths, "PACKAGE_ROOT", tmp_path)  # site-packages: no conf-templates there
    assert paths.templates_dir().resolve() == (ROOT / "conf-templates").resolve()
    monkeypatch.setenv("DSBRA_ROOT", str(tmp_path))  # an explicit root is taken at its word
    with pytest.raises(ConfigError, match="config templates not found"):
        paths.templates_dir()


def test_dsbra_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"dsbra, version {version('dsbra')}\n"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # from the tags, not written in pyproject; a tree without git metadata builds as the fallback
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert any(r.startswith("setuptools-scm") for r in pyproject["build-system"]["requires"])
    assert pyproject["tool"]["setuptools_scm"]["fallback_version"]
