"""`dsbra conf render`: the master's config files from a values file, through the same
`render_host` and templates `dsbra cluster up` uses."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from dsbra.cluster import spark
from dsbra.cluster.confdir import render_host
from dsbra.cluster.values import Values
from dsbra.errors import InputError

#: what `conf render` writes (log4j.properties is the bundled cluster's own business)
RENDERED = ["core-site.xml", "hdfs-site.xml", "yarn-site.xml", "mapred-site.xml", "fair-scheduler.xml",
            "topology.table"]


def render_values(values: Values) -> dict[str, str]:
    """RENDERED, capacity-scheduler.xml when the values choose the Capacity Scheduler, and
    spark-defaults.conf when they turn Spark on."""
    spec = values.spec
    files = render_host(spec, "master", values.paths, values.java_home)
    names = RENDERED + (["capacity-scheduler.xml"] if spec.scheduler == "capacity" else [])
    for name in names:
        if name.endswith(".xml"):
            ET.fromstring(files[name])  # a template bug must fail here, not in Hadoop
    out = {name: files[name] for name in names}
    if spec.spark:
        out["spark-defaults.conf"] = spark.render_defaults(
            spec, archive=values.spark_archive or spec.urls["fs"] + spark.archive_path(),
            python=values.spark_python, java_home=values.java_home)
    return out


def write_rendered(files: dict[str, str], out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text)
    except OSError as exc:
        raise InputError(f"cannot write to {out}: {exc.strerror}") from None
