"""The cluster's web URLs from its Hadoop client configuration (``$HADOOP_CONF_DIR``).

Read the way Hadoop's own clients find their servers: the NameNodes of the HA nameservice
(``dfs.nameservices``, ``dfs.ha.namenodes.<ns>``, ``dfs.namenode.http-address.<ns>.<id>``) or
the one NameNode; the ResourceManagers of RM HA (``yarn.resourcemanager.ha.rm-ids``,
``yarn.resourcemanager.webapp.address.<id>``) or the one RM; the JobHistoryServer. https
where ``dfs.http.policy`` / ``yarn.http.policy`` say HTTPS_ONLY.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from dsbra.errors import ConfigError

#: the RM's web port when only its host name is configured (yarn-default.xml)
RM_WEB_PORT = {"http": 8088, "https": 8090}


def read_site(path: Path) -> dict[str, str]:
    """A ``*-site.xml`` as name -> value ({} when the file is absent); ``${name}`` references
    to other properties of the same file are expanded, as Configuration.get does."""
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        return {}
    except (OSError, ET.ParseError) as exc:
        raise ConfigError(f"Hadoop config {path}: {exc}") from None
    props = {p.findtext("name", "").strip(): (p.findtext("value") or "").strip()
             for p in root.iter("property")}
    return {k: re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)), v)
            for k, v in props.items() if k}


def _url(scheme: str, address: str) -> str:
    return f"{scheme}://{address}"


def namenode_urls(hdfs_site: dict[str, str]) -> list[str]:
    """Web URL of every NameNode of the (first) nameservice, or of the one NameNode."""
    scheme = "https" if hdfs_site.get("dfs.http.policy", "HTTP_ONLY") == "HTTPS_ONLY" else "http"
    key = "dfs.namenode.https-address" if scheme == "https" else "dfs.namenode.http-address"
    services = hdfs_site.get("dfs.internal.nameservices") or hdfs_site.get("dfs.nameservices", "")
    ns = next((s.strip() for s in services.split(",") if s.strip()), None)
    if ns is None:
        if key not in hdfs_site:
            raise ConfigError(f"hdfs-site.xml names no NameNode ({key} or dfs.nameservices)")
        return [_url(scheme, hdfs_site[key])]
    ids = [i.strip() for i in hdfs_site.get(f"dfs.ha.namenodes.{ns}", "").split(",") if i.strip()]
    keys = [f"{key}.{ns}.{i}" for i in ids] or [f"{key}.{ns}"]
    missing = [k for k in keys if k not in hdfs_site]
    if missing:
        raise ConfigError(f"hdfs-site.xml: nameservice {ns} has no {missing[0]}")
    return [_url(scheme, hdfs_site[k]) for k in keys]


def rm_urls(yarn_site: dict[str, str]) -> list[str]:
    """Web URL of every ResourceManager (RM HA: each of yarn.resourcemanager.ha.rm-ids)."""
    scheme = "https" if yarn_site.get("yarn.http.policy", "HTTP_ONLY") == "HTTPS_ONLY" else "http"
    key = ("yarn.resourcemanager.webapp.https.address" if scheme == "https"
           else "yarn.resourcemanager.webapp.address")
    ids = [""]
    if yarn_site.get("yarn.resourcemanager.ha.enabled", "false").lower() == "true":
        ids = [f".{i.strip()}" for i in yarn_site.get("yarn.resourcemanager.ha.rm-ids", "").split(",")
               if i.strip()]
        if not ids:
            raise ConfigError("yarn-site.xml: RM HA is enabled but yarn.resourcemanager.ha.rm-ids is empty")
    urls = []
    for suffix in ids:
        address = yarn_site.get(key + suffix)
        host = yarn_site.get("yarn.resourcemanager.hostname" + suffix)
        if address is None and host is None:
            raise ConfigError(f"yarn-site.xml names no ResourceManager ({key + suffix} or "
                              f"yarn.resourcemanager.hostname{suffix})")
        urls.append(_url(scheme, address or f"{host}:{RM_WEB_PORT[scheme]}"))
    return urls


def cluster_urls(conf_dir: str | Path) -> dict[str, str]:
    """{"webhdfs", "rm", "jhs"} from the configuration in ``conf_dir``, several URLs comma-
    separated (what ``cluster.webhdfs`` / ``cluster.rm`` take). A service the files do not
    name is left out."""
    conf = Path(conf_dir)
    if not conf.is_dir():
        raise ConfigError(f"HADOOP_CONF_DIR {conf} is not a directory")
    out: dict[str, str] = {}
    hdfs_site, yarn_site = read_site(conf / "hdfs-site.xml"), read_site(conf / "yarn-site.xml")
    if hdfs_site:
        out["webhdfs"] = ",".join(namenode_urls(hdfs_site))
    if yarn_site:
        out["rm"] = ",".join(rm_urls(yarn_site))
    mapred_site = read_site(conf / "mapred-site.xml")
    scheme = "https" if mapred_site.get("mapreduce.jobhistory.http.policy") == "HTTPS_ONLY" else "http"
    key = ("mapreduce.jobhistory.webapp.https.address" if scheme == "https"
           else "mapreduce.jobhistory.webapp.address")
    if key in mapred_site:
        out["jhs"] = _url(scheme, mapred_site[key])
    return out
