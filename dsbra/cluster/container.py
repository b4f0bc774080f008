"""Entry point of the hadoop-docker image: run one daemon of the same cluster in a container.

The compose file gives each container the address the netns cluster would give that host
(master 10.77.0.1, worker i 10.77.0.(10+i)), so the configs rendered here from conf-templates/
are the very ones `dsbra cluster up` renders. Usage inside the image:

    python -m dsbra.cluster.container namenode|resourcemanager|historyserver
    python -m dsbra.cluster.container worker <i>      # DataNode + NodeManager of worker i
    python -m dsbra.cluster.container ... --dry-run   # print the commands, start nothing
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from dsbra.cluster.config import host_paths, render_host
from dsbra.cluster.daemons import Daemon, daemon_env, java_command
from dsbra.cluster.install import HadoopInstall, find_java
from dsbra.cluster.paths import StateLayout, hadoop_home
from dsbra.cluster.spec import ClusterSpec


def plan(role: str, index: int | None, spec: ClusterSpec, layout: StateLayout, install: HadoopInstall,
         java_home: Path) -> list[tuple[Daemon, list[str]]]:
    """Render the host's configs and return the daemons to run with their command lines."""
    if role == "worker":
        worker = spec.worker_list[index - 1]
        host, daemons = worker.name, [Daemon(f"datanode-{worker.name}", "datanode", worker.name, None),
                                      Daemon(f"nodemanager-{worker.name}", "nodemanager", worker.name, None)]
    else:
        worker, host, daemons = None, "master", [Daemon(role, role, "master", None)]
    conf = layout.conf(host)
    conf.mkdir(parents=True, exist_ok=True)
    files = render_host(spec, "worker" if worker else "master", host_paths(layout, host, install.lib),
                        str(java_home), worker)
    for name, text in files.items():
        (conf / name).write_text(text)
    commands = []
    if role == "namenode" and not (layout.data("master") / "namenode" / "current").exists():
        fmt = java_command(spec, layout, install, java_home, daemons[0], ["-format", "-force", "-nonInteractive"],
                           log_name="namenode-format")
        commands.append((Daemon("namenode-format", "namenode", "master", None), fmt))
    commands += [(d, java_command(spec, layout, install, java_home, d)) for d in daemons]
    return commands


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run one host of the dsbra cluster in a container.")
    parser.add_argument("role", choices=["namenode", "resourcemanager", "historyserver", "worker"])
    parser.add_argument("index", type=int, nargs="?", help="worker number (1-based)")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("DSBRA_WORKERS", "4")))
    parser.add_argument("--state-dir", default=os.environ.get("DSBRA_STATE_DIR", "/dsbra"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.role == "worker" and not (args.index and 1 <= args.index <= args.workers):
        parser.error(f"worker needs an index between 1 and {args.workers}")
    spec = ClusterSpec(workers=args.workers, replication=min(3, args.workers))
    layout = StateLayout(Path(args.state_dir))
    layout.logs.mkdir(parents=True, exist_ok=True)
    java_home = find_java()
    install = HadoopInstall(hadoop_home(spec.hadoop_version))
    commands = plan(args.role, args.index, spec, layout, install, java_home)
    if args.dry_run:
        for daemon, cmd in commands:
            print(daemon.name, " ".join(cmd))
        return
    env = daemon_env(java_home)
    procs = []
    for daemon, cmd in commands:
        if daemon.name == "namenode-format":
            subprocess.run(cmd, env=env, check=True)
        else:
            procs.append(subprocess.Popen(cmd, env=env))
    # the container lives as long as its daemons; one exiting ends it (compose restarts it)
    while procs:
        pid, status = os.wait()
        if any(p.pid == pid for p in procs):
            sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
