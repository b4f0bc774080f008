"""One acting dsbra per HDFS: a lock file in HDFS, after the Balancer's /system/balancer.id.

The Balancer creates its id file without overwrite and keeps it open: its lease is the lock,
and a dead Balancer's lease expires. WebHDFS closes every file it writes, so a lease cannot be
held across calls. Here the file names its holder (host, pid, state directory, a per-start
instance id) and the holder refreshes the file's modification time every round; a lock not
refreshed for ``stale_s`` belongs to a dead daemon and the next one takes it over, and so does
a restart on the same host and state directory at once (its fcntl lock proves the previous run
dead). CREATE without overwrite is atomic in the NameNode, so of two daemons starting at once
exactly one gets the lock. Taking over a stale lock (delete, then create) is not atomic: of two
daemons doing it at once both may believe they hold it until the next round's refresh, where
the one whose id is not in the file stops acting.

The local fcntl lock on the state directory keeps two daemons on one host from sharing a
journal; this one keeps two daemons on two hosts from changing the same files.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid

from dsbra.errors import HadoopError, SafetyError
from dsbra.hadoop.hdfs import HdfsActor

log = logging.getLogger(__name__)


class ClusterLock:
    def __init__(self, actor: HdfsActor, path: str, stale_s: float, state_dir: str):
        self.actor, self.path, self.stale_s = actor, path, stale_s
        self.holder = {"host": socket.gethostname(), "pid": os.getpid(), "state_dir": state_dir,
                       "instance": uuid.uuid4().hex, "since_ms": int(time.time() * 1000)}
        self.held = False

    def _create(self) -> bool:
        """CREATE the lock file naming us, without overwrite; False when it exists."""
        return self.actor.create_new(self.path, json.dumps(self.holder) + "\n")

    def _current(self) -> tuple[dict, float]:
        """The lock file's holder and seconds since it was last refreshed."""
        try:
            holder = json.loads(self.actor.read_text(self.path))
        except ValueError:
            holder = {"host": "?", "pid": "?", "instance": None}
        age = time.time() - self.actor.status(self.path)["modificationTime"] / 1000
        return holder, age

    def acquire(self) -> None:
        """Take the lock, or raise SafetyError naming the live holder."""
        if self._create():
            self.held = True
            log.info("cluster lock %s taken (instance %s)", self.path, self.holder["instance"])
            return
        holder, age = self._current()
        mine = (holder.get("host"), holder.get("state_dir")) == (self.holder["host"],
                                                                 self.holder["state_dir"])
        if age < self.stale_s and not mine:
            raise SafetyError(
                f"another dsbra (host {holder.get('host')}, pid {holder.get('pid')}) holds the cluster "
                f"lock {self.path}, refreshed {age:.0f} s ago; one acting instance per cluster "
                f"(the lock goes stale after {self.stale_s:.0f} s without refresh)")
        # ``mine``: a daemon of this host and state directory that died (kill -9, a crash):
        # we hold the state directory's fcntl lock, so it is not running
        log.warning("cluster lock %s: taking over from host %s pid %s (%s)", self.path,
                    holder.get("host"), holder.get("pid"),
                    "the previous run of this state directory" if mine
                    else f"not refreshed for {age:.0f} s")
        self.actor.delete(self.path)
        if not self._create():
            raise SafetyError(f"another dsbra took the stale cluster lock {self.path} first")
        self.held = True

    def refresh(self) -> None:
        """Still ours: touch it. Someone else's (we stalled past ``stale_s`` and were taken
        over): SafetyError, this daemon must stop acting."""
        try:
            holder, _ = self._current()
        except HadoopError as exc:
            if exc.exception != "FileNotFoundException":
                raise
            if self._create():
                log.warning("cluster lock %s was deleted under us; taken again", self.path)
                return
            holder, _ = self._current()
        if holder.get("instance") != self.holder["instance"]:
            self.held = False
            raise SafetyError(f"lost the cluster lock {self.path} to host {holder.get('host')} "
                              f"pid {holder.get('pid')}; not acting until it is ours again")
        self.actor.touch(self.path)

    def release(self) -> None:
        """Delete the lock if it is still ours (a clean stop frees it at once)."""
        if not self.held:
            return
        try:
            holder, _ = self._current()
            if holder.get("instance") == self.holder["instance"]:
                self.actor.delete(self.path)
        except HadoopError as exc:
            log.warning("cluster lock %s not released (%s); it goes stale in %.0f s",
                        self.path, exc, self.stale_s)
        self.held = False
