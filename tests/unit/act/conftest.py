"""What the acting tests share: a stand-in for the NameNode's replication setting."""

from __future__ import annotations

import pytest

from dsbra.errors import HadoopError


class FakeHdfs:
    def __init__(self, replication: dict[str, int], replicas: dict[str, list[int]] | None = None):
        self.repl, self.replicas, self.sent = replication, replicas or {}, []

    def replication(self, path):
        if path not in self.repl:
            raise HadoopError(f"{path} gone", exception="FileNotFoundException")
        return self.repl[path]

    def set_replication(self, path, r):
        self.sent.append((path, r))
        self.repl[path] = r

    def live_replicas(self, path):
        return self.replicas.get(path, [self.repl[path]])


@pytest.fixture
def fake_hdfs():
    """``FakeHdfs``: each file's replication setting and live replica counts, nothing else of
    the NameNode (the journal and what acts through it are the parts tested)."""
    return FakeHdfs
