"""P2 Fig. 5 (video server) as qoslab reads it: why ERUF moves only part of the drops to
the edge. Five CBR flows of equal rate enter the edge R1; the three H3 → H6 flows can
deliver only 128 kb/s in total at R2. R2 quenches at most 100 drops/s, so each of the
three flows is quenched about every 30 ms, and after the hold a regulator grows by one
100-byte packet per 10 ms RTT estimate (80 kb/s per 10 ms): a flow of 200–400 kb/s
halved is back at its rate within two to five RTT estimates and the regulator hardly
drops. Variants: a quench limit ten times higher, and a 100 ms RTT estimate (the
regulator grows ten times slower per second), each move most drops to the edge and hold
the H6 flows near the 128 kb/s they can deliver (the paper: "at most 130 kb/s"); a
3000-byte regulator bucket instead of qoslab's 96000 bytes changes nothing.

    python validation/p2_video.py [--seconds 100] [--rates 1000,1250,2000]
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

import qoslab
from qoslab.reproduce import p2


def _quench_x10(d: dict[str, Any]) -> None:
    for n in d["node"]:
        if "source_quench" in n:
            n["source_quench"] = {"rate": 1000, "burst": 100}


def _rtt_100ms(d: dict[str, Any]) -> None:
    for c in d.get("conditioner", []):
        for st in c["stages"]:
            st["rtt"] = "100ms"


def _bucket_3000(d: dict[str, Any]) -> None:
    for c in d.get("conditioner", []):
        for st in c["stages"]:
            st["burst"] = 3000


VARIANTS = {
    "qoslab's reading": None,
    "quench limit 1000/s": _quench_x10,
    "RTT estimate 100 ms": _rtt_100ms,
    "regulator bucket 3000 B": _bucket_3000,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--rates", default="1000,1250,2000", help="total CBR [kb/s]")
    a = ap.parse_args()
    print("variant               CBR total  ERUF  edge share  H6 flows over R1->R2 [kb/s]")
    for total in (float(r) for r in a.rates.split(",")):
        for name, change in VARIANTS.items():
            for eruf in (False, True):
                if change is not None and not eruf:
                    continue
                d = copy.deepcopy(p2.with_total(p2.video_server(eruf), total))
                if change is not None:
                    change(d)
                res = qoslab.run(d, {"duration": f"{a.seconds:g}s"})
                m = p2.measure(res, p2.EDGES["f5"])
                share = m["edge_drops_per_s"] / (m["edge_drops_per_s"] + m["core_drops_per_s"])
                print(
                    f"{name:21} {total:9g}  {'yes' if eruf else 'no':4}  {share:10.2f}"
                    f"  {p2.into_link_kbps(res, 'h6', 'r2->h6'):10.1f}"
                )


if __name__ == "__main__":
    main()
