#!/usr/bin/env python3
"""P1 Fig. 7b: the paper's rule error ≈ RTT_dev / RTT_min against the exact first-order
value RTT_dev / (RTT + RTT_dev).

The TRC holds a flow's window at W_max for the RTT it was told; when the real RTT is
larger by RTT_dev, goodput = W / (RTT + RTT_dev) instead of W / RTT, so the error
1 − goodput(RTT_dev) / goodput(0) is RTT_dev / (RTT + RTT_dev). The paper's
RTT_dev / RTT_min is its first-order approximation and lies above it by the factor
(RTT + RTT_dev) / RTT: 2.5 % at 5 ms, 10 % at 20 ms with RTT ≈ 200 ms. This script reads a
reproduction folder (``qoslab reproduce -o RESULTS p1-f7b``), takes RTT as the mean
smoothed RTT the senders measured at RTT_dev = 0, and prints, per flow request and
RTT_dev, the paper's rule, the exact value and ours.

Usage: python3 validation/p1_f7b_rule.py RESULTS/p1-f7b [--requested 10e6]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from qoslab.sweep import gather

#: One-way access delay of the F7b scenario at RTT_dev = 0 (the sweep adds RTT_dev / 2).
BASE_DELAY_MS = 0.5
#: RTT*_min the F7b TRCs enforce (paper §5.4).
RTT_MIN = 0.2


def errors(sweep: Path, requested: float) -> pl.DataFrame:
    """Per RTT_dev: ours, the paper's rule and the exact value for one requested rate."""
    flows = gather(sweep, "flows")
    trc = gather(sweep, "trc").select("run", "name", pl.col("target_bps"))
    df = flows.join(trc, on=["run", "name"])
    df = df.filter((pl.col("target_bps") / 1.06 - requested).abs() < 1)
    delay = pl.col("link.0.delay").str.strip_suffix("ms").cast(pl.Float64)
    g = (
        df.with_columns(((delay - BASE_DELAY_MS) * 2e-3).round(6).alias("rtt_dev"))
        .group_by("rtt_dev")
        .agg(pl.col("goodput_bps").mean(), pl.col("srtt").mean(), pl.len().alias("runs"))
        .sort("rtt_dev")
    )
    g0 = g.filter(pl.col("rtt_dev") == 0)
    gp0, rtt0 = float(g0["goodput_bps"][0]), float(g0["srtt"][0])
    return g.with_columns(
        (1 - pl.col("goodput_bps") / gp0).alias("ours"),
        (pl.col("rtt_dev") / RTT_MIN).alias("paper_rule"),
        (pl.col("rtt_dev") / (rtt0 + pl.col("rtt_dev"))).alias("exact"),
    ).with_columns((pl.col("ours") / pl.col("exact") - 1).alias("ours_vs_exact"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", type=Path, help="an experiment folder, e.g. RESULTS/p1-f7b")
    ap.add_argument("--requested", type=float, default=10e6, help="request [b/s]")
    a = ap.parse_args()
    for sw in sorted((a.experiment / "sweeps").iterdir()):
        t = errors(sw, a.requested)
        print(f"{sw.name}: {a.requested / 1e6:g} Mb/s flow, RTT at RTT_dev = 0 "
              f"{t['srtt'][0] * 1e3:.1f} ms (mean smoothed RTT)")  # fmt: skip
        head = ["RTT_dev", "runs", "rule", "exact", "ours", "ours/exact-1"]
        print("  " + " ".join(f"{h:>{w}}" for h, w in zip(head, [8, 5, 8, 8, 8, 13], strict=True)))
        for r in t.filter(pl.col("rtt_dev") > 0).iter_rows(named=True):
            print(f"  {r['rtt_dev'] * 1e3:6.0f}ms {r['runs']:5} {r['paper_rule']:8.4f} "
                  f"{r['exact']:8.4f} {r['ours']:8.4f} {r['ours_vs_exact']:+13.2%}")  # fmt: skip


if __name__ == "__main__":
    main()
