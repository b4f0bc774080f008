"""The reproduction benchmark's data set: the Hive grep table in HDFS, one block per file.

The lines have the format of :func:`dsbra.cluster.jobs.grep_lines` (workload.md: a 10-character
key, a tab, a 10-digit row id and 80 printable characters, 102 bytes), made with numpy because
the data set is gigabytes: ``XYZ`` is planted once every 108,299 records on average, as the
Hive benchmark's generator does. File ``i`` depends only on (seed, i), so any file can be
regenerated alone and a run that stopped half-way resumes where it stopped.

    plan = DatasetPlan(total_bytes=2 << 30, block_bytes=64 << 20, seed=0)
    write_dataset(client, plan)        # idempotent: files of the right length are kept
"""

from __future__ import annotations

import json
import posixpath
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass

import numpy as np
from tqdm import tqdm

from dsbra.cluster.jobs import PRINTABLE
from dsbra.errors import HadoopError, InputError

LINE_BYTES = 102  # key 10 + tab + row id 10 + value 80 + newline
MATCH = b"XYZ"
#: the Hive benchmark generator's constant: one planted match per this many records
MATCH_EVERY = 108_299
MANIFEST = "_dataset.json"
_ALPHABET = np.frombuffer(PRINTABLE.encode(), dtype=np.uint8)


@dataclass(frozen=True)
class DatasetPlan:
    """What `dsbra bench data` writes: ``files`` one-block files of ``lines_per_file`` lines."""

    total_bytes: int = 2 << 30
    block_bytes: int = 64 << 20
    seed: int = 0
    path: str = "/bench/grep"
    replication: int = 2

    def __post_init__(self):
        if self.block_bytes < 1 << 20 or self.block_bytes % 512:
            raise InputError(f"--block-size must be at least 1 MiB and a multiple of 512, "
                             f"got {self.block_bytes}")
        if self.total_bytes < self.block_bytes:
            raise InputError(f"--size ({self.total_bytes} bytes) is smaller than one block "
                             f"({self.block_bytes} bytes)")
        if self.replication < 1:
            raise InputError(f"--replication must be >= 1, got {self.replication}")
        if not self.path.startswith("/"):
            raise InputError(f"--path must be an absolute HDFS path, got {self.path!r}")

    @property
    def lines_per_file(self) -> int:
        return self.block_bytes // LINE_BYTES

    @property
    def file_bytes(self) -> int:
        return self.lines_per_file * LINE_BYTES

    @property
    def files(self) -> int:
        return self.total_bytes // self.block_bytes

    def file_path(self, index: int) -> str:
        return posixpath.join(self.path, f"part-{index:05d}")

    def manifest(self) -> dict:
        return {**asdict(self), "files": self.files, "lines_per_file": self.lines_per_file,
                "file_bytes": self.file_bytes, "line_bytes": LINE_BYTES,
                "match": MATCH.decode(), "match_every": MATCH_EVERY}


def grep_block(n_lines: int, seed: int, index: int = 0, first_row: int = 0) -> bytes:
    """``n_lines`` grep-table lines of file ``index`` (row ids from ``first_row``),
    deterministic in (seed, index)."""
    rng = np.random.default_rng([seed, index, 396])  # 396: HIVE-396, the grep benchmark
    table = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(n_lines, LINE_BYTES), dtype=np.uint8)]
    table[:, 10] = ord("\t")
    table[:, -1] = ord("\n")
    rows = first_row + np.arange(n_lines, dtype=np.int64)
    table[:, 11:21] = (rows[:, None] // 10 ** np.arange(9, -1, -1) % 10 + ord("0")).astype(np.uint8)
    planted = np.flatnonzero(rng.random(n_lines) < 1.0 / MATCH_EVERY)
    offsets = rng.integers(0, 80 - len(MATCH) + 1, size=len(planted))
    for row, offset in zip(planted, offsets):
        start = 21 + offset
        table[row, start:start + len(MATCH)] = np.frombuffer(MATCH, np.uint8)
    return table.tobytes()


def file_content(plan: DatasetPlan, index: int) -> bytes:
    return grep_block(plan.lines_per_file, plan.seed, index, first_row=index * plan.lines_per_file)


def write_dataset(client, plan: DatasetPlan, *, parallel: int = 2, progress: bool = True) -> dict:
    """Write the plan's files that are missing or of another length; returns counts.

    ``client``: an HdfsCLI client. A manifest of another plan at the same path is refused
    (the files would mix two data sets). The manifest goes last, so it marks a complete set.
    """
    from hdfs.util import HdfsError

    try:
        listing = dict(client.list(plan.path, status=True))
    except HdfsError as exc:
        if "FileNotFoundException" not in str(exc) and "does not exist" not in str(exc):
            raise HadoopError(f"WebHDFS LISTSTATUS {plan.path}: {exc}") from None
        listing = {}
    if MANIFEST in listing:
        with client.read(posixpath.join(plan.path, MANIFEST)) as reader:
            old = json.loads(reader.read())
        mine = plan.manifest()
        differs = [k for k in ("seed", "block_bytes", "lines_per_file") if old.get(k) != mine[k]]
        if differs:
            raise InputError(f"{plan.path} holds another data set ({', '.join(f'{k}={old.get(k)}' for k in differs)}); "
                             f"pick another --path or delete it first")
    counts = {"written": 0, "kept": 0, "replication_reset": 0}
    todo = []
    for i in range(plan.files):
        status = listing.get(posixpath.basename(plan.file_path(i)))
        if status is not None and int(status["length"]) == plan.file_bytes:
            counts["kept"] += 1
            if int(status["replication"]) != plan.replication:
                # back to base replication: every benchmark arm starts from the same state
                client.set_replication(plan.file_path(i), plan.replication)
                counts["replication_reset"] += 1
        else:
            todo.append(i)

    def write(i: int) -> None:
        try:
            client.write(plan.file_path(i), file_content(plan, i), overwrite=True,
                         replication=plan.replication, blocksize=plan.block_bytes)
        except HdfsError as exc:
            raise HadoopError(f"writing {plan.file_path(i)}: {str(exc).splitlines()[0]}") from None

    # a few writes at once: the NameNode spreads them over DataNodes, whose (shaped) pipeline
    # links then carry the second replicas side by side
    with tqdm(total=plan.files, initial=counts["kept"], desc="bench data", unit="file", file=sys.stderr,
              disable=not progress) as bar, ThreadPoolExecutor(max(1, parallel)) as pool:
        for future in as_completed([pool.submit(write, i) for i in todo]):
            future.result()
            counts["written"] += 1
            bar.update(1)
    client.write(posixpath.join(plan.path, MANIFEST), json.dumps(plan.manifest(), indent=1),
                 overwrite=True, encoding="utf-8")
    return counts
