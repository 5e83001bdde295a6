"""DCTCP (RFC 8257) from Python: N DCTCP flows through a queue that marks at an
instantaneous threshold of K = 20 packets (RED with min_th = max_th = K, w_q = 1,
hard_drop = false) keep the link busy with the queue near K; Reno with ECN and the same
marking leaves the link idle after its synchronised halvings and needs a threshold of
about a bandwidth-delay product to fill it; bad keys exit 2 naming the key."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

import qoslab
from qoslab.api import run

K = 20
# 100 Mb/s, base RTT 2·(1 + 2 + 2) = 10 ms: a BDP of 83 packets of 1500 bytes, so
# K = 20 is above DCTCP's C·RTT/7 ≈ 12 (RFC 8257 §4) but far below what Reno needs.
BDP = 83


def step(k: int) -> dict:
    """DCTCP's marking: CE on every ECT arrival that finds k or more packets queued."""
    return {
        "kind": "red",
        "limit": 1000,
        "min_th": k,
        "max_th": k,
        "w_q": 1,
        "max_p": 1,
        "ecn": True,
        "hard_drop": False,
    }


def dumbbell(cc, n: int = 4, k: int = K, delayed_ack: bool = False) -> dict:
    nodes = [{"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}]
    nodes += [{"name": f"s{i}"} for i in range(n)] + [{"name": "d"}]
    links = [{"a": f"s{i}", "b": "r1", "rate": "1Gbps", "delay": "1ms"} for i in range(n)]
    links.append({"a": "r1", "b": "r2", "rate": "100Mbps", "delay": "2ms", "queue": step(k)})
    links.append({"a": "r2", "b": "d", "rate": "1Gbps", "delay": "2ms"})
    tcp = {"ecn": True, "cc": cc, "max_window": 4000, "delayed_ack": delayed_ack}
    flows = [
        {"name": f"f{i}", "from": f"s{i}", "to": "d", "start": f"{0.05 * i}s", "tcp": tcp}
        for i in range(n)
    ]
    return {
        "name": "dctcp-dumbbell",
        "duration": "10s",
        "warmup": "2s",
        "node": nodes,
        "link": links,
        "flow": flows,
        "record": {"interval": "10ms", "queues": ["r1->r2"]},
    }


def bottleneck(res) -> tuple[float, pl.Series, int]:
    """Utilisation, queue samples [packets] after the warm-up, drops at the bottleneck."""
    q = res.queues.filter(pl.col("iface") == "r1->r2").row(0, named=True)
    s = res.queue_samples.filter((pl.col("iface") == "r1->r2") & (pl.col("t") >= 2.0))
    assert s.height > 700
    return q["utilisation"], s["packets"], q["dropped"]


@pytest.mark.parametrize("n, delayed_ack", [(2, False), (4, False), (4, True), (10, True)])
def test_dctcp_keeps_the_link_busy_with_the_queue_near_k(n, delayed_ack):
    util, q, drops = bottleneck(run(dumbbell("dctcp", n, delayed_ack=delayed_ack)))
    assert util >= 0.95, util
    assert drops == 0
    # The queue sits at K: half the samples within a few packets of it, 95 % below
    # K + N (each flow adds about one packet per RTT before the marks it gets act).
    assert K / 2 <= q.quantile(0.5) <= K, q.describe()
    assert q.quantile(0.95) <= K + n, q.quantile(0.95)
    # Reno with ECN and the same marking halves on every mark episode and the queue
    # drains: the link idles (measured 0.78-0.87 here).
    util_reno, q_reno, _ = bottleneck(run(dumbbell("reno", n, delayed_ack=delayed_ack)))
    assert util_reno <= 0.92, util_reno
    assert q_reno.quantile(0.5) <= 5, q_reno.quantile(0.5)


def test_reno_needs_a_bdp_of_queue_to_fill_the_link_where_dctcp_needs_k():
    util_d, q_d, _ = bottleneck(run(dumbbell("dctcp")))
    util_r, q_r, _ = bottleneck(run(dumbbell("reno", k=BDP)))
    assert util_d >= 0.99 and util_r >= 0.99, (util_d, util_r)
    # Same utilisation, a quarter of the queue (p95 23 vs 83 packets when measured).
    assert q_r.quantile(0.95) >= 3 * q_d.quantile(0.95), (q_r.quantile(0.95), q_d.quantile(0.95))


@pytest.mark.parametrize(
    "tcp, key",
    [
        ({"ecn": True, "cc": {"kind": "dctcp", "g": 0}}, "flow[0].tcp.cc.g"),
        ({"ecn": True, "cc": {"kind": "dctcp", "g": 1.5}}, "flow[0].tcp.cc.g"),
        ({"ecn": True, "cc": {"kind": "dctcp", "alpha_init": 2}}, "flow[0].tcp.cc.alpha_init"),
        ({"cc": "dctcp"}, "flow[0].tcp.ecn"),
    ],
)
def test_bad_values_are_refused_naming_the_key(tcp, key):
    sc = dumbbell("dctcp", n=1)
    sc["flow"][0]["tcp"] = tcp
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check(sc)
    assert key in str(e.value)


def test_cli_exit_2_names_the_key(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(
        'duration = "1s"\n'
        '[[node]]\nname = "a"\n[[node]]\nname = "b"\n'
        '[[link]]\na = "a"\nb = "b"\nrate = "10Mbps"\ndelay = "1ms"\n'
        '[[flow]]\nname = "f"\nfrom = "a"\nto = "b"\ntcp = { cc = "dctcp" }\n'
    )
    r = subprocess.run(
        [sys.executable, "-m", "qoslab", "check", str(p)], capture_output=True, text=True
    )
    assert r.returncode == 2, r
    assert "tcp.ecn" in r.stderr and "ecn = true" in r.stderr, r.stderr
