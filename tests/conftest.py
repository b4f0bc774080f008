"""Hypothesis profiles, and no silent skip under CI.

Under ``CI`` (set by ``.ci/run``) the ``ci`` profile derandomizes (each property test draws
from a seed fixed by its own source) and keeps no example database, so a submission's CI
cannot pass on one draw and fail on the next. Locally the default profile draws fresh examples
and remembers failures in ``.hypothesis/`` (git-ignored) to replay them first next time.
``HYPOTHESIS_PROFILE`` picks one explicitly.

Under ``CI`` a test that would skip fails instead (ci_no_skip.py).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI") else "dev"))

pytest_plugins = ["ci_no_skip", "pytester"]
