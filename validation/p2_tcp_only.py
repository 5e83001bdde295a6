"""P2's TCP-only claim (ERUF causes at most one extra drop to competing TCP flows) against
the regulator's bucket depth, which the paper does not give: TCP flows through the edge
R1 into the core R2 (bottleneck R2 → H3, 1.5 Mb/s), with and without ERUF, per number
of flows and seed: drops with ERUF − without, and packets the regulators policed. TCP
sends its window in bursts at the 10 Mb/s access rate; a bucket of two packets (3000 B)
polices them, one of a TCP window (64 × 1500 B, qoslab's P2 choice) does not. The
bucket depth hardly changes the regulation of CBR flows (last lines).

    python validation/p2_tcp_only.py [--seconds 100] [--seeds 3]
"""

from __future__ import annotations

import argparse

import qoslab
from qoslab.reproduce import p2

BURSTS = [3000, 15000, p2.REG_BURST]
KEY = "conditioner.0.stages.0.burst"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    dur = {"duration": f"{a.seconds:g}s"}
    print("bucket [B]  TCP flows  extra drops per seed   policed per seed")
    for burst in BURSTS:
        for n in (1, 2, 10):
            extra, policed = [], []
            for seed in range(1, a.seeds + 1):
                plain = qoslab.run(p2.tcp_only(n, False), dur, seed)
                eruf = qoslab.run(p2.tcp_only(n, True), {**dur, KEY: burst}, seed)
                d0 = p2.measure(plain, p2.EDGES["tcp"])["drops"]
                d1 = p2.measure(eruf, p2.EDGES["tcp"])["drops"]
                extra.append(int(d1 - d0))
                policed.append(int(eruf.tables["eruf"]["policed"].sum()))
            print(f"{burst:10}  {n:9}  {extra!s:21}  {policed}")
    print("\nbucket [B]  dumbbell at 2 Mb/s CBR with ERUF: TCP [kb/s]  edge share of drops")
    for burst in BURSTS:
        res = qoslab.run(p2.with_total(p2.dumbbell(True), 2000), {**dur, KEY: burst})
        m = p2.measure(res, p2.EDGES["f1"])
        share = m["edge_drops_per_s"] / (m["edge_drops_per_s"] + m["core_drops_per_s"])
        print(f"{burst:10}  {m['tcp_kbps']:44.1f}  {share:.3f}")


if __name__ == "__main__":
    main()
