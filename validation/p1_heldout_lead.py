"""The held-out TRC case (``p1.HELDOUT10_FLOWS``, 10 Mb/s, ρ = 0.85) with a given TCP and
recovery lead, several seeds: per flow the worst/best achieved ÷ requested, timeouts,
fast retransmits and packets led (docs/papers/p1.md#recovery-lead).

    python3 validation/p1_heldout_lead.py TCP_JSON SEEDS_JSON DURATION FLOWS_JSON|- [LEAD] [BW]
    python3 validation/p1_heldout_lead.py '{"max_window":2000}' '[1,2,3,4,5]' 600s - 0s
"""

import argparse
import json

import polars as pl

from qoslab.api import run
from qoslab.reproduce import p1


def main() -> None:
    """Prints per flow the worst and best achieved ÷ requested over the seeds."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("tcp", help="JSON tcp keys of every flow")
    ap.add_argument("seeds", help="JSON list of seeds")
    ap.add_argument("duration", help="run length, e.g. 600s")
    ap.add_argument("flows", help="JSON list of flows, or - for p1.HELDOUT10_FLOWS")
    ap.add_argument("lead", nargs="?", default=None, help="the TRC's recovery_lead")
    ap.add_argument("bw", nargs="?", type=float, default=10e6, help="bottleneck [b/s]")
    a = ap.parse_args()
    tcp, seeds, dur, mode, bw = json.loads(a.tcp), json.loads(a.seeds), a.duration, a.lead, a.bw
    flows = json.loads(a.flows) if a.flows != "-" else p1.HELDOUT10_FLOWS
    sc = p1.dumbbell("diag", [tuple(f) for f in flows], bottleneck=bw, access=100e6, tcp=tcp)
    sc = {**sc, "duration": dur, "warmup": "100s"}
    sc.pop("sweep", None)
    if mode:
        p1.set_trc(sc, recovery_lead=mode)
    req = p1.requested_rates(sc)
    rows = []
    for s in seeds:
        r = run(sc, seed=s)
        fl = r.tables["flows"].join(
            r.tables["trc"].select(
                ["name", "rtt_trc", "w_max"]
                + [c for c in ("led", "retransmits") if c in r.tables["trc"].columns]
            ),
            on="name",
        )
        rows.append(fl.with_columns(pl.lit(s).alias("seed")))
    df = (
        pl.concat(rows, how="diagonal_relaxed")
        .with_columns(pl.col("name").replace_strict(req, return_dtype=pl.Float64).alias("req"))
        .with_columns((pl.col("goodput_bps") / pl.col("req")).alias("ratio"))
    )
    pl.Config.set_tbl_rows(100)
    pl.Config.set_tbl_width_chars(200)
    pl.Config.set_tbl_cols(20)
    agg = (
        df.group_by("name")
        .agg(
            pl.col("req").first(),
            pl.col("w_max").first(),
            pl.col("rtt_trc").first(),
            pl.col("ratio").min().alias("rmin"),
            pl.col("ratio").max().alias("rmax"),
            pl.col("timeouts").sum().alias("to"),
            pl.col("fast_retransmits").sum().alias("fr"),
            *([pl.col("led").sum()] if "led" in df.columns else []),
        )
        .sort("name")
    )
    print(agg)
    ok = (df["ratio"] >= 1.0) & (df["ratio"] <= 1.03 * 1.06)
    print(
        "worst",
        round(df["ratio"].min(), 4),
        "best/target",
        round(df["ratio"].max() / 1.06, 4),
        "within",
        int(ok.sum()),
        "/",
        df.height,
    )


if __name__ == "__main__":
    main()
