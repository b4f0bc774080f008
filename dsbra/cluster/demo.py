"""The demo (`make demo`): the bundled cluster, a short hot-spot replay watched by the collector,
and what DSBRA would do about it.

1. Bring the cluster up (time-based delay scheduling, D = 10 s, so waiting for a local slot is
   long enough to see; a cluster that is already up is used as it is).
2. Write one hot one-block file at replication 1 and six cold ones, then submit grep jobs a few
   seconds apart, each reading the hot file and two cold ones, so the jobs queue for the one
   node holding the hot block.
3. A collector polls the cluster while they run (the same code as `dsbra observe`), then the
   per-block metrics (N, M, DT) are printed, and one DSBRA round (`dsbra plan`) on them.
"""

from __future__ import annotations

import logging
import sys
import time

import click
from hdfs import InsecureClient
from tqdm import tqdm

from dsbra.cluster import cluster as cl
from dsbra.cluster.jobs import submit_spaced
from dsbra.cluster.paths import StateLayout, default_state_dir
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import DsbraError, HadoopError
from dsbra.observe.cli import format_table
from dsbra.observe.collector import Collector, Endpoints
from dsbra.observe.window import build_round
from dsbra.policy.cli import plan_document

DEMO_DIR = "/demo"
WORDS = ["delay", "scheduling", "locality", "replica", "dsbra", "hadoop", "block", "rack"]
JOBS, GAP_S = 5, 6.0
DEMO_SPEC = ClusterSpec(continuous_scheduling=True, locality_delay_node_ms=10_000,
                        locality_delay_rack_ms=10_000)


def _text(seed: int) -> bytes:
    return "".join(f"{WORDS[(seed + j) % len(WORDS)]} line {j}\n" for j in range(2000)).encode()


def demo() -> None:
    # grep's second job reads a temporary file gone by now; the table counts it as unmapped
    logging.getLogger("dsbra.observe.window").setLevel(logging.ERROR)
    layout = StateLayout(default_state_dir().resolve())
    _, started = cl.up(DEMO_SPEC, layout, log=lambda msg: click.echo(msg, err=True))
    click.echo("cluster " + ("started (time-based delay scheduling, D = 10 s)" if started
                             else "already up; used as it is"))
    env = cl.env(layout)
    ep = Endpoints.from_urls(env["rm"], env["webhdfs"], env["jhs"], user="root")
    client = InsecureClient(env["namenode"], user="root")
    client.delete(DEMO_DIR, recursive=True)
    hot = f"{DEMO_DIR}/in/hot.txt"
    client.write(hot, data=_text(0), replication=1)
    cold = [f"{DEMO_DIR}/in/cold-{i}.txt" for i in range(6)]
    for i, path in enumerate(cold):
        client.write(path, data=_text(i + 1))
    holders = sorted({loc["hostName"] for b in ep.hdfs.block_locations(hot)["locatedBlocks"]
                      for loc in b["locations"]})
    click.echo(f"wrote {hot} (one block, one replica, on {', '.join(holders)}) and 6 cold files")

    since = int(time.time() * 1000)
    collector = Collector(ep, since_ms=since)
    jobs = [["grep", ",".join([hot, cold[i % 6], cold[(i + 3) % 6]]), f"{DEMO_DIR}/out-{i}", "dsbra"]
            for i in range(JOBS)]
    with tqdm(total=JOBS, desc="grep jobs finished", unit="job") as bar:
        def tick(runs) -> None:
            collector.poll()
            bar.n = sum(1 for r in runs if r.poll() is not None)
            bar.refresh()

        runs = submit_spaced(jobs, GAP_S, tick)
    results = [r.wait(timeout=60, check=False) for r in runs]
    failed = [r for r in results if not r.ok]
    if failed:
        raise HadoopError(f"{len(failed)} of {JOBS} demo jobs failed; see `dsbra cluster logs`")
    collector.poll_until_read([j for r in results for j in r.job_ids], timeout_s=120)
    doc = build_round(collector, collector.take(), window_start_ms=since,
                      window_end_ms=int(time.time() * 1000))
    doc["blocks"] = [b for b in doc["blocks"] if b["path"].startswith(DEMO_DIR)]

    click.echo(f"\nper-block delay-scheduling metrics of the replay (dsbra observe):\n"
               f"{format_table(doc, top=10)}")
    plan = plan_document(doc)
    click.echo(f"\none DSBRA round on them (dsbra plan, calibrated profile): "
               f"GAvg = {plan['gavg']:.3f}")
    for block in sorted(plan["rf"], key=lambda b: -plan["rf"][b])[:3]:
        path = next(b["path"] for b in doc["blocks"] if b["block_id"] == block)
        click.echo(f"  {block}  RF = {plan['rf'][block]:.3f}  {path}")
    if plan["replicate"]:
        for block, nodes in plan["replicate"].items():
            click.echo(f"  replicate {block} to {', '.join(nodes)}")
    else:
        click.echo("  no replica to add: no block's RF exceeds GAvg + the hot margin with GAvg "
                   "over the gate (docs/algorithm.md)")
    for block, node in plan["dereplicate"].items():
        click.echo(f"  dereplicate {block} on {node}")

    click.echo("\ncluster URLs:")
    for key in ("namenode", "webhdfs", "rm", "jhs"):
        click.echo(f"  {key:<9} {env[key]}")
    click.echo("\nthe cluster stays up; stop it with: .venv/bin/dsbra cluster down")


def main() -> None:
    try:
        demo()
    except DsbraError as exc:
        click.echo(f"dsbra: error: {exc}", err=True)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
