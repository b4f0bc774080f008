"""The /proc readings behind benchmarks/job_cpu_by_process.py: a Java command line's main class,
and a process's CPU seconds, read from this very process."""

from __future__ import annotations

import os
import subprocess
import sys

from dsbra.cluster.processes import cpu_seconds, java_main_class


def test_the_main_class_is_the_first_argument_after_the_options_and_the_class_path():
    yarn_child = [b"/usr/lib/jvm/java-17/bin/java", b"-Xmx307m", b"-Djava.net.preferIPv4Stack=true",
                  b"-cp", b"/conf:/lib/*", b"org.apache.hadoop.mapred.YarnChild", b"10.77.0.11", b"40151"]
    assert java_main_class(yarn_child) == "org.apache.hadoop.mapred.YarnChild"
    client = [b"java", b"-classpath", b"a.jar", b"org.apache.hadoop.util.RunJar", b"grep.jar"]
    assert java_main_class(client) == "org.apache.hadoop.util.RunJar"
    assert java_main_class([b"/usr/bin/python3", b"-m", b"dsbra"]) is None
    assert java_main_class([]) is None


def test_cpu_seconds_grow_with_work_and_end_with_the_process():
    before = cpu_seconds(os.getpid())
    sum(i * i for i in range(3_000_000))
    assert cpu_seconds(os.getpid()) > before >= 0
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert cpu_seconds(child.pid) is None
