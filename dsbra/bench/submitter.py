"""A replay's jobs submitted from one JVM (java/GrepSubmitter.java), each at its time.

A job client per job is a JVM that starts, submits and then waits for its job: on a 2-core
cluster forty of them cost each job seconds of CPU before its ApplicationMaster started. The
submitter is one JVM for the whole schedule: it submits without waiting and follows every job
to its end, printing one line per event, which :class:`ScheduleClient` reads into a
:class:`SubmittedJob` per job.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from dsbra.bench.grepjar import SUBMITTER_CLASS
from dsbra.cluster.jobs import client_command
from dsbra.cluster.paths import StateLayout


@dataclass
class SubmittedJob:
    """One job of the schedule as the submitter reported it."""

    index: int
    submitting_ms: int | None = None  #: when the submitter began submitting it (epoch ms)
    job_id: str | None = None
    state: str | None = None  #: SUCCEEDED, FAILED, KILLED, or SUBMIT_FAILED
    error: str = ""

    @property
    def ended(self) -> bool:
        return self.state is not None

    @property
    def ok(self) -> bool:
        return self.state == "SUCCEEDED"


class ScheduleClient:
    """The submitter JVM of one schedule: ``jobs[i]`` is job i's record, filled as events come."""

    def __init__(self, layout: StateLayout, jar: Path, plan: list[tuple[float, str, str, str]], t0_ms: int,
                 *, queue: str | None = None, conf: dict[str, str] | None = None, log_path: Path):
        """``plan``: per job (offset_s from ``t0_ms``, name, comma-separated inputs, output);
        ``conf``: Hadoop properties set on every job."""
        conf = {**(conf or {}), "dsbra.submit.t0.ms": str(t0_ms)}
        if queue:
            conf["mapreduce.job.queuename"] = queue
        cmd = client_command(layout, [SUBMITTER_CLASS], jar, conf)
        self.jobs = [SubmittedJob(i) for i in range(len(plan))]
        self.log_path = log_path
        lines = "".join(f"{i}\t{round(offset * 1000)}\t{name}\t{inputs}\t{output}\n"
                        for i, (offset, name, inputs, output) in enumerate(plan))
        self._log = open(log_path, "w")
        self.process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                        text=True, start_new_session=True)
        self.process.stdin.write(lines)
        self.process.stdin.close()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            fields = line.rstrip("\n").split("\t")
            event, args = fields[0], fields[1:]
            if event == "submitting" and len(args) == 2:
                self.jobs[int(args[0])].submitting_ms = int(args[1])
            elif event == "submitted" and len(args) == 3:
                self.jobs[int(args[0])].job_id = args[1]
            elif event == "finished" and len(args) == 4:
                self.jobs[int(args[0])].state = args[2]
            elif event == "failed" and len(args) == 2:
                job = self.jobs[int(args[0])]
                job.state, job.error = "SUBMIT_FAILED", args[1]
            else:
                self._log.write(line)  # Hadoop's own client output, kept in the log

    @property
    def running(self) -> bool:
        """True until every job ended or the submitter exited."""
        return self.process.poll() is None and not all(j.ended for j in self.jobs)

    def close(self, timeout_s: float = 30) -> int:
        """Wait for the submitter to exit (kill it after ``timeout_s``); its exit code."""
        try:
            rc = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            rc = self.process.wait()
        self._reader.join(timeout=10)
        self._log.close()
        return rc


def follow(client: ScheduleClient, tick, *, timeout_s: float, interval_s: float = 2.0,
           until=None) -> bool:
    """Call ``tick()`` every ``interval_s`` until the schedule ended, at most ``timeout_s``, or
    until ``until()`` (if given) is true; returns whether ``until`` ended it."""
    deadline = time.monotonic() + timeout_s
    while client.running and time.monotonic() < deadline:
        tick()
        if until is not None and until():
            return True
        time.sleep(interval_s)
    tick()
    return False


def run_schedule(layout: StateLayout, jar: Path, plan: list[tuple[float, str, str, str]], t0_ms: int, tick, *,
                 timeout_s: float, log_path: Path, queue: str | None = None,
                 conf: dict[str, str] | None = None) -> list[SubmittedJob]:
    """Submit ``plan`` from one submitter JVM (see :class:`ScheduleClient`), call ``tick()``
    until every job ended (at most ``timeout_s``), and return the jobs' records."""
    client = ScheduleClient(layout, jar, plan, t0_ms, queue=queue, conf=conf, log_path=log_path)
    try:
        follow(client, tick, timeout_s=timeout_s)
    finally:
        client.close()
    return client.jobs
