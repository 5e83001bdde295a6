#!/usr/bin/env python3
"""P1 Tables 2–4 at ρ = 0.85: where do drops inside the network happen?

Reads a full-mode reproduction folder (``qoslab reproduce -o RESULTS p1-t2 …``) and
prints, per sweep, how many runs had drops other than the TRC's own, the most in one
run, the total, their causes and places. Only the ρ = 0.85 sweeps at 50 Mb/s should
show any: core-queue overflows (``r0->r1``) when many flows' bursts coincide.

Usage: python3 validation/p1_rho_core.py RESULTS/p1-t2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from qoslab.sweep import gather

TRC_CAUSES = ["controlled", "cond_buffer_full"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", type=Path, help="an experiment folder, e.g. RESULTS/p1-t2")
    a = ap.parse_args()
    print(f"{'sweep':32} runs with drops  most  total  causes / places")
    for sw in sorted((a.experiment / "sweeps").iterdir()):
        dr = gather(sw, "drops")
        net = dr.filter(~pl.col("cause").is_in(TRC_CAUSES)) if not dr.is_empty() else dr
        if net.is_empty():
            print(f"{sw.name:32} {0:15}  {0:4}  {0:5}")
            continue
        per = net.group_by("run").agg(pl.col("packets").sum())
        what = f"{sorted(set(net['cause']))} {sorted(set(net['place']))}"
        print(f"{sw.name:32} {per.height:15}  {per['packets'].max():4}  "
              f"{per['packets'].sum():5}  {what}")  # fmt: skip


if __name__ == "__main__":
    main()
