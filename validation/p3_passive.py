"""What changes when P3's markers measure RTT, RTO and window at the edge (passive)
instead of being given them (oracle), in the far topology of ``p3-passive`` (the
RTT-setting delay beyond the edge, F2 RTT 100 ms). Prints per run F1's and F2's
throughput, timeouts, the share of their data packets marked DP2 (red), and the senders'
mean smoothed RTT against the propagation RTT the oracle runs are given: the passive
estimator sees what the senders' SRTT sees (queueing included), and its view of the
window (data in flight) keeps retransmissions after a timeout unprotected.

    python validation/p3_passive.py [--seed 1]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p3, p3_telnet, scenarios_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print("run                   agg  Mb/s  timeouts  DP2 share  SRTT [ms]  propagation [ms]")
    for stem, src in p3_telnet.FAR_RUNS:
        res = qoslab.run(scenarios_dir() / "p3" / f"far-{stem}-{src}.toml", seed=a.seed)
        agg = pl.col("name").str.split("-").list.first().alias("aggregate")
        fl = (
            res.tables["flows"]
            .with_columns(agg)
            .group_by("aggregate")
            .agg(
                (pl.col("goodput_bps").sum() / 1e6).alias("mbps"),
                pl.col("timeouts").sum(),
                pl.col("pkts_sent").sum(),
                (pl.col("srtt").fill_nan(None).mean() * 1000).alias("srtt_ms"),
            )
        )
        red = (
            res.tables["colours"]
            .with_columns(agg)
            .group_by("aggregate")
            .agg(pl.col("red_pkts").sum())
        )
        t = fl.join(red, on="aggregate").sort("aggregate")
        for r in t.iter_rows(named=True):
            prop = 1000 * (p3.F1_RTT if r["aggregate"] == "F1" else 0.100)
            print(f"{stem + ' ' + src:20}  {r['aggregate']:3}  {r['mbps']:4.2f}  "
                  f"{r['timeouts']:8}  {r['red_pkts'] / r['pkts_sent']:9.3f}  "
                  f"{r['srtt_ms']:9.1f}  {prop:16.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
