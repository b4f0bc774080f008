#!/usr/bin/env python3
"""Capture a real HA cluster's standby replies as unit-test fixtures.

    dsbra cluster up --ha --ha-failover manual --state-dir DIR ...
    .venv/bin/python tools/capture_ha_fixtures.py --state-dir DIR [--out tests/fixtures/ha/hadoop-3.4.2]

Fails the cluster over by hand first (``hdfs haadmin -failover nn1 nn2``, ``yarn rmadmin
-transitionToStandby rm1`` then ``-transitionToActive rm2``), so that the first NameNode and
ResourceManager are standbys and still answer; then asks both through dsbra's clients with
every URL. Manual failover: with automatic failover ZooKeeper would not leave both RMs
standby, and refuses the transitions. One directory per server (``nn1``, ``nn2``, ``rm1``, ``rm2``), each a
``dsbra.observe.http_fixtures`` fixture, so a replay can mount each where its server was:
``urls.json`` names them. ``no-active-rm/`` holds what both RMs answer while both are
standby (mid-failover). ``conf/`` holds the client's core-, hdfs-, yarn- and mapred-site.xml.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import hdfs
import requests

from dsbra.cluster import cluster as cl
from dsbra.cluster.paths import StateLayout
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import HadoopError
from dsbra.hadoop.rest import Jmx, ResourceManager, WebHdfs
from dsbra.observe.http_fixtures import Recorder

ROOT = Path(__file__).resolve().parents[1]

FILE = "/ha-fixture/data.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=ROOT / "tests/fixtures/ha/hadoop-3.4.2")
    args = parser.parse_args()
    layout = StateLayout(args.state_dir.resolve())
    spec = ClusterSpec.from_dict(cl.st.load(layout.state_file)["spec"])
    servers = {**spec.namenode_urls, **spec.rm_urls}
    nn_urls, rm_urls = list(spec.namenode_urls.values()), list(spec.rm_urls.values())

    if not spec.ha or spec.automatic_failover:
        sys.exit("start from a fresh --ha --ha-failover manual cluster: the captures fail over by hand")
    if cl.active_namenode(spec) != "nn1" or cl.active_rm(spec) != "rm1":
        sys.exit("start from a fresh --ha cluster: nn1 and rm1 active")
    writer = hdfs.InsecureClient(";".join(nn_urls), user="root")
    writer.write(FILE, "dsbra HA fixture\n" * 100, overwrite=True, replication=2)
    cl.ha_admin(spec, layout, "hdfs", ["-failover", "nn1", "nn2"])
    cl.ha_admin(spec, layout, "yarn", ["-transitionToStandby", "rm1"])
    cl.ha_admin(spec, layout, "yarn", ["-transitionToActive", "rm2"])

    session = requests.Session()
    recorders = {name: Recorder() for name in servers}
    for name, url in servers.items():
        session.mount(url + "/", recorders[name])
    # the standby first: each client starts at nn1 / rm1, is refused or redirected, follows
    WebHdfs(nn_urls, session=session, user="root").file_status(FILE)
    Jmx(nn_urls, session=session).namenode_health()
    rm = ResourceManager(rm_urls, session=session)
    rm.cluster_info()
    ResourceManager(rm_urls, session=session).apps()
    ResourceManager(rm_urls, session=session).metrics()
    # HdfsCLI (the acting client) on the same standby-first URLs: SETREPLICATION, then a read
    actor = hdfs.InsecureClient(";".join(nn_urls), user="root", session=session)
    actor.set_replication(FILE, 3)
    actor.status(FILE)

    # both ResourceManagers standby (mid-failover): what each answers then
    cl.ha_admin(spec, layout, "yarn", ["-transitionToStandby", "rm2"])
    session = requests.Session()
    no_active = {name: Recorder() for name in spec.rm_urls}
    for name, url in spec.rm_urls.items():
        session.mount(url + "/", no_active[name])
    try:
        ResourceManager(rm_urls, session=session).nodes()
    except HadoopError as exc:
        print(f"no active RM: {exc}")
    cl.ha_admin(spec, layout, "yarn", ["-transitionToActive", "rm2"])

    shutil.rmtree(args.out, ignore_errors=True)
    for name, recorder in recorders.items():
        n = recorder.save(args.out / name, note=f"{name} ({servers[name]}) after a manual failover "
                                               "to nn2 / rm2, asked standby first")
        print(f"{name}: {n} exchanges")
    for name, recorder in no_active.items():
        n = recorder.save(args.out / "no-active-rm" / name,
                          note=f"{name} ({servers[name]}) while both RMs are standby")
        print(f"no-active-rm/{name}: {n} exchanges")
    (args.out / "urls.json").write_text(json.dumps(servers, indent=1) + "\n")
    conf = args.out / "conf"
    conf.mkdir()
    for name in ("hdfs-site.xml", "yarn-site.xml", "core-site.xml", "mapred-site.xml"):
        shutil.copyfile(layout.conf("client") / name, conf / name)


if __name__ == "__main__":
    main()
