"""Entry point of the hadoop-docker image: run one host of the same cluster in a container.

The compose file (dsbra.cluster.docker) gives each container the address the netns cluster
would give that host (master .1, worker i .(10+i) of --subnet), so the configs rendered here
from conf-templates/ are the very ones `dsbra cluster up` renders. Usage inside the image:

    python -m dsbra.cluster.container namenode|resourcemanager|historyserver [--workers N --subnet S]
        [--scheduler fair|capacity --node-locality-delay N --rack-locality-additional-delay N]
        [--placement default|heat [--heat-uri URI]]
    python -m dsbra.cluster.container worker <i>      # DataNode + NodeManager of worker i
    python -m dsbra.cluster.container ... --dry-run   # print the commands, start nothing
    python -m dsbra.cluster.container job grep IN OUT REGEX [--queue Q]   # a MapReduce job client

The master's containers share the state volume (/dsbra): the NameNode's container also writes
the client conf and a state file there, so a job client in any of them (`job`, or
dsbra.cluster.jobs with state_dir=/dsbra) submits to this cluster.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from dsbra.cluster import state as st
from dsbra.cluster.confdir import host_paths, render_host
from dsbra.cluster.daemons import Daemon, daemon_env, java_command
from dsbra.cluster.install import HadoopInstall, find_java
from dsbra.cluster.paths import StateLayout, hadoop_home
from dsbra.cluster.spec import BLOCK_PLACEMENTS, SCHEDULERS, ClusterSpec
from dsbra.errors import DsbraError


def _write_conf(spec: ClusterSpec, layout: StateLayout, host: str, role: str, install: HadoopInstall,
                java_home: Path, heat_uri: str | None, worker=None) -> None:
    """Render one host's conf dir; atomic per file, as the master's containers share it.
    ``heat_uri``: where the placement plugin reads heat (None: the state volume's heat file)."""
    conf = layout.conf(host)
    conf.mkdir(parents=True, exist_ok=True)
    paths = host_paths(layout, host, install.lib)
    if heat_uri:
        paths = dataclasses.replace(paths, heat_uri=heat_uri)
    files = render_host(spec, role, paths, str(java_home), worker)
    for name, text in files.items():
        # a name of its own: every container's process is PID 1, so a PID would not tell the
        # master's three containers apart (they raced on ".hdfs-site.xml.1")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=conf)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, conf / name)


def plan(role: str, index: int | None, spec: ClusterSpec, layout: StateLayout, install: HadoopInstall,
         java_home: Path, heat_uri: str | None = None) -> list[tuple[Daemon, list[str]]]:
    """Render the host's configs and return the daemons to run with their command lines."""
    if role == "worker":
        worker = spec.worker_list[index - 1]
        host, daemons = worker.name, [Daemon(f"datanode-{worker.name}", "datanode", worker.name, None),
                                      Daemon(f"nodemanager-{worker.name}", "nodemanager", worker.name, None)]
    else:
        worker, host, daemons = None, "master", [Daemon(role, role, "master", None)]
    _write_conf(spec, layout, host, "worker" if worker else "master", install, java_home, heat_uri, worker)
    commands = []
    if role == "namenode":
        _write_conf(spec, layout, "client", "client", install, java_home, heat_uri)
        if not (layout.data("master") / "namenode" / "current").exists():
            fmt = java_command(spec, layout, install, java_home, daemons[0],
                               ["-format", "-force", "-nonInteractive"], log_name="namenode-format")
            commands.append((Daemon("namenode-format", "namenode", "master", None), fmt))
    commands += [(d, java_command(spec, layout, install, java_home, d)) for d in daemons]
    return commands


def _client_state(spec: ClusterSpec, layout: StateLayout, install: HadoopInstall, java_home: Path) -> None:
    """What dsbra.cluster.jobs needs to submit here: the spec, the jars, Java, phase 'up'."""
    st.save(layout.state_file, st.new(spec.to_dict(), java_home=str(java_home), hadoop_home=str(install.home),
                                      phase="up", docker=True))


def _run_job(args: list[str], queue: str | None, layout: StateLayout) -> int:
    from dsbra.cluster.jobs import submit_job

    run = submit_job(args, queue=queue, state_dir=layout.root)
    result = run.wait(check=False)
    sys.stdout.write(result.log)
    print("job ids:", " ".join(result.job_ids))
    return result.returncode


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workers", type=int, default=4)
    common.add_argument("--subnet", default=ClusterSpec.subnet, help="the cluster network; master .1, worker i .(10+i)")
    common.add_argument("--scheduler", choices=SCHEDULERS, default=ClusterSpec.scheduler)
    common.add_argument("--node-locality-delay", type=int, default=ClusterSpec.node_locality_delay)
    common.add_argument("--rack-locality-additional-delay", type=int,
                        default=ClusterSpec.rack_locality_additional_delay)
    common.add_argument("--placement", choices=BLOCK_PLACEMENTS, default=ClusterSpec.block_placement,
                        help="the NameNode's block placement (heat: dsbra's plugin)")
    common.add_argument("--heat-uri", default=None,
                        help="where the plugin reads heat (file: or http:) [default: <state dir>/placement/heat.json]")
    common.add_argument("--state-dir", default=os.environ.get("DSBRA_STATE_DIR", "/dsbra"))
    common.add_argument("--dry-run", action="store_true", help="print the commands, start nothing")
    parser = argparse.ArgumentParser(description="Run one host of the dsbra cluster in a container.")
    roles = parser.add_subparsers(dest="role", required=True)
    for role in ("namenode", "resourcemanager", "historyserver"):
        roles.add_parser(role, parents=[common])
    roles.add_parser("worker", parents=[common]).add_argument("index", type=int, help="1-based")
    job = roles.add_parser("job", parents=[common], help="a MapReduce examples job, e.g. job grep /in /out x")
    job.add_argument("--queue", help="the scheduler's queue")
    job.add_argument("tool", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        spec = ClusterSpec(workers=args.workers, replication=min(3, args.workers), subnet=args.subnet,
                           scheduler=args.scheduler, node_locality_delay=args.node_locality_delay,
                           rack_locality_additional_delay=args.rack_locality_additional_delay,
                           block_placement=args.placement)
    except DsbraError as exc:
        parser.error(str(exc))
    layout = StateLayout(Path(args.state_dir))
    if args.role == "job":
        if not args.tool:
            parser.error("job needs the tool and its arguments, e.g. job grep /in /out needle")
        sys.exit(_run_job(args.tool, args.queue, layout))
    index = getattr(args, "index", None)
    if args.role == "worker" and not 1 <= index <= args.workers:
        parser.error(f"worker needs an index between 1 and {args.workers}")
    layout.logs.mkdir(parents=True, exist_ok=True)
    java_home = find_java()
    install = HadoopInstall(hadoop_home(spec.hadoop_version))
    commands = plan(args.role, index, spec, layout, install, java_home, args.heat_uri)
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
    if args.role == "namenode":
        _client_state(spec, layout, install, java_home)

    def forward(signum, _frame):  # PID 1 has no default SIGTERM action: pass `docker stop` on
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    # the container lives as long as its daemons; one exiting ends it (and stops the other)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            sys.exit(0)
        if any(p.pid == pid for p in procs):
            for proc in procs:
                if proc.pid != pid and proc.poll() is None:
                    proc.terminate()
            sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    try:
        main()
    except DsbraError as exc:
        sys.exit(f"dsbra: error: {exc}")
