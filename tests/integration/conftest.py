"""The test clusters: the session's cluster in the MAIN network, and the SECOND network's.

DSBRA_TEST_CLUSTER controls the session's cluster:
  unset    reuse a cluster that is already up, else start one and tear it down at the end
           (unless another test session still uses it)
  reuse    reuse a cluster that is already up, else start one; leave it up afterwards
  fresh    `down` whatever runs, start a new one, tear it down at the end
Its state dir is $DSBRA_STATE_DIR (default .dsbra/cluster, or .dsbra/cluster-slot<N> with
DSBRA_TEST_SLOT=N; see netslots.py).

The modules that use the session's cluster run first, and it goes down once the last of them
ended (brought up again should a later test ask for it).

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
from dsbra.cluster import security as sec
from dsbra.cluster.paths import StateLayout, project_root
from dsbra.cluster.spec import ClusterSpec
from dsbra.hadoop.hdfs import make_client
from harness import DAEMON_SPEC, SECURE_HA_SPEC, bundled_cluster, need_root, reset_data, write_data
from netslots import MAIN, SECOND_LAST, SECOND_LOCK, SLOT

WORKERS = int(os.environ.get("DSBRA_TEST_WORKERS", "4"))
if SLOT and "DSBRA_STATE_DIR" not in os.environ:
    # the CLI subprocesses of the tests must find this slot's cluster too
    os.environ["DSBRA_STATE_DIR"] = str(project_root() / ".dsbra" / f"cluster-slot{SLOT}")

#: modules that share the SECOND network's cluster run next to each other, in this order, after
#: the modules that use the session's cluster; the others keep pytest's order, after these
SECOND_SLOT_ORDER = ["test_daemon", "test_daemon_faults", "test_placement_heat", "test_guide", "test_demo",
                     "test_spark"]


def uses_main_cluster(item) -> bool:
    """Whether ``item`` needs the session's cluster: this conftest's ``cluster`` fixture (the
    docker modules have a ``cluster`` fixture of their own)."""
    defs = getattr(item, "_fixtureinfo", None)
    cluster_defs = defs.name2fixturedefs.get("cluster") if defs else None
    return bool(cluster_defs) and cluster_defs[-1].func.__module__ == __name__


def pytest_collection_modifyitems(items):
    """The modules that use the session's cluster first, so it can go down as soon as the
    last of them ended (``pytest_runtest_teardown``); then the SECOND network's shared ones."""
    main_modules = {item.module for item in items if uses_main_cluster(item)}
    here = Path(__file__).parent

    def key(item):
        name = item.module.__name__
        if not item.path.is_relative_to(here):
            return -1  # the unit tests, first
        if item.module in main_modules:
            return 0
        return 1 + (SECOND_SLOT_ORDER.index(name) if name in SECOND_SLOT_ORDER
                    else len(SECOND_SLOT_ORDER))

    items.sort(key=key)  # stable: pytest's order within a module and among the rest
    global _last_main_item
    _last_main_item = next((item for item in reversed(items) if uses_main_cluster(item)), None)


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
    if item is _last_main_item and _main is not None:
        _main.release()  # no later test needs it: its idle daemons would take CPU too


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test that needs the session's cluster after it went down (run alone, or on a
    ``-k`` selection) gets it up again."""
    if _main is not None and not _main.held and uses_main_cluster(item):
        _main.ensure()


@pytest.fixture
def daemon_cluster(second_slot):
    """The daemon tests' cluster (harness.DAEMON_SPEC), every data file at its BASE (an
    earlier test's daemon may have left one raised): (layout, env, HDFS client)."""
    layout, env, fresh = second_slot.cluster(DAEMON_SPEC)
    client = cl.hdfs_client(env["namenode"])
    (write_data if fresh else reset_data)(client)
    return layout, env, client


@pytest.fixture(scope="module")
def secure_ha_cluster(second_slot):
    """The Kerberized https-only HA cluster (harness.SECURE_HA_SPEC) of test_secure_cluster.py
    and test_secure_ha.py, every data file written at its BASE: (layout, env, an HDFS client
    over both NameNodes, the cluster's web session), in the client's Kerberos environment."""
    layout, env, _ = second_slot.cluster(SECURE_HA_SPEC, timeout=400)
    with cl.web_session(SECURE_HA_SPEC, layout) as session:
        client = make_client(env["namenode"], kerberos=True,
                             principal=sec.client_principal(), ca_bundle=env["ca_bundle"])
        write_data(client)
        yield layout, env, client, session


@pytest.fixture
def second_cluster_slot(second_slot):
    """A state dir in the SECOND network for one test's own cluster."""
    path = second_slot.own()
    yield path
    second_slot.release(path)


@pytest.fixture(scope="session")
def cluster_layout() -> StateLayout:
    return StateLayout.at()


class MainCluster:
    """The session's cluster (DSBRA_TEST_CLUSTER, above): up while tests need it. Every test
    session holds a shared lock on it while it uses it, so the session that started it brings
    it down only if no other session still uses it."""

    def __init__(self, layout: StateLayout, mode: str):
        self.layout, self.mode = layout, mode
        self.started = False
        self._users = None

    @property
    def held(self) -> bool:
        """Whether this session holds it (from ``ensure`` until ``release``)."""
        return self._users is not None

    def ensure(self) -> dict:
        """Up, and held by this session: its env."""
        if not self.held:
            self.layout.root.mkdir(parents=True, exist_ok=True)
            self._users = open(self.layout.root / ".test-sessions", "a")
            fcntl.flock(self._users, fcntl.LOCK_SH)
        if cl.status(self.layout).state != "up":
            # with YARN's shared cache, as a cluster serving Hive runs (test_bench_hive.py)
            _, started = cl.up(ClusterSpec(workers=WORKERS, **MAIN, shared_cache=True),
                               self.layout, log=lambda *_: None)
            self.started = self.started or started
        return cl.env(self.layout)

    def release(self) -> None:
        """This session is done with it: down if it started it (unless ``reuse``) and no other
        session holds it."""
        if not self.held:
            return
        users, self._users = self._users, None
        fcntl.flock(users, fcntl.LOCK_UN)
        if self.started and self.mode != "reuse":
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # another test session still uses it: leave it up
            else:
                cl.down(self.layout)
                self.started = False
        users.close()


#: the session's MainCluster once a test asked for it
_main: MainCluster | None = None
#: the last test that needs the session's cluster (pytest_collection_modifyitems)
_last_main_item = None


@pytest.fixture(scope="session")
def cluster(cluster_layout) -> dict:
    """`dsbra cluster env --json` of the session's cluster, up."""
    global _main
    need_root()
    mode = os.environ.get("DSBRA_TEST_CLUSTER", "")
    if mode not in ("", "reuse", "fresh"):
        pytest.fail(f"DSBRA_TEST_CLUSTER must be unset, 'reuse' or 'fresh', got {mode!r}")
    if mode == "fresh":
        cl.down(cluster_layout)
    _main = MainCluster(cluster_layout, mode)
    try:
        yield _main.ensure()
    finally:
        _main.release()
        _main = None


@pytest.fixture(scope="session")
def webhdfs(cluster):
    from hdfs import InsecureClient

    return InsecureClient(cluster["namenode"], user="root")
