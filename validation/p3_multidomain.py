"""Why the long aggregates of qoslab's multi-domain P3 topology get less than the short
ones even under the basic RTT-aware marker: every inter-domain link is congested and
F1/F2 cross all three (the multi-bottleneck penalty), while each cross aggregate crosses
one. Prints, for the basic RTT-aware scenario, each aggregate's path and throughput and
each inter-domain link's drops.

    python validation/p3_multidomain.py [--seconds 150]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p3, scenarios_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=p3.DURATION)
    a = ap.parse_args()
    res = qoslab.run(scenarios_dir() / "p3" / "md-rtt.toml", {"duration": f"{a.seconds:g}s"})
    fl = res.tables["flows"].with_columns(
        pl.col("name").str.split("-").list.first().alias("aggregate")
    )
    print("aggregate  path            links crossed  RTT [ms]  throughput [Mb/s]")
    for name, (_, ra, _, rb) in p3.MD_FLOWS.items():
        i, j = p3.DOMAINS.index(ra), p3.DOMAINS.index(rb)
        mbps = fl.filter(pl.col("aggregate") == name)["goodput_bps"].sum() / 1e6
        path = "–".join(p3.DOMAINS[i : j + 1])
        print(f"{name:9}  {path:14}  {j - i:13}  {1000 * p3.md_rtt(name):8.0f}  {mbps:17.2f}")
    d = res.tables["drops"].group_by("place").agg(pl.col("packets").sum()).sort("place")
    q = res.tables["queues"].select("iface", "arrived", "utilisation")
    print("\nlink    drops  arrived  utilisation")
    for place, drops in d.iter_rows():
        row = q.filter(pl.col("iface") == place)
        print(f"{place:6}  {drops:5}  {row['arrived'][0]:7}  {row['utilisation'][0]:11.3f}")


if __name__ == "__main__":
    main()
