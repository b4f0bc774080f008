"""``dsbra observe``: per-block delay-scheduling metrics of a live cluster, as ``dsbra plan`` input."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import click

from dsbra.cli_options import secure_sessions, security_options
from dsbra.errors import DsbraError
from dsbra.observe.urls import resolve_urls

log = logging.getLogger(__name__)


def format_table(doc: dict, top: int) -> str:
    obs = doc["observe"]
    lines = [
        f"window {obs['window_end_ms'] - obs['window_start_ms']} ms: {obs['map_tasks']} map "
        f"tasks ({obs['unmapped_tasks']} unmapped), {obs['delayed_tasks']} delayed, "
        f"{obs['delay_s']:.1f} s delay; D = {doc['params']['delay_threshold_s']} s "
        f"(delay scheduling {'on' if obs['delay_scheduling'] else 'OFF'}, grace "
        f"{obs['grace_s']} s, settle {obs['settle_s']} s); {len(doc['live_nodes'])} live DataNodes",
        f"{'block':<24} {'N':>4} {'M':>4} {'DT s':>7} {'nonloc':>6} {'peak':>4} {'RC':>3}  "
        f"{'replicas':<30} path",
    ]
    lines[1:1] = [f"  {engine}: {c['tasks']} tasks ({c['unmapped_tasks']} unmapped), "
                  f"{c['delayed_tasks']} delayed, {c['locality_wait_s']:.1f} s waited for locality"
                  for engine, c in obs.get("engines", {}).items()]
    for b in doc["blocks"][:top]:
        lines.append(f"{b['block_id']:<24} {b['tasks']:>4} {b['delayed_tasks']:>4} "
                     f"{b['delay_s']:>7.1f} {b['nonlocal_tasks']:>6} {b['peak_readers']:>4} "
                     f"{len(b['nodes']):>3}  {','.join(b['nodes']):<30} {b.get('path', '')}")
    if len(doc["blocks"]) > top:
        lines.append(f"... {len(doc['blocks']) - top} more blocks (--top)")
    return "\n".join(lines)


@click.command("observe")
@click.option("--window-s", type=click.FloatRange(min=1), default=60.0, show_default=True,
              help="Length of the window in seconds.")
@click.option("--history", is_flag=True,
              help="Report the last --window-s seconds from history files at once, instead of "
                   "watching the next window (less precise: no sampled view of free capacity).")
@click.option("--interval-s", type=click.FloatRange(min=0.2), default=2.0, show_default=True,
              help="Seconds between polls while watching.")
@click.option("--output", "-o", default="-", show_default=True,
              help="Where to write the result ('-' = stdout).")
@click.option("--format", "fmt", type=click.Choice(["json", "table"]), default="json",
              show_default=True, help="json: the input of 'dsbra plan'; table: top blocks.")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="Rows of --format table.")
@click.option("--rm", "rm_url", help="ResourceManager web URL [env DSBRA_RM_URL].")
@click.option("--webhdfs", "webhdfs_url",
              help="NameNode web URL (WebHDFS and JMX) [env DSBRA_WEBHDFS_URL].")
@click.option("--jhs", "jhs_url", help="JobHistoryServer web URL [env DSBRA_JHS_URL].")
@click.option("--user", help="HDFS user.name for WebHDFS [env DSBRA_HDFS_USER].")
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Collector state file: with it, repeated runs count each task once.")
@click.option("--grace-s", type=click.FloatRange(min=0),
              help="A task's own allocation round trip, never delay; also how far launches "
                   "may trail allocations when ranking applications "
                   "(default: node heartbeat + AM heartbeat + 1 s launch).")
@click.option("--settle-s", type=click.FloatRange(min=0),
              help="How long a node must sit idle with room to count as declined "
                   "(default: as --grace-s).")
@click.option("--delay-threshold-s", type=click.FloatRange(min=0, min_open=True),
              help="Override D (default: derived from the scheduler's configuration).")
@click.option("--node-locality-delay", type=click.IntRange(min=0),
              help="Capacity Scheduler: the cluster's yarn.scheduler.capacity.node-locality-delay, "
                   "when the ResourceManager's /conf does not show it (default: Hadoop's 40).")
@click.option("--spark-history", "spark_history_url",
              help="Spark History Server URL: Spark applications on the same YARN are read too "
                   "(running ones through the ResourceManager's proxy); docs/spark.md.")
@click.option("--audit-log", "audit_log", type=click.Path(dir_okay=False, path_type=Path),
              help="The NameNode's audit log (a local file on its host, with HDFS caller "
                   "context): which file each Spark task read.")
@click.option("--no-spark", is_flag=True, help="Read MapReduce's maps only.")
@click.option("--demand", is_flag=True,
              help="Instead of a window, the live demand now: per block, the running MapReduce "
                   "jobs' pending maps and whether its holders can serve them within D.")
@security_options
def observe(window_s, history, interval_s, output, fmt, top, rm_url, webhdfs_url, jhs_url, user,
            state_path, grace_s, settle_s, delay_threshold_s, node_locality_delay, spark_history_url,
            audit_log, no_spark, demand, ca_bundle, kerberos, principal, keytab):
    """Watch the cluster for one window and measure, per HDFS block, the tasks that read it (N:
    MapReduce's maps and Spark's tasks), those delayed by delay scheduling (M) and their delay
    (DT, seconds) over one window, with the block's live replicas and the scheduler's threshold D.

    The JSON output is the input of 'dsbra plan':

      dsbra observe --output - | dsbra plan --input -

    Attribution rule and its validation: docs/metrics.md. With --demand: one poll of what the
    running jobs' maps want now (docs/metrics.md, "The live demand").
    """
    from tqdm import tqdm

    from dsbra.hadoop.rest import SparkApi
    from dsbra.observe.collector import Collector, Endpoints
    from dsbra.observe.spark import AuditTail, SparkCollector
    from dsbra.observe.window import build_window, read_files

    urls = resolve_urls(rm_url, webhdfs_url, jhs_url)
    ep = Endpoints.from_urls(urls["rm"], urls["webhdfs"], urls["jhs"], user=user)
    secure_sessions({ep.rm.session, ep.hdfs.session, ep.jhs.session}, ca_bundle=ca_bundle,
                    kerberos=kerberos, principal=principal, keytab=keytab)
    watch = not history
    now_ms = int(time.time() * 1000)
    start_ms = now_ms if watch else now_ms - int(window_s * 1000)
    collector = Collector(ep, state_path=state_path, since_ms=start_ms,
                          node_locality_delay=node_locality_delay)
    if state_path is not None and collector.since_ms != start_ms:
        start_ms = collector.cursor_ms
    spark = None
    if not no_spark:
        history_api = SparkApi.history(spark_history_url, stats=ep.stats) if spark_history_url else None
        if history_api is not None:
            secure_sessions({history_api.session}, ca_bundle=ca_bundle, kerberos=kerberos,
                            principal=principal, keytab=keytab)
        spark = SparkCollector(ep.rm, SparkApi.proxy(urls["rm"], session=ep.rm.session, stats=ep.stats),
                               history_api, AuditTail.at_end(audit_log) if audit_log else None,
                               since_ms=start_ms)
    collector.settings()
    if demand:
        _write(_demand(collector, top, fmt), output)
        return
    if watch:
        deadline = time.monotonic() + window_s
        with tqdm(total=int(window_s), unit="s", desc="observing", disable=None,
                  file=sys.stderr) as bar:
            while True:
                collector.poll()
                if spark is not None:
                    spark.poll()
                left = deadline - time.monotonic()
                bar.n = int(window_s - max(left, 0))
                bar.set_postfix(tasks=len(collector.pending))
                bar.refresh()
                if left <= 0:
                    break
                time.sleep(min(interval_s, left))
    collector.poll()
    if spark is not None:
        spark.poll()
    end_ms = int(time.time() * 1000)
    obs = collector.take()
    files = read_files(ep, {o.path for o in obs if o.path} | (spark.paths_pending() if spark else set()))
    if spark is not None:
        obs += spark.take(files)
    log.info("window %d..%d: %d map tasks, %d HTTP requests", start_ms, end_ms, len(obs),
             ep.stats.requests)
    doc = build_window(collector, obs, window_start_ms=start_ms, window_end_ms=end_ms,
                       grace_s=grace_s, settle_s=settle_s, delay_threshold_s=delay_threshold_s,
                       jobs=True, files=files, spark=spark).document()
    _write(format_table(doc, top) if fmt == "table" else json.dumps(doc, indent=1), output)


def _demand(collector, top: int, fmt: str) -> str:
    """One demand poll after a collector poll (which reads the running jobs' splits)."""
    from dsbra.observe.demand import DemandPoller

    collector.poll()
    doc = DemandPoller(collector).poll().document()
    if fmt == "json":
        return json.dumps(doc, indent=1)
    lines = [f"{doc['pending_maps']} pending maps on {len(doc['blocks'])} blocks, {doc['short_blocks']} short "
             f"(their holders cannot serve their due maps within D = {doc['delay_threshold_s']} s)",
             f"{'pending':>7} {'shortfall':>9} {'short':>5}  {'holders':<30} block"]
    lines += [f"{b['pending']:>7} {b['shortfall']:>9.2f} {'yes' if b['short'] else 'no':>5}  "
              f"{','.join(b['holders']):<30} {b['path']}@{b['start']}" for b in doc["blocks"][:top]]
    if len(doc["blocks"]) > top:
        lines.append(f"... {len(doc['blocks']) - top} more blocks (--top)")
    return "\n".join(lines)


def _write(text: str, output: str) -> None:
    if output == "-":
        click.echo(text)
    else:
        try:
            Path(output).write_text(text + "\n")
        except OSError as exc:
            raise DsbraError(f"cannot write {output}: {exc.strerror}") from exc
