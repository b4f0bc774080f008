"""The test clusters: the session's cluster in the MAIN network, and the SECOND network's.

DSBRA_TEST_CLUSTER controls the session's cluster:
  unset    reuse a cluster that is already up, else start one and tear it down at the end
           (unless another test session still uses it)
  reuse    reuse a cluster that is already up, else start one; leave it up afterwards
  fresh    `down` whatever runs, start a new one, tear it down at the end
Its state dir is $DSBRA_STATE_DIR (default .dsbra/cluster, or .dsbra/cluster-slot<N> with
DSBRA_TEST_SLOT=N; see netslots.py).

The SECOND network holds one cluster at a time: a module's own spec (`second_slot.cluster`),
kept up for the next module that asks for the same spec, or a test's own bring-ups
(`second_cluster_slot`). The modules are run grouped by the spec they ask for
(SECOND_SLOT_ORDER), so each spec is brought up once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

import pytest

from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout, project_root
from dsbra.cluster.spec import ClusterSpec
from harness import DAEMON_SPEC, bundled_cluster, need_root, reset_data, write_data
from netslots import MAIN, SECOND_LAST, SECOND_LOCK, SLOT

WORKERS = int(os.environ.get("DSBRA_TEST_WORKERS", "4"))
if SLOT and "DSBRA_STATE_DIR" not in os.environ:
    # the CLI subprocesses of the tests must find this slot's cluster too
    os.environ["DSBRA_STATE_DIR"] = str(project_root() / ".dsbra" / f"cluster-slot{SLOT}")

#: modules that share the SECOND network's cluster run next to each other, in this order; the
#: others keep pytest's order, after these
SECOND_SLOT_ORDER = ["test_daemon", "test_daemon_faults", "test_placement_heat"]


def pytest_collection_modifyitems(items):
    def key(item):
        name = item.module.__name__
        return SECOND_SLOT_ORDER.index(name) if name in SECOND_SLOT_ORDER else len(SECOND_SLOT_ORDER)

    items.sort(key=key)  # stable: pytest's order within a module and among the rest


class SecondSlot:
    """The SECOND network of netslots.py for the whole session. Its names are fixed, so test
    sessions running at the same time take turns (a lock); a session killed half-way left its
    state dir in SECOND_LAST, which is brought down first."""

    def __init__(self, root: Path):
        self.root = root
        self.spec: ClusterSpec | None = None
        self.layout: StateLayout | None = None
        self.env: dict = {}
        self._up: contextlib.ExitStack | None = None
        self._count = 0

    def _state_dir(self, name: str) -> Path:
        self._count += 1
        path = self.root / f"{self._count}-{name}"
        SECOND_LAST.write_text(str(path))
        return path

    def cluster(self, spec: ClusterSpec, *, timeout: float = 300) -> tuple[StateLayout, dict, bool]:
        """``spec``'s cluster, up: (layout, env, fresh), ``fresh`` if brought up by this call
        (another spec's cluster is brought down first)."""
        if self.spec == spec and cl.status(self.layout).state == "up":
            return self.layout, self.env, False
        self.free()
        need_root()
        stack = contextlib.ExitStack()
        self.layout, self.env = stack.enter_context(
            bundled_cluster(self._state_dir("shared"), spec, timeout=timeout))
        self._up, self.spec = stack, spec
        return self.layout, self.env, True

    def own(self) -> Path:
        """A state dir for a test's own cluster, the slot emptied first; the test brings its
        cluster down, and what it left up is brought down after it (``release``)."""
        self.free()
        path = self._state_dir("own")
        path.mkdir(parents=True)
        return path

    def release(self, path: Path) -> None:
        cl.down(StateLayout(path.resolve()))

    def free(self) -> None:
        if self._up is not None:
            up, self._up, self.spec = self._up, None, None
            up.close()


#: the session's SecondSlot while the second_slot fixture holds it
_second_slot: SecondSlot | None = None


@pytest.fixture(scope="session")
def second_slot(tmp_path_factory):
    global _second_slot
    with open(SECOND_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if SECOND_LAST.exists():
            cl.down(StateLayout(Path(SECOND_LAST.read_text().strip())))
        slot = _second_slot = SecondSlot(tmp_path_factory.mktemp("second-slot"))
        try:
            yield slot
        finally:
            _second_slot = None
            slot.free()
            SECOND_LAST.unlink(missing_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """The SECOND network's cluster goes down as soon as the next module's first test does
    not use it (once this module's fixtures are torn down): its idle daemons would take CPU
    from the tests that run meanwhile, on 2 cores."""
    yield
    if _second_slot is not None and (nextitem is None or (
            nextitem.module is not item.module and "second_slot" not in nextitem.fixturenames)):
        _second_slot.free()


@pytest.fixture
def daemon_cluster(second_slot):
    """The daemon tests' cluster (harness.DAEMON_SPEC), every data file at its BASE (an
    earlier test's daemon may have left one raised): (layout, env, HDFS client)."""
    layout, env, fresh = second_slot.cluster(DAEMON_SPEC)
    client = cl.hdfs_client(env["namenode"])
    (write_data if fresh else reset_data)(client)
    return layout, env, client


@pytest.fixture
def second_cluster_slot(second_slot):
    """A state dir in the SECOND network for one test's own cluster."""
    path = second_slot.own()
    yield path
    second_slot.release(path)


@pytest.fixture(scope="session")
def cluster_layout() -> StateLayout:
    return StateLayout.at()


@pytest.fixture(scope="session")
def cluster(cluster_layout) -> dict:
    """`dsbra cluster env --json` of a running cluster."""
    need_root()
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
