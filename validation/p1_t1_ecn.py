#!/usr/bin/env python3
"""P1 Table 1: where do the ECN runs differ from the drop runs?

Reads a full-mode reproduction folder (``qoslab reproduce -o RESULTS p1-t1``) and prints,
per bottleneck rate, access delay and request, the mean goodput with drops and with
ECN, their ratio, and per run the TRC's drops or marks and the sender's reductions
(fast retransmits with drops, ECN reductions with marks), all counted over the whole
run (the TRC's counters include the warm-up, so the senders' whole-run counters are
the ones to set beside them). A mark that reaches a sender already reducing in that
window would cause no reduction; the counts show how often that happens.

Usage: python3 validation/p1_t1_ecn.py RESULTS/p1-t1 [--rate 10]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from qoslab.sweep import gather

KEYS = ["link.0.delay", "target_bps"]


def per_cell(sweep: Path) -> pl.DataFrame:
    """Means over runs per access delay and TRC target of a T1 sweep."""
    flows = gather(sweep, "flows")
    trc = gather(sweep, "trc").select("run", "name", "target_bps", "dropped", "marked")
    return (
        flows.join(trc, on=["run", "name"])
        .group_by(KEYS)
        .agg(
            pl.col("goodput_bps").mean(),
            pl.col("dropped").mean(),
            pl.col("marked").mean(),
            pl.col("fast_retransmits_whole_run").mean(),
            pl.col("ecn_reductions_whole_run").mean(),
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", type=Path, help="an experiment folder, e.g. RESULTS/p1-t1")
    ap.add_argument("--rate", type=int, help="only this bottleneck rate [Mb/s]")
    a = ap.parse_args()
    rates = [a.rate] if a.rate else [2, 10, 50]
    for r in rates:
        sweeps = a.experiment / "sweeps"
        drop = per_cell(sweeps / f"t1-{r}mbps-drop")
        ecn = per_cell(sweeps / f"t1-{r}mbps-ecn")
        j = drop.join(ecn, on=KEYS, suffix="_ecn").sort(KEYS)
        print(f"{r} Mb/s: per run, drops → fast retransmits (drop runs) and "
              "marks → ECN reductions (ECN runs)")  # fmt: skip
        print(f"  {'access':>7} {'request':>9} {'ECN÷drop':>9} {'drops':>7} {'fast rtx':>8} "
              f"{'marks':>7} {'reductions':>10}")  # fmt: skip
        for row in j.iter_rows(named=True):
            print(f"  {row['link.0.delay']:>7} {row['target_bps'] / 1.06e3:7.0f}k "
                  f"{row['goodput_bps_ecn'] / row['goodput_bps']:9.4f} {row['dropped']:7.1f} "
                  f"{row['fast_retransmits_whole_run']:8.1f} {row['marked_ecn']:7.1f} "
                  f"{row['ecn_reductions_whole_run_ecn']:10.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
