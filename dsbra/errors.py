"""The package's error tree: every failure a user can cause or meet is one of these.

The CLI turns any DsbraError into a one-line message and a non-zero exit code; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations


class DsbraError(Exception):
    """Base of every error dsbra raises on purpose."""

    exit_code = 1


class InputError(DsbraError):
    """Bad user input: a CLI argument, an input file, a value out of range."""

    exit_code = 2


class ConfigError(InputError):
    """A configuration key or value that does not validate."""


class StateError(DsbraError):
    """A persisted state file that cannot be read, or is of an unknown format version."""


class ClusterError(DsbraError):
    """The bundled cluster could not be set up, started, stopped or inspected."""


class HadoopError(DsbraError):
    """A Hadoop daemon answered with an error, was unreachable, or replied malformed.

    Like mtth/hdfs's HdfsError, it carries the Java exception name when the server sent one
    (for example ``SafeModeException``), so callers can branch on it.
    """

    def __init__(self, message: str, exception: str | None = None, status: int | None = None):
        super().__init__(message)
        self.exception = exception
        self.status = status


class SafetyError(DsbraError):
    """An action refused by a safety rail (safe mode, unhealthy cluster, budget, lock)."""
