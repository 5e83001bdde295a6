"""P2 Fig. 2 (multi-dumbbell) as qoslab reads it: why ERUF lifts TCP less than the paper's
"up to 35 times". Without ERUF the TCP flow H1 → H3 loses its packets at R1 and at R2
and falls to about 50 kb/s, as in the paper. With ERUF the regulators at R1 and R4 hold
the CBR flows only as tightly as the quenches of R3 (100/s) allow, so some hundred kb/s
of undeliverable CBR still crosses the core link R2 → R3, a FIFO RED queue TCP shares
with them. In the dumbbell the shared link starts at the edge, whose per-flow LQD
buffer shields TCP; here it does not. Variants: the core link R2 → R3 with a per-flow
LQD buffer, and a ten times higher quench limit, each lift TCP with ERUF to the
dumbbell's level (about 1 Mb/s and more), showing where the difference comes from.

    python validation/p2_multi.py [--seconds 100] [--rate 2000]
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

import polars as pl

import qoslab
from qoslab.reproduce import p2


def _lqd_core(d: dict[str, Any]) -> None:
    for lk in d["link"]:
        if (lk["a"], lk["b"]) == ("r2", "r3"):
            lk["queue_a_to_b"] = dict(p2.LQD)


def _quench_x10(d: dict[str, Any]) -> None:
    for n in d["node"]:
        if "source_quench" in n:
            n["source_quench"] = {"rate": 1000, "burst": 100}


VARIANTS = {
    "qoslab's reading": None,
    "R2 -> R3 per-flow LQD": _lqd_core,
    "quench limit 1000/s": _quench_x10,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--rate", type=float, default=2000.0, help="total CBR [kb/s]")
    a = ap.parse_args()
    print("variant                 ERUF   TCP [kb/s]  CBR into R3 [kb/s]  drops R1/R4  R2  R3")
    for name, change in VARIANTS.items():
        for eruf in (False, True):
            d = copy.deepcopy(p2.with_total(p2.multi_dumbbell(eruf), a.rate))
            if change is not None:
                change(d)
            res = qoslab.run(d, {"duration": f"{a.seconds:g}s"})
            secs = a.seconds - p2.WARMUP
            m = p2.measure(res, p2.EDGES["f2"])
            dr = res.tables["drops"].with_columns(pl.col("place").str.slice(0, 2).alias("r"))
            by = dict(dr.group_by("r").agg(pl.col("packets").sum()).iter_rows())
            at_r3 = by.get("r3", 0) * p2.CBR_SIZE * 8 / secs / 1e3
            into_r3 = at_r3 + m["udp_kbps"] * p2.CBR_SIZE / (p2.CBR_SIZE - 28)
            edge = by.get("r1", 0) + by.get("r4", 0)
            print(
                f"{name:23} {'yes' if eruf else 'no':4} {m['tcp_kbps']:11.1f}"
                f"  {into_r3:18.1f}  {edge:11}  {by.get('r2', 0):6}  {by.get('r3', 0):6}"
            )


if __name__ == "__main__":
    main()
