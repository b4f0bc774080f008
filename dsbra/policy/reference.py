"""DSBRA's round as a plain per-block Python loop: the executable reference.

A line-by-line transcription of Algorithm-1 (with the same documented choices as the
vectorised round in :mod:`dsbra.policy.dsbra`). The unit tests check the vectorised round
against it on random rounds; the benchmark measures the speed ratio between the two.
"""

from __future__ import annotations

from dsbra.policy.api import BlockState, RoundInput


def as_python_blocks(ri: RoundInput, st: BlockState) -> list[tuple]:
    """Per block: (tasks, delayed, delay_s, [replica node ids], base, y, n)."""
    ip, nodes = ri.replica_indptr.tolist(), ri.replica_nodes.tolist()
    return [(t, m, dt, nodes[ip[i]:ip[i + 1]], b, y, n) for i, (t, m, dt, b, y, n) in enumerate(
        zip(ri.tasks.tolist(), ri.delayed_tasks.tolist(), ri.delay_s.tolist(),
            st.base_replication.tolist(), st.y.tolist(), st.n.tolist()))]


def loop_round(blocks: list[tuple], node_names: list[str], p: dict):
    """One round over ``blocks`` (see :func:`as_python_blocks`) with parameters ``p`` (a
    DsbraParams.as_dict()). Returns (rf, y_next, gavg, dn_avg, {row: [node ids]},
    {row: node id})."""
    d = p["delay_threshold_s"]
    n_nodes = len(node_names)
    nsum, held = [0.0] * n_nodes, [0] * n_nodes
    rfs, ys = [], []
    total, counted = 0.0, 0
    for tasks, delayed, delay, replicas, _base, y, n in blocks:
        n_eff = tasks if tasks > 0 else 1
        x = (delayed / n_eff + delay / (d * n_eff)) / 2
        rf = (p["alpha"] * x + (1 - p["alpha"]) * y) / p["rf_divisor"]
        rfs.append(rf)
        ys.append((y * n + rf) / (n + 1))
        if p["gavg_scope"] == "all" or tasks > 0 or y > 0:
            total += rf
            counted += 1
        for j in replicas:
            nsum[j] += rf
            held[j] += 1
    gavg = total / counted if counted else 0.0
    heat = [nsum[j] / held[j] if held[j] else 0.0 for j in range(n_nodes)]
    by_heat = sorted(range(n_nodes), key=lambda j: (heat[j], node_names[j]))
    position = {j: k for k, j in enumerate(by_heat)}
    if p["placement_order"] == "ascending":
        placing = by_heat
    else:
        placing = sorted(range(n_nodes), key=lambda j: (-heat[j], node_names[j]))
    ceiling = min(p["max_replication"], n_nodes)
    gate_open = gavg > p["gate"]
    cold_limit = p["cold_high"] if gate_open else p["cold_low"]
    replicate, dereplicate = {}, {}
    for i, (_, _, _, replicas, base, _, _) in enumerate(blocks):
        rf = rfs[i]
        hot = gate_open and rf > gavg + p["hot_margin"]
        if hot:
            r = max(1, int((rf - gavg) / p["step"] + 1e-9))
            r = min(r, ceiling - len(replicas))
            if r > 0:
                have = set(replicas)
                replicate[i] = [j for j in placing if j not in have][:r]
        elif rf <= cold_limit and len(replicas) > base:
            dereplicate[i] = max(replicas, key=lambda j: position[j])
    return rfs, ys, gavg, heat, replicate, dereplicate
