"""Read a job's ``job.splitmetainfo`` and ``job.split`` (``JobSplitWriter`` / ``SplitMetaInfoReader``).

``job.splitmetainfo``: ``META-SPL``, vint version (1), vint count, then per split: vint number
of hosts, that many Text host names, vlong offset of the split in ``job.split``, vlong input
length. ``job.split``: ``SPL``, int version, then at each offset: Text class name and the
serialized split; a ``FileSplit`` (either API) is Text path, long start, long length.
Text = vint byte length + UTF-8; vint/vlong are Hadoop's ``WritableUtils`` zero-compressed
varints; longs/ints are big-endian. Task i of a job reads split i (``JobImpl.createMapTasks``);
the splits are stored largest first, not in input order. Hive's splits (HiveInputSplit around
a FileSplit or a SymlinkTextInputSplit) are read down to the FileSplit of the data they scan.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass

from dsbra.errors import HadoopError

log = logging.getLogger(__name__)

META_HEADER = b"META-SPL"
SPLIT_HEADER = b"SPL"
FILE_SPLIT_CLASSES = {"org.apache.hadoop.mapreduce.lib.input.FileSplit",
                      "org.apache.hadoop.mapred.FileSplit"}
#: Hive's MapReduce jobs (HiveInputFormat): writeUTF(inner split class), the inner split,
#: writeUTF(input format class). A SymlinkTextInputSplit is a FileSplit of the symlink file
#: (start and length 0) followed by the FileSplit of the target data, which is what the map reads.
HIVE_SPLIT = "org.apache.hadoop.hive.ql.io.HiveInputFormat$HiveInputSplit"
HIVE_SYMLINK_SPLIT = "org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat$SymlinkTextInputSplit"


class _Reader:
    def __init__(self, data: bytes, pos: int = 0, what: str = "split file"):
        self.data, self.pos, self.what = data, pos, what

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise HadoopError(f"{self.what}: truncated at byte {self.pos}")
        b = self.data[self.pos]
        self.pos += 1
        return b - 256 if b > 127 else b

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise HadoopError(f"{self.what}: truncated at byte {self.pos} (wanted {n} bytes)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def vlong(self) -> int:
        """``WritableUtils.readVLong``."""
        first = self.byte()
        if first >= -112:
            return first
        negative = first < -120
        size = (-119 - first) if negative else (-111 - first)
        value = 0
        for b in self.raw(size - 1):
            value = (value << 8) | b
        return ~value if negative else value

    def text(self) -> str:
        n = self.vlong()
        if n < 0 or n > 1 << 20:
            raise HadoopError(f"{self.what}: bad string length {n} at byte {self.pos}")
        return self.raw(n).decode("utf-8", "replace")

    def long(self) -> int:
        return struct.unpack(">q", self.raw(8))[0]

    def int(self) -> int:
        return struct.unpack(">i", self.raw(4))[0]

    def utf(self) -> str:
        """``DataOutput.writeUTF``: an unsigned short byte length, then (modified) UTF-8."""
        n = struct.unpack(">H", self.raw(2))[0]
        return self.raw(n).decode("utf-8", "replace")


@dataclass(frozen=True)
class SplitMeta:
    hosts: tuple[str, ...]
    offset: int  # of the split's record in job.split
    length: int  # input bytes


@dataclass(frozen=True)
class FileSplit:
    index: int  # = the map task's index
    path: str
    start: int
    length: int
    hosts: tuple[str, ...]


def read_meta(data: bytes) -> list[SplitMeta]:
    r = _Reader(data, what="job.splitmetainfo")
    if r.raw(len(META_HEADER)) != META_HEADER:
        raise HadoopError("job.splitmetainfo: bad header (expected META-SPL)")
    version = r.vlong()
    if version != 1:
        raise HadoopError(f"job.splitmetainfo: unsupported version {version}")
    count = r.vlong()
    if count < 0 or count > 10_000_000:
        raise HadoopError(f"job.splitmetainfo: implausible split count {count}")
    out = []
    for _ in range(count):
        nhosts = r.vlong()
        if nhosts < 0 or nhosts > 10_000:
            raise HadoopError(f"job.splitmetainfo: bad host count {nhosts}")
        hosts = tuple(r.text() for _ in range(nhosts))
        out.append(SplitMeta(hosts, r.vlong(), r.vlong()))
    return out


def read_splits(meta_data: bytes, split_data: bytes) -> list[FileSplit | None]:
    """Split i of the job (None, logged, for a split class we cannot decode)."""
    metas = read_meta(meta_data)
    if split_data[:len(SPLIT_HEADER)] != SPLIT_HEADER:
        raise HadoopError("job.split: bad header (expected SPL)")
    out: list[FileSplit | None] = []
    for i, m in enumerate(metas):
        r = _Reader(split_data, m.offset, what="job.split")
        cls = r.text()
        if cls == HIVE_SPLIT:
            cls = r.utf()
            if cls == HIVE_SYMLINK_SPLIT:
                r.text(), r.long(), r.long()  # the symlink file's own split
                cls = "org.apache.hadoop.mapred.FileSplit"
        if cls not in FILE_SPLIT_CLASSES:
            log.warning("job.split: split %d is a %s, not a FileSplit; its task is not mapped "
                        "to a block", i, cls)
            out.append(None)
            continue
        path = r.text()
        out.append(FileSplit(i, path, r.long(), r.long(), m.hosts))
    return out


def strip_scheme(path: str) -> str:
    """``hdfs://nn:8020/data/f`` -> ``/data/f`` (WebHDFS wants the absolute path)."""
    if "://" in path:
        rest = path.split("://", 1)[1]
        slash = rest.find("/")
        return rest[slash:] if slash >= 0 else "/"
    return path


def parse_status_split(status: str | None) -> tuple[str, int, int] | None:
    """An old-API map's state string ``hdfs://nn/p:0+134217728[ > map]`` -> (path, start, length).

    A fallback when the split files are gone: old-API input formats put the split in the status.
    """
    if not status:
        return None
    head = status.split(" > ", 1)[0].strip()
    colon = head.rfind(":")
    if colon < 0 or "+" not in head[colon:]:
        return None
    try:
        start_s, len_s = head[colon + 1:].split("+", 1)
        start, length = int(start_s), int(len_s)
    except ValueError:
        return None
    path = head[:colon]
    if not path or start < 0 or length < 0:
        return None
    return strip_scheme(path), start, length
