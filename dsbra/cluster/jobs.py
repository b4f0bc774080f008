"""Submit MapReduce jobs to the bundled cluster from Python.

A job client is a JVM (`java -cp <client conf>:<jars> org.apache.hadoop.util.RunJar <jar> ...`)
started from the root namespace with the cluster's client conf dir. `submit_job` starts it and
returns at once (a `JobRun`); `run_grep` is the MapReduce examples' grep, waited for. The job
and application ids are parsed from the client's log as it runs.

    from dsbra.cluster.jobs import run_grep, submit_job
    result = run_grep("/data/in", "/data/out", "dsbra", queue="benchmark")
    result.job_ids      # ['job_..._0001', 'job_..._0002']  (grep runs a search and a sort job)
    run = submit_job(["grep", "/in", "/out", "x"], queue="benchmark")   # asynchronous
    run.wait(timeout=300)
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dsbra.cluster import security as sec
from dsbra.cluster import state as st
from dsbra.cluster.confdir import jvm_opts, jvm_security_opts
from dsbra.cluster.install import HadoopInstall
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import ClusterError, HadoopError, InputError

JOB_ID = re.compile(r"Running job: (job_\d+_\d+)")
APP_ID = re.compile(r"Submitted application (application_\d+_\d+)")
CLIENT_HEAP = "256m"


@dataclass
class JobResult:
    returncode: int
    job_ids: list[str]
    app_ids: list[str]
    log: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass
class JobRun:
    """A running job client. `wait()` for its result; `kill()` stops the client (not the job)."""

    args: list[str]
    process: subprocess.Popen
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None  # when poll() or wait() first saw the client exit

    def poll(self) -> int | None:
        rc = self.process.poll()
        if rc is not None and self.finished is None:
            self.finished = time.monotonic()
        return rc

    @property
    def job_ids(self) -> list[str]:
        return JOB_ID.findall(self._log())

    @property
    def app_ids(self) -> list[str]:
        return APP_ID.findall(self._log())

    def _log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def wait(self, timeout: float | None = None, check: bool = True) -> JobResult:
        try:
            rc = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise HadoopError(f"job client {' '.join(self.args[:3])} did not finish in {timeout} s; "
                              f"see {self.log_path}") from None
        if self.finished is None:
            self.finished = time.monotonic()
        text = self._log()
        result = JobResult(rc, JOB_ID.findall(text), APP_ID.findall(text), text,
                           self.finished - self.started)
        if check and rc != 0:
            raise HadoopError(f"job {' '.join(self.args[:3])} failed (exit {rc}): {_last_error(text)}; "
                              f"see {self.log_path}")
        return result

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def client_command(layout: StateLayout, args: list[str], jar: str | Path | None = None,
                   conf: dict[str, str] | None = None) -> list[str]:
    data = st.load(layout.state_file)
    if data is None or data.get("phase") != "up":
        raise ClusterError("the cluster is not up; start it with: dsbra cluster up")
    install = HadoopInstall(Path(data["hadoop_home"]))
    java = Path(data["java_home"]) / "bin" / "java"
    generic = [f"-D{k}={v}" for k, v in (conf or {}).items()]
    if args and generic:
        # generic options go right after the tool name (ToolRunner parses them there)
        args = [args[0], *generic, *args[1:]]
    spec = ClusterSpec.from_dict(data["spec"])
    return [
        str(java), f"-Xmx{CLIENT_HEAP}", *jvm_opts(),
        *jvm_security_opts(spec, str(sec.security_paths(layout).root)),
        "-cp", os.pathsep.join([str(layout.conf("client")), str(install.lib / "*")]),
        "org.apache.hadoop.util.RunJar", str(jar or install.examples_jar), *args,
    ]


def client_env(layout: StateLayout) -> dict[str, str]:
    """The environment of a client JVM of the cluster: on a --kerberos cluster, its client's
    ticket cache (Hadoop's login reads KRB5CCNAME) with a fresh ticket from the client keytab."""
    env = dict(os.environ)
    env.pop("CLASSPATH", None)
    data = st.load(layout.state_file)
    if data is not None and data["spec"].get("kerberos"):
        env.update(sec.client_login_env(sec.security_paths(layout)))
    return env


def submit_job(
    args: list[str],
    *,
    jar: str | Path | None = None,
    queue: str | None = None,
    name: str | None = None,
    conf: dict[str, str] | None = None,
    state_dir: Path | None = None,
    log_path: Path | None = None,
) -> JobRun:
    """Start a job client without waiting. args: the tool and its arguments (for the examples
    jar, e.g. ['grep', in, out, regex] or ['wordcount', in, out]); jar defaults to the
    MapReduce examples. queue/name/conf become -D generic options."""
    if not args:
        raise InputError("submit_job needs the job's arguments, e.g. ['grep', in, out, regex]")
    layout = StateLayout.at(state_dir)
    options = dict(conf or {})
    if queue:
        options["mapreduce.job.queuename"] = queue
    if name:
        options["mapreduce.job.name"] = name
    cmd = client_command(layout, list(args), jar, options)
    if log_path is None:
        jobs_dir = layout.root / "jobs"
        jobs_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f"{args[0]}-", suffix=".log", dir=jobs_dir)
        os.close(fd)
        log_path = Path(tmp)
    env = client_env(layout)
    with open(log_path, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
    return JobRun(list(args), process, log_path)


def submit_spaced(job_args: list[list[str]], gap_s: float, tick, *, interval_s: float = 2.0,
                  **submit) -> list[JobRun]:
    """Submit one job client per argument list, ``gap_s`` apart, and call ``tick(runs)`` every
    ``interval_s`` (a collector polls there) until every client has exited. ``submit``: the
    keyword arguments of :func:`submit_job`."""
    return submit_at(job_args, [i * gap_s for i in range(len(job_args))], tick,
                     interval_s=interval_s, **submit)


def submit_at(job_args: list[list[str]], offsets_s: list[float], tick, *, interval_s: float = 2.0,
              t0: float | None = None, job_names: list[str] | None = None, **submit) -> list[JobRun]:
    """Like :func:`submit_spaced`, each job ``offsets_s[i]`` seconds after ``t0`` (a
    time.monotonic() value; default now), in order; a job that is late is submitted at once.
    ``job_names``: each job's mapreduce.job.name."""
    def start(i: int) -> JobRun:
        name = job_names[i] if job_names else submit.get("name")
        return submit_job(job_args[i], **{**submit, "name": name})

    return start_at(start, offsets_s, tick, t0=t0, interval_s=interval_s)


def start_at(start, offsets_s: list[float], tick, *, t0: float | None = None, interval_s: float = 2.0) -> list:
    """Call ``start(i)`` ``offsets_s[i]`` seconds after ``t0`` (time.monotonic(); default now), in
    order, a late one at once, and ``tick(runs)`` every ``interval_s`` until every run it
    returned has ended (``run.poll()`` is not None). The schedule loop of a replay's clients."""
    runs: list = []
    begin = time.monotonic() if t0 is None else t0
    while len(runs) < len(offsets_s) or any(r.poll() is None for r in runs):
        while len(runs) < len(offsets_s) and time.monotonic() >= begin + offsets_s[len(runs)]:
            runs.append(start(len(runs)))
        tick(runs)
        wait = interval_s
        if len(runs) < len(offsets_s):
            wait = min(wait, max(0.0, begin + offsets_s[len(runs)] - time.monotonic()))
        time.sleep(wait)
    return runs


#: what the grep benchmark's lines are made of (no tab, no backslash)
PRINTABLE = "".join(chr(c) for c in range(33, 127) if chr(c) not in "\t\\")


def grep_lines(n: int, seed: int, match_rate: float = 0.01, match: str = "XYZ") -> bytes:
    """Input for the examples' grep in the Hive grep benchmark's format: a 10-character key, a
    tab, a 10-digit row id and 80 printable characters; about ``match_rate`` of the lines
    contain ``match``."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        value = "".join(rnd.choice(PRINTABLE) for _ in range(80))
        if rnd.random() < match_rate:
            k = rnd.randrange(0, 80 - len(match))
            value = value[:k] + match + value[k + len(match):]
        key = "".join(rnd.choice(PRINTABLE) for _ in range(10))
        out.append(f"{key}\t{i:010d}{value}\n")
    return "".join(out).encode()


def run_grep(input_path: str, output_path: str, regex: str, *, queue: str | None = None,
             conf: dict[str, str] | None = None, timeout: float = 600, state_dir: Path | None = None
             ) -> JobResult:
    """The MapReduce examples' grep (a search job, then a sort job), waited for."""
    return submit_job(["grep", input_path, output_path, regex], queue=queue, conf=conf,
                      state_dir=state_dir).wait(timeout=timeout)


def _last_error(text: str) -> str:
    for line in reversed(text.splitlines()):
        if "Exception" in line or " ERROR " in line:
            return line.strip()[:300]
    return "no error line in the client log"
