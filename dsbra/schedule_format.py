"""The job schedule file: the one format `dsbra bench schedule` writes, `dsbra bench replay`
replays on the real cluster and `dsbra sim --workload schedule:PATH` simulates.

    {"format": 1, "source": ..., "seed": ..., "dataset": {path, files, block_bytes, seed, ...},
     "params": {...}, "notes": {...},
     "jobs": [{"job_id": "job0", "submit_s": 0.0, "bin": 1, "maps": 1,
               "inputs": ["/bench/grep/part-00012"], "trace_input": "inputPath1"?}, ...]}

The generators live in dsbra/bench/schedule.py; this module only reads and writes the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from dsbra.errors import InputError

FORMAT = 1


def write_schedule(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def load_schedule(path: Path) -> dict:
    """A schedule file, checked enough that a replay cannot start on a broken one."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"cannot read schedule {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"schedule {path} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{path} is not a schedule of format {FORMAT} (write one with dsbra bench schedule)")
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise InputError(f"schedule {path} has no jobs")
    for job in jobs:
        if not (isinstance(job, dict) and isinstance(job.get("inputs"), list) and job["inputs"]
                and isinstance(job.get("submit_s"), (int, float)) and isinstance(job.get("job_id"), str)):
            raise InputError(f"schedule {path}: malformed job {str(job)[:80]}")
    return doc
