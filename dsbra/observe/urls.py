"""Where the cluster to observe is: flags, the environment, $HADOOP_CONF_DIR, or the bundled
cluster, in that order (`dsbra observe`, `dsbra run`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from dsbra.errors import InputError

URL_ENV = {"rm": "DSBRA_RM_URL", "webhdfs": "DSBRA_WEBHDFS_URL", "jhs": "DSBRA_JHS_URL"}


def bundled_cluster_urls() -> dict[str, str]:
    """The bundled cluster's URLs from ``dsbra cluster env --json``, or {} if it is not up."""
    try:
        proc = subprocess.run([sys.executable, "-m", "dsbra", "cluster", "env", "--json"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if proc.returncode != 0:
        return {}
    try:
        env = json.loads(proc.stdout)
    except ValueError:
        return {}
    urls = env.get("urls", env) if isinstance(env, dict) else {}
    return {k: urls[k] for k in ("rm", "webhdfs", "jhs", "namenode")
            if isinstance(urls.get(k), str)}


def resolve_urls(rm: str | None, webhdfs: str | None, jhs: str | None) -> dict[str, str]:
    """Flags, then DSBRA_*_URL environment variables, then the Hadoop client configuration
    in $HADOOP_CONF_DIR (every NameNode and RM of an HA cluster), then the bundled cluster."""
    given = {"rm": rm, "webhdfs": webhdfs, "jhs": jhs}
    out = {k: v or os.environ.get(URL_ENV[k]) for k, v in given.items()}
    if not all(out.values()) and os.environ.get("HADOOP_CONF_DIR"):
        from dsbra.observe.hadoop_conf import cluster_urls

        from_conf = cluster_urls(os.environ["HADOOP_CONF_DIR"])
        out = {k: v or from_conf.get(k) for k, v in out.items()}
    if not all(out.values()):
        bundled = bundled_cluster_urls()
        for k in out:
            out[k] = out[k] or bundled.get(k) or (bundled.get("namenode") if k == "webhdfs"
                                                  else None)
    missing = [k for k, v in out.items() if not v]
    if missing:
        raise InputError("no cluster to observe: pass " + ", ".join(f"--{k}" for k in missing)
                         + " (or set " + ", ".join(URL_ENV[k] for k in missing)
                         + "), or bring the bundled cluster up with 'dsbra cluster up'")
    return out
