"""Why TCP collapses without ERUF in qoslab's P2 dumbbell (Fig. 1) where the paper's TCP
levels off near 400 kb/s: TCP goodput at high total CBR rates with R1's queue towards
R2 (the 1.5 Mb/s long haul) set in other ways, without ERUF, and with ERUF but without
the edge's per-flow LQD buffer. No FIFO variant (RED with ns-2's `wait`, gentle RED,
max_p 0.02, byte-mode RED, a 100-packet RED, DropTail) nor ns-2's coarse TCP timer
keeps TCP near 400 kb/s at 2 Mb/s; per-flow LQD alone protects TCP fully (so the paper's
baseline cannot have had it); ERUF without LQD still lifts TCP (the regulators do it).

    python validation/p2_collapse.py [--seconds 100] [--rates 1000,1500,2000]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p2

Q = "link.2.queue"
VARIANTS: dict[str, tuple[bool, dict]] = {
    "RED 50 (qoslab's reading)": (False, {}),
    "RED + ns-2 wait": (False, {f"{Q}.wait": True}),
    "gentle RED": (False, {f"{Q}.gentle": True}),
    "RED max_p 0.02": (False, {f"{Q}.max_p": 0.02}),
    "RED 100 packets": (False, {f"{Q}.limit": 100}),
    "byte-mode RED 25 kB": (False, {Q: {"kind": "red", "limit_bytes": 25000, "min_th": 2500,
                                         "max_th": 7500, "mean_pkt_size": 500}}),
    "DropTail 50": (False, {Q: {"kind": "droptail", "limit": 50}}),
    "RED, TCP ns-2 timer 100 ms": (False, {"flow.tcp.tcp.rto_estimator": "ns2",
                                           "flow.tcp.tcp.granularity": "100ms"}),
    "per-flow LQD at R1, no ERUF": (False, {"link.2.queue_a_to_b": dict(p2.LQD)}),
    "ERUF (LQD at R1)": (True, {}),
    "ERUF with RED at R1": (True, {"link.2.queue_a_to_b": dict(p2.RED)}),
}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--rates", default="1000,1500,2000", help="total CBR [kb/s]")
    a = ap.parse_args()
    rates = [float(r) for r in a.rates.split(",")]
    print("TCP goodput [kb/s] by total CBR rate [kb/s]; the paper: ≈ 400 without ERUF")
    print(f"{'R1 → R2 queue / variant':30}" + "".join(f"{r:>9g}" for r in rates))
    for name, (eruf, ov) in VARIANTS.items():
        cells = []
        for r in rates:
            d = p2.with_total(p2.dumbbell(eruf), r)
            res = qoslab.run(d, {"duration": f"{a.seconds:g}s", **ov})
            fl = res.tables["flows"].filter(pl.col("kind") == "tcp")
            cells.append(float(fl["goodput_bps"].sum()) / 1e3)
        print(f"{name:30}" + "".join(f"{c:9.1f}" for c in cells))


if __name__ == "__main__":
    main()
