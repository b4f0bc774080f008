"""The link shaping `dsbra cluster up --net-mbit` applies (pure: the tc commands; the timed reads
through them run in tests/integration/test_bench_network.py)."""

from __future__ import annotations

import pytest

from dsbra.cluster.netns import shaping_commands
from dsbra.cluster.spec import ClusterSpec
from dsbra.errors import InputError


def _filters(cmds):
    return {c[c.index("dst") + 1]: c[-1] for c in cmds if c[0] == "filter"}


def test_unshaped_by_default():
    spec = ClusterSpec()
    assert all(shaping_commands(spec, w) == [] for w in spec.worker_list)


def test_every_other_worker_is_shaped_and_the_master_is_not():
    spec = ClusterSpec(net_mbit=100)
    w1 = spec.worker_list[0]
    cmds = shaping_commands(spec, w1)
    assert cmds[0][:5] == ["qdisc", "add", "dev", "eth0", "root"]
    assert set(_filters(cmds)) == {"10.77.0.12/32", "10.77.0.13/32", "10.77.0.14/32"}
    assert f"{spec.master}/32" not in _filters(cmds)
    classes = [c for c in cmds if c[0] == "class"]
    assert len(classes) == 1 and classes[0][classes[0].index("rate") + 1] == "100mbit"


def test_rack_rate_gets_its_own_class():
    spec = ClusterSpec(net_mbit=50, net_rack_mbit=200)
    w3 = spec.worker_list[2]  # /rack2 with w4
    cmds = shaping_commands(spec, w3)
    rate_of_class = {c[c.index("classid") + 1]: c[c.index("rate") + 1] for c in cmds if c[0] == "class"}
    flows = _filters(cmds)
    assert rate_of_class[flows["10.77.0.14/32"]] == "200mbit"  # same rack
    assert rate_of_class[flows["10.77.0.11/32"]] == "50mbit"
    assert spec.link_mbit(w3, spec.worker_list[3]) == 200 and spec.link_mbit(w3, spec.worker_list[0]) == 50


@pytest.mark.parametrize("fields", [dict(net_mbit=-1), dict(net_rack_mbit=100), dict(net_mbit=2e5)])
def test_bad_rates_are_input_errors(fields):
    with pytest.raises(InputError, match="net-"):
        ClusterSpec(**fields)
