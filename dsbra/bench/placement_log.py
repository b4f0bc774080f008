"""The placement plugin's DEBUG lines in the NameNode's log (placement/,
``BlockPlacementPolicyDsbraHeat``): turning them on, and reading the copies it placed and the
deletions it ordered, which the placement tests and benchmarks/measure_lowering.py judge it by."""

from __future__ import annotations

import re

from dsbra.hadoop.rest import Jmx

#: the plugin's loggers: the heat document's reader, and the policy's placements and deletions
PLUGIN_LOGGERS = ("io.dsbra.placement.HeatSource",
                  "org.apache.hadoop.hdfs.server.blockmanagement.BlockPlacementPolicyDsbraHeat")

#: a copy placed by heat, e.g. "dsbra heat round 1 placed /td/in/hot-0 on [10.78.0.14]
#: (coolest first; HDFS's checks refused {10.78.0.13=too busy (2 xceivers)})"
PLACED = re.compile(r"dsbra heat round (\d+) placed (\S+) on \[[^\]]*\] "
                    r"\(coolest first; HDFS's checks refused \{([^}]*)\}\)")

#: a deletion it ordered, e.g. "dsbra heat round 4 deletion from [d1] by HDFS's default, no
#: lowering of the heat document (holders [d1, d2, d3] down to 2)"; "dsbra heat unusable: ..."
#: when it had no usable document
DELETION = re.compile(
    r"dsbra heat (?:round (\d+) |unusable: )deletion from \[(.*?)\] by (heat|HDFS's default)"
    r"(, no lowering)?.*\(holders \[(.*?)\] down to (\d+)\)")


def log_plugin_at_debug(namenode_url: str) -> None:
    """The plugin's line for each round it reads, each copy it places and each deletion it
    orders, on until the NameNode restarts (its ``/logLevel`` servlet, as ``hadoop daemonlog``)."""
    jmx = Jmx(namenode_url)
    for logger in PLUGIN_LOGGERS:
        jmx.set_log_level(logger, "DEBUG")


def heat_placements(log_text: str) -> dict[tuple[int, str], set[str]]:
    """Per (round, file) the plugin placed copies for by heat: the nodes HDFS's checks refused
    (its load rule refuses a node with more than twice the DataNodes' average transfers, the
    coolest included: a short job's reads are enough on an idle cluster)."""
    placements: dict[tuple[int, str], set[str]] = {}
    for round_, path, refused in PLACED.findall(log_text):
        hosts = {entry.split("=", 1)[0] for entry in refused.split(", ") if entry}
        placements.setdefault((int(round_), path), set()).update(hosts)
    return placements


def plugin_deletions(log_text: str) -> list[dict]:
    """Each deletion the plugin logged: the heat round it held (None: no usable document),
    the nodes it dropped and the holders before, how many replicas were left, and whether by
    heat or HDFS's default and why the default."""
    out = []
    for m in DELETION.finditer(log_text):
        round_, dropped, by, no_lowering, held, down_to = m.groups()
        out.append({"round": int(round_) if round_ else None, "dropped": dropped.split(", "),
                    "holders": held.split(", "), "down_to": int(down_to),
                    "by": "heat" if by == "heat" else
                    "default: no lowering matched" if no_lowering else
                    "default: heat unusable"})
    return out
