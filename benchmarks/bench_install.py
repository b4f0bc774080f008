"""Benchmark the default install (the daemon and its CLI) against the full one (every extra but
Kerberos: what `pip install dsbra` pulled before issue 23): installed size, start time, memory.

Builds dsbra's wheel with the standard build tool (`python -m build`, in a scratch venv under
--work, from a copy of the checkout), makes three fresh venvs (empty, the wheel, the wheel with
[all]; dependencies from the package index or pip's cache) and measures, side by side:

  size    the bytes of each venv's site-packages, and minus the empty venv's (pip, setuptools)
  start   wall time of `dsbra run --help`, `python -c "import dsbra.cli"` and
          `python -c "import dsbra.daemon.service"` (what `dsbra run` loads), --repeats times
          each after one warm-up, the two installs alternating; median, min, max
  memory  peak RSS (ru_maxrss of the process) of `dsbra run --once` (dry run, a 10 s window)
          against a running bundled cluster (--state-dir of `dsbra cluster up`), --rss-repeats
          times each; without a cluster, of `python -c "import dsbra.daemon.service"`

    .venv/bin/python benchmarks/bench_install.py --state-dir .dsbra/cluster-slot1
writes benchmarks/results/install.json and install.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from dsbra.cluster.paths import stage_sources, staged_build_env
from dsbra.daemon.config import bundled_cluster_section
from dsbra.stats import repeats_summary

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
EXTRAS_PACKAGES = ("matplotlib", "docker", "pyhive", "thrift")


def run(cmd, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


def clean_env() -> dict:
    """No DSBRA_* variable and no path into the checkout: the venv's own dsbra."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("DSBRA_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def build_wheel(work: Path) -> Path:
    """`python -m build` (sdist, then the wheel from it) on a copy of the checkout."""
    tools = work / "build-venv"
    if not (tools / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", tools])
        run([tools / "bin" / "pip", "install", "-q", "build"])
    src, dist = work / "src", work / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    stage_sources(src)
    run([tools / "bin" / "python", "-m", "build", "--outdir", dist, src], env=staged_build_env())
    (wheel,) = dist.glob("dsbra-*.whl")
    return wheel


def make_venv(path: Path, requirement: str | None) -> float:
    shutil.rmtree(path, ignore_errors=True)
    start = time.monotonic()
    run([sys.executable, "-m", "venv", path])
    if requirement:
        run([path / "bin" / "pip", "install", "-q", "--disable-pip-version-check", requirement],
            env=clean_env(), cwd=path.parent, timeout=1200)
    return time.monotonic() - start


def site_packages(venv: Path) -> Path:
    (sp,) = (venv / "lib").glob("python3*/site-packages")
    return sp


def tree_bytes(path: Path) -> tuple[int, int]:
    """(bytes of every file, files), symlinks not followed."""
    total = files = 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            st = os.lstat(os.path.join(dirpath, name))
            total += st.st_size
            files += 1
    return total, files


def distributions(venv: Path) -> list[str]:
    out = run([venv / "bin" / "python", "-m", "pip", "list", "--format", "json",
               "--disable-pip-version-check"], env=clean_env()).stdout
    return sorted(f"{d['name']}=={d['version']}" for d in json.loads(out)
                  if d["name"].lower() not in ("pip", "setuptools"))


def wall(cmd, cwd: Path) -> float:
    start = time.perf_counter()
    run(cmd, env=clean_env(), cwd=cwd)
    return time.perf_counter() - start


def peak_rss_mb(cmd, cwd: Path, timeout: float = 300) -> tuple[float, str]:
    """Peak resident set size of ``cmd`` (its own, from wait4), and its stderr."""
    with open(cwd / "rss.stderr", "w+") as err:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=err,
                                env=clean_env(), cwd=cwd)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit(f"{cmd} did not finish in {timeout} s")
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{text[-3000:]}")
    return usage.ru_maxrss / 1024, text


