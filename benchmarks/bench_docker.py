"""Benchmark hadoop-docker/: image build (cold and cached), image sizes, compose bring-up time.

Runs its own compose project (`dsbra-bench`) on its own subnet (172.29.9.0/24), so the test
sessions' projects (172.29.<slot>.0/24) stay untouched. Bring-up is `docker compose up -d`
until every DataNode and NodeManager registered, HDFS left safe mode and the JobHistoryServer
answers (the same readiness check as `dsbra cluster up`); each run starts from nothing
(`down -v`: new containers, new HDFS).

    .venv/bin/python benchmarks/bench_docker.py --repeats 3 [--cold]
writes benchmarks/results/docker.json and docker.md. --cold removes both images first and
times the whole build (debootstrap, apt, wheelhouse, jars).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from dsbra.cluster.cluster import readiness
from dsbra.cluster.docker import (BASE_IMAGE, build, docker_client, image_tag, render_compose,
                                  work_dir)
from dsbra.cluster.spec import ClusterSpec
from dsbra.stats import repeats_summary

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "dsbra-bench"
SUBNET = "172.29.9.0/24"


def compose(folder: Path, *args: str) -> None:
    subprocess.run(["docker", "compose", *args], cwd=folder, check=True, capture_output=True)


def bring_up(folder: Path, spec: ClusterSpec, timeout: float = 600) -> float:
    compose(folder, "down", "-v", "-t", "10")
    start = time.monotonic()
    compose(folder, "up", "-d")
    while readiness(spec):
        if time.monotonic() - start > timeout:
            raise SystemExit(f"not ready after {timeout} s: {readiness(spec)}")
        time.sleep(1)
    return time.monotonic() - start


def idle_memory_mib(folder: Path) -> float:
    """Sum of the project's containers' memory use (docker stats), MiB."""
    ids = subprocess.run(["docker", "compose", "ps", "-q"], cwd=folder, capture_output=True, text=True,
                         check=True).stdout.split()
    client = docker_client()
    total = 0
    for cid in ids:
        stats = client.containers.get(cid).stats(stream=False)["memory_stats"]
        total += stats.get("usage", 0) - stats.get("stats", {}).get("cache", 0)
    return total / 2**20


def layer_step(created_by: str) -> str:
    """A history entry as a reader knows it: the Dockerfile step, shortened."""
    step = " ".join(created_by.replace("/bin/sh -c #(nop) ", "").replace("/bin/sh -c ", "RUN ")
                    .split())
    step = re.sub(r"\b(?:file|dir):[0-9a-f]{64} ", "", step)  # COPY's content hash
    if not step:
        return "the imported base root file system (debootstrap, docker import)"
    return step if len(step) <= 80 else step[:77] + "..."


def image_layers(client) -> list[dict]:
    return [{"mb": round(layer["Size"] / 1e6), "step": layer_step(layer["CreatedBy"])}
            for layer in client.api.history(image_tag()) if layer["Size"] > 1e6]


def write_report(results: dict, out: Path) -> str:
    """docker.json and docker.md from one run's results; returns the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "docker.json").write_text(json.dumps(results, indent=2) + "\n")
    machine, load = results["machine"], results["loadavg_1m"]
    lines = [f"# hadoop-docker benchmark ({results['measured_at']})", "",
             f"Command: `{results['command']}`; {results['workers']} workers, engine "
             f"{machine['engine']}, {machine['cpus']} CPUs, 1-minute load average "
             f"{load['before']} before, {load['after']} after.", "",
             "| metric | median | min | max | runs |", "| --- | --- | --- | --- | --- |"]
    for key in ("up_seconds", "idle_memory_mib"):
        v = results[key]
        lines.append(f"| {key} | {v['median']} | {v['min']} | {v['max']} | {v['runs']} |")
    lines += ["", "| build | seconds |", "| --- | --- |"]
    lines += [f"| {key} | {results[key]} |" for key in ("cold_build_seconds", "cached_build_seconds")
              if key in results]
    lines += ["", "| image | MB |", "| --- | --- |"]
    lines += [f"| {tag} | {mb} |" for tag, mb in results["image_mb"].items()]
    lines += ["", f"Layers of {image_tag()} over 1 MB:", "", "| MB | step |", "| --- | --- |"]
    lines += [f"| {layer['mb']} | `{layer['step']}` |" for layer in results["layers_over_1mb"]]
    lines += ["", results["notes"], ""]
    text = "\n".join(lines)
    (out / "docker.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="cold bring-ups")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--cold", action="store_true", help="remove the images first and time the full build")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds idle before measuring memory")
    args = parser.parse_args()

    client = docker_client()
    load_before = os.getloadavg()
    builds = {}
    if args.cold:
        for tag in (image_tag(), BASE_IMAGE):
            subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)
        shutil.rmtree(work_dir() / "context", ignore_errors=True)
        builds["cold_build_seconds"] = round(build(log=lambda *_: None).seconds, 1)
    builds["cached_build_seconds"] = round(build(log=lambda *_: None).seconds, 1)

    sizes = {tag: round(client.images.get(tag).attrs["Size"] / 1e6) for tag in (BASE_IMAGE, image_tag())}
    layers = image_layers(client)

    spec = ClusterSpec(workers=args.workers, replication=min(3, args.workers), subnet=SUBNET)
    folder = work_dir() / PROJECT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "compose.yaml").write_text(render_compose(args.workers, SUBNET))
    up_times, memory = [], []
    try:
        for _ in tqdm(range(args.repeats), desc="compose up", file=sys.stderr):
            up_times.append(bring_up(folder, spec))
            time.sleep(args.settle)
            memory.append(idle_memory_mib(folder))
    finally:
        compose(folder, "down", "-v", "-t", "10")

    results = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/bench_docker.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release(),
                    "engine": client.version().get("Version")},
        "workers": args.workers,
        **builds,
        "image_mb": sizes,
        "layers_over_1mb": layers,
        "up_seconds": repeats_summary(up_times, 1),
        "idle_memory_mib": repeats_summary(memory, 1),
        "loadavg_1m": {"before": round(load_before[0], 1), "after": round(os.getloadavg()[0], 1)},
        "notes": "up: `docker compose up -d` from nothing (down -v before) until every DataNode and NodeManager "
                 "registered, HDFS left safe mode and the JHS answers. Memory: the containers' usage less page "
                 f"cache (docker stats) after {args.settle:.0f} s idle. Sizes: uncompressed, as `docker images`. "
                 "The machine is shared with other work: expect noise.",
    }
    print(write_report(results, ROOT / "benchmarks" / "results"))


if __name__ == "__main__":
    main()
