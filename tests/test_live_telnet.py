"""P3's Telnet workload live: the agent writes sessions of small writes on a Linux TCP
connection with the simulator's laws, and the `telnet` table gives each write's delay
until the receiving application read its last byte. Needs root and /dev/net/tun (one
run of 3 s)."""

from __future__ import annotations

import polars as pl

from conftest import needs_live, two_hosts
from qoslab.api import live

pytestmark = needs_live

TELNET = (
    two_hosts("tel", delay="20ms", limit=None)
    + """
[[flow]]
name = "tn"
from = "a"
to = "b"
tcp = {}
telnet = { mean_interval = "50ms", mean_idle = "300ms", size_min = 40, size_max = 100 }
"""
)


def test_telnet_writes_and_their_delays_live(tmp_path):
    p = tmp_path / "tel.toml"
    p.write_text(TELNET)
    r = live(p)
    t = r.table("telnet")
    assert t.height >= 10, t
    assert t["flow"].unique().to_list() == [0]
    assert t["size"].min() >= 40 and t["size"].max() <= 100
    # Times from the sender's start, in order, within the run.
    assert 0.0 <= t["t"][0] < 0.5 and t["t"].is_sorted() and t["t"].max() < 3.0
    # Every write crossed the 20 ms link (never sooner) on an idle path (no queue, no
    # loss, Nagle off): its delay is the propagation plus little.
    d = t["delay"].drop_nans()
    assert d.len() >= t.height - 2, t  # the last writes may still be in flight
    assert d.min() >= 0.020 and d.median() < 0.030, d.describe()
    # Sessions of 5-35 writes (the last may be cut by the run's end).
    s = r.table("telnet_sessions")
    assert (
        s["writes"].max() <= 35
        and s.filter(pl.col("session") < s["session"].max())["writes"].min() >= 5
    )
    # The sink read every byte the sender wrote (nothing was still in flight at 3 s
    # beyond the writes without a delay).
    written = int(t["size"].sum())
    delivered = int(t.filter(pl.col("delay").is_not_nan())["size"].sum())
    f = r.flows.row(0, named=True)
    assert delivered <= f["goodput_bytes"] <= written, (f["goodput_bytes"], written)