def wait_quiet(limit: float, timeout: float = 600) -> float:
    """Seconds waited until the 1-minute load average fell below ``limit`` (or ``timeout``)."""
    start = time.monotonic()
    while os.getloadavg()[0] >= limit and time.monotonic() - start < timeout:
        time.sleep(5)
    return time.monotonic() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_urls(state_dir: Path) -> dict:
    out = run([sys.executable, "-m", "dsbra", "cluster", "env", "--json", "--state-dir", state_dir]).stdout
    env = json.loads(out)
    return bundled_cluster_section(env) | {"lock_path": None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/dsbra-bench-install"),
                    help="Scratch directory: the build venv, the wheel, the three venvs.")
    ap.add_argument("--repeats", type=int, default=9, help="Timed start-up runs per command and install.")
    ap.add_argument("--rss-repeats", type=int, default=3, help="dsbra run --once runs per install.")
    ap.add_argument("--state-dir", type=Path, default=None,
                    help="State dir of a running bundled cluster for dsbra run --once (none: no daemon round).")
    ap.add_argument("--reuse-venvs", action="store_true",
                    help="Keep the wheel and venvs of an earlier run in --work (measure again only).")
    ap.add_argument("--quiet-load", type=float, default=1.5,
                    help="Before timing, wait (up to 10 min) until the 1-minute load average is below this.")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    seconds = {}
    if args.reuse_venvs and (old := args.out / "install.json").exists():
        (wheel,) = (work / "dist").glob("dsbra-*.whl")
        seconds = json.loads(old.read_text())["venv_seconds"]
    else:
        print("building the wheel (python -m build) ...", file=sys.stderr)
        wheel = build_wheel(work)
    installs = {"empty": None, "default": str(wheel), "full": f"{wheel}[all]"}
    venvs = {name: work / f"venv-{name}" for name in installs}
    for name, req in installs.items():
        if name in seconds and (venvs[name] / "bin" / "python").exists():
            continue
        print(f"venv {name}: pip install {req or '(nothing)'} ...", file=sys.stderr)
        seconds[name] = round(make_venv(venvs[name], req), 1)

    size = {}
    for name, venv in venvs.items():
        total, files = tree_bytes(site_packages(venv))
        size[name] = {"site_packages_bytes": total, "files": files}
    for name in ("default", "full"):
        size[name]["minus_empty_venv_bytes"] = size[name]["site_packages_bytes"] - size["empty"]["site_packages_bytes"]
        size[name]["distributions"] = distributions(venvs[name])
    absent = run([venvs["default"] / "bin" / "python", "-c",
                  "import importlib.util as u; print([m for m in %r if u.find_spec(m)])" % (EXTRAS_PACKAGES,)],
                 env=clean_env()).stdout.strip()
    if absent != "[]":
        raise SystemExit(f"the default install has extras' packages: {absent}")

    commands = {
        "dsbra run --help": lambda v: [v / "bin" / "dsbra", "run", "--help"],
        "python -c 'import dsbra.cli'": lambda v: [v / "bin" / "python", "-c", "import dsbra.cli"],
        "python -c 'import dsbra.daemon.service'": lambda v: [v / "bin" / "python", "-c",
                                                              "import dsbra.daemon.service"],
    }
    start = {c: {"default": [], "full": []} for c in commands}
    load = {"waited_s": round(wait_quiet(args.quiet_load), 1), "before": os.getloadavg()[0]}
    print(f"start time: {args.repeats} runs of {len(commands)} commands x 2 installs ...", file=sys.stderr)
    for label, cmd in commands.items():
        for name in ("default", "full"):
            wall(cmd(venvs[name]), work)  # warm-up: page cache
    for i in range(args.repeats):
        order = ("default", "full") if i % 2 == 0 else ("full", "default")
        for label, cmd in commands.items():
            for name in order:
                start[label][name].append(wall(cmd(venvs[name]), work))
    start = {c: {n: repeats_summary(v, 3) for n, v in by.items()} for c, by in start.items()}
    load["after"] = os.getloadavg()[0]

    memory = {}
    if args.state_dir is not None:
        urls = cluster_urls(args.state_dir)
        runs = {"default": [], "full": []}
        print(f"memory: {args.rss_repeats} x dsbra run --once per install against {urls['rm']} ...",
              file=sys.stderr)
        for i in range(args.rss_repeats):
            for name in (("default", "full") if i % 2 == 0 else ("full", "default")):
                cfg = work / f"dsbra-{name}.yaml"
                cfg.write_text(json.dumps({
                    "mode": "dry-run", "interval_s": 10, "poll_s": 2, "state_dir": str(work / f"state-{name}-{i}"),
                    "cluster": urls, "http": {"enabled": True, "host": "127.0.0.1", "port": free_port()}}))
                mb, text = peak_rss_mb([venvs[name] / "bin" / "dsbra", "run", "--config", cfg, "--once"], work)
                if "round=1 blocks=" not in text:
                    raise SystemExit(f"no round logged by the {name} install:\n{text[-2000:]}")
                runs[name].append(mb)
        memory["dsbra run --once (peak RSS, MB)"] = {n: repeats_summary(v, 1) for n, v in runs.items()}
    loaded = {"default": [], "full": []}
    for i in range(args.rss_repeats):
        for name in ("default", "full"):
            mb, _ = peak_rss_mb([venvs[name] / "bin" / "python", "-c", "import dsbra.daemon.service"], work)
            loaded[name].append(mb)
    memory["python -c 'import dsbra.daemon.service' (peak RSS, MB)"] = {n: repeats_summary(v, 1) for n, v in loaded.items()}

    doc = {
        "command": " ".join(["python", "benchmarks/bench_install.py", *sys.argv[1:]]),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "load_during_start_timing": {k: round(v, 2) for k, v in load.items()},
        "wheel": {"name": wheel.name, "bytes": wheel.stat().st_size},
        "installs": {"default": "pip install <wheel>", "full": "pip install '<wheel>[all]' (matplotlib, docker, "
                     "pyhive, thrift: the dependencies before issue 23)", "empty": "python -m venv (pip, setuptools)"},
        "venv_seconds": seconds,
        "size": size,
        "start_seconds": start,
        "memory_mb": memory,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "install.json").write_text(json.dumps(doc, indent=1) + "\n")
    (args.out / "install.md").write_text(markdown(doc))
    print(markdown(doc))


