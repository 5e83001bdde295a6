"""Why qoslab's short-RTT Telnet aggregates (F3, F5) have their lowest delay under the
standard conditioner in P3 Table I's scenarios, not under RTT-SW as in the paper: the
standard TSW3CM marks about the same share of every aggregate DP2, while the RTT-aware
markers put nearly all their DP2 packets on F3, the aggregate with the minimum RTT
(q = 1 for the basic marker and RTT-SW, RTT/RTO for RTT-RTO). Prints per conditioner and
aggregate the mean delay per packet, the timeouts and the share of packets marked DP2
(red), summed over seeds.

    python validation/p3_telnet_short.py [--seeds 5]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p3, p3_telnet, scenarios_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    print("conditioner   aggregate  RTT [ms]  delay [s]  timeouts  DP2 share")
    for stem in p3.MD_MARKERS:
        ws, fls, cs = [], [], []
        for seed in range(1, a.seeds + 1):
            res = qoslab.run(scenarios_dir() / "p3" / f"telnet-{stem}.toml", seed=seed)
            ws.append(p3_telnet.telnet_delays(res)[0].filter(pl.col("delay").is_not_nan()))
            fls.append(res.tables["flows"].select("name", "timeouts"))
            cs.append(res.tables["colours"].select("name", "green_pkts", "yellow_pkts", "red_pkts"))
        agg = pl.col("name").str.split("-").list.first().alias("aggregate")
        w = pl.concat(ws).group_by("aggregate").agg(pl.col("delay").mean())
        fl = pl.concat(fls).with_columns(agg).group_by("aggregate").agg(pl.col("timeouts").sum())
        c = (
            pl.concat(cs)
            .with_columns(agg)
            .group_by("aggregate")
            .agg(pl.col("green_pkts", "yellow_pkts", "red_pkts").sum())
        )
        t = w.join(fl, on="aggregate").join(c, on="aggregate").sort("aggregate")
        for r in t.iter_rows(named=True):
            tot = r["green_pkts"] + r["yellow_pkts"] + r["red_pkts"]
            rtt = 1000 * p3.md_rtt(r["aggregate"])
            print(f"{stem:12}  {r['aggregate']:9}  {rtt:8.0f}  {r['delay']:9.2f}  "
                  f"{r['timeouts']:8}  {r['red_pkts'] / max(tot, 1):9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
