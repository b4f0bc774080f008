"""The bundled cluster, brought up once per test session.

DSBRA_TEST_CLUSTER controls it:
  unset    reuse a cluster that is already up, else start one and tear it down at the end
           (unless another test session still uses it)
  reuse    reuse a cluster that is already up, else start one; leave it up afterwards
  fresh    `down` whatever runs, start a new one, tear it down at the end
The cluster's state dir is $DSBRA_STATE_DIR (default .dsbra/cluster, or .dsbra/cluster-slot<N>
with DSBRA_TEST_SLOT=N; see netslots.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

import pytest

from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout, default_state_dir, project_root
from dsbra.cluster.spec import ClusterSpec
from netslots import MAIN, SECOND_LAST, SECOND_LOCK, SLOT

WORKERS = int(os.environ.get("DSBRA_TEST_WORKERS", "4"))
if SLOT and "DSBRA_STATE_DIR" not in os.environ:
    # the CLI subprocesses of the tests must find this slot's cluster too
    os.environ["DSBRA_STATE_DIR"] = str(project_root() / ".dsbra" / f"cluster-slot{SLOT}")


@contextlib.contextmanager
def _second_slot(path: Path):
    """The SECOND network of netslots.py, for a cluster whose state dir is ``path``.
    Its names are fixed, so test sessions running at the same time take turns; a session
    killed half-way left its state dir in LAST, which we bring down first."""
    with open(SECOND_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if SECOND_LAST.exists():
            cl.down(StateLayout(Path(SECOND_LAST.read_text().strip())))
        SECOND_LAST.write_text(str(path))
        yield path
        SECOND_LAST.unlink(missing_ok=True)


@pytest.fixture
def second_cluster_slot(tmp_path):
    """A state dir for a second cluster, one test's own."""
    with _second_slot(tmp_path) as path:
        yield path


@pytest.fixture(scope="module")
def second_cluster_slot_module(tmp_path_factory):
    """A state dir for a second cluster the tests of one module share (one bring-up)."""
    with _second_slot(tmp_path_factory.mktemp("second-cluster")) as path:
        yield path


@pytest.fixture(scope="session")
def cluster_layout() -> StateLayout:
    return StateLayout(default_state_dir().resolve())


@pytest.fixture(scope="session")
def cluster(cluster_layout) -> dict:
    """`dsbra cluster env --json` of a running cluster."""
    if os.geteuid() != 0:
        pytest.skip("the bundled cluster needs root (network namespaces)")
    mode = os.environ.get("DSBRA_TEST_CLUSTER", "")
    if mode not in ("", "reuse", "fresh"):
        pytest.fail(f"DSBRA_TEST_CLUSTER must be unset, 'reuse' or 'fresh', got {mode!r}")
    if mode == "fresh":
        cl.down(cluster_layout)
    # every test session holds a shared lock while it uses the cluster, so the session that
    # started it tears it down only if no other session still uses it
    cluster_layout.root.mkdir(parents=True, exist_ok=True)
    users = open(cluster_layout.root / ".test-sessions", "a")
    fcntl.flock(users, fcntl.LOCK_SH)
    started = False
    if cl.status(cluster_layout).state != "up":
        # with YARN's shared cache, as a cluster serving Hive runs (test_bench_hive.py)
        _, started = cl.up(ClusterSpec(workers=WORKERS, **MAIN, shared_cache=True), cluster_layout,
                           log=lambda *_: None)
    yield cl.env(cluster_layout)
    fcntl.flock(users, fcntl.LOCK_UN)
    if started and mode != "reuse":
        try:
            fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another test session still uses it: leave it up
        else:
            cl.down(cluster_layout)
    users.close()


@pytest.fixture(scope="session")
def webhdfs(cluster):
    from hdfs import InsecureClient

    return InsecureClient(cluster["namenode"], user="root")