def markdown(doc: dict) -> str:
    mb = lambda b: f"{b / 1e6:.1f} MB"  # noqa: E731
    s = doc["size"]
    lines = [
        "# The default install against the full one (issue 23)", "",
        f"`{doc['command']}` ({doc['date']}, {doc['machine']['cpus']} CPUs, Python {doc['machine']['python']}). "
        "Default: the wheel alone (the daemon and its CLI); "
        "full: the wheel with `[all]` (matplotlib, docker, pyhive, thrift: what `pip install dsbra` pulled "
        f"before issue 23). The wheel: `{doc['wheel']['name']}`, {doc['wheel']['bytes'] / 1e3:.0f} kB.", "",
        "## Installed size (site-packages of a fresh venv)", "",
        "| install | site-packages | minus an empty venv's (pip, setuptools) | files | distributions |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in ("default", "full"):
        lines.append(f"| {name} | {mb(s[name]['site_packages_bytes'])} | {mb(s[name]['minus_empty_venv_bytes'])} | "
                     f"{s[name]['files']} | {len(s[name]['distributions'])} |")
    extra = sorted(set(s["full"]["distributions"]) - set(s["default"]["distributions"]))
    lines += ["", f"The full install adds: {', '.join(extra)}.", "",
              f"Default install's distributions: {', '.join(s['default']['distributions'])}.", "",
              "## Start time (wall seconds; median, min-max of the runs)", "",
              "| command | default | full |", "| --- | ---: | ---: |"]
    for cmd, by in doc["start_seconds"].items():
        cells = [f"{by[n]['median']:.3f} ({by[n]['min']:.3f}-{by[n]['max']:.3f})" for n in ("default", "full")]
        lines.append(f"| `{cmd}` | {cells[0]} | {cells[1]} |")
    runs = len(next(iter(doc["start_seconds"].values()))["default"]["runs"])
    ld = doc["load_during_start_timing"]
    lines += ["", f"{runs} runs of each after one warm-up, the two installs alternating; 1-minute load "
              f"average {ld['before']:.2f} before, {ld['after']:.2f} after (waited {ld['waited_s']:.0f} s for "
              "it to fall). Both installs import the same modules for these commands (the extras' packages "
              "were already imported only by the commands that need them), so the times differ by noise.", "",
              "## Memory (peak RSS of the process, MB; median, min-max)", "",
              "| what | default | full |", "| --- | ---: | ---: |"]
    for what, by in doc["memory_mb"].items():
        cells = [f"{by[n]['median']:.1f} ({by[n]['min']:.1f}-{by[n]['max']:.1f})" for n in ("default", "full")]
        lines.append(f"| {what} | {cells[0]} | {cells[1]} |")
    lines += ["", "`dsbra run --once`: one dry-run round of a 10 s window against the bundled cluster "
              "(idle: no jobs), its HTTP endpoint on.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
