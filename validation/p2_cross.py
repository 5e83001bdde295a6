"""P2 Fig. 3 (cross traffic) as qoslab reads it: where the TCP flow H5 → H6 loses its
packets without ERUF, and how its goodput depends on the reading of the topology (its
round-trip time and whether its second bottleneck is shared). The paper's TCP falls to
about 50 kb/s without ERUF; in qoslab's reading it keeps a few hundred kb/s, and
readings with a longer TCP path lower it further.

    python validation/p2_cross.py [--seconds 100] [--rate 2000]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p2

VARIANTS = {
    "qoslab's reading": {},
    "TCP egress R3 → H6 50 ms": {"link.r3-h6.delay": "50ms"},
    "TCP egress R3 → H6 100 ms": {"link.r3-h6.delay": "100ms"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--rate", type=float, default=2000.0, help="total CBR [kb/s]")
    a = ap.parse_args()
    for name, ov in VARIANTS.items():
        for eruf in (False, True):
            d = p2.with_total(p2.cross(eruf), a.rate)
            links = [f"{lk['a']}-{lk['b']}" for lk in d["link"]]
            o = {k.replace("r3-h6", str(links.index("r3-h6"))): v for k, v in ov.items()}
            res = qoslab.run(d, {"duration": f"{a.seconds:g}s", **o})
            m = p2.measure(res, p2.EDGES["f3"])
            dr = res.tables["drops"].group_by("place").agg(pl.col("packets").sum()).sort("place")
            where = ", ".join(f"{p} {n}" for p, n in dr.iter_rows())
            tag = "ERUF" if eruf else "plain"
            print(f"{name:28} {tag:5} TCP {m['tcp_kbps']:7.1f} kb/s  drops: {where}")


if __name__ == "__main__":
    main()
