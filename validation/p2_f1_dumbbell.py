"""P2's dumbbell (Fig. 1) with and without ERUF at a few total CBR rates: TCP and UDP
goodput, drops at the edge router R1 and at the core router R2, and the quenches R2
sent. With ERUF the drops of the undeliverable CBR traffic move from R2 to R1 and TCP
keeps most of the 1.5 Mb/s long-haul link.

    python validation/p2_f1_dumbbell.py [--seconds 500] [--rates 8.89,500,1000,2000]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import scenarios_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=500.0)
    ap.add_argument("--rates", default="8.89,100,500,1000,1500,2000", help="total CBR [kb/s]")
    a = ap.parse_args()
    print("CBR total [kb/s]  ERUF  TCP [kb/s]  UDP [kb/s]  drops R1  drops R2  quenches")
    for total in (float(r) for r in a.rates.split(",")):
        for stem in ("f1-dumbbell", "f1-dumbbell-eruf"):
            over = {"duration": f"{a.seconds:g}s"}
            for f in ("cbr1", "cbr2", "cbr3"):
                over[f"flow.{f}.cbr.rate"] = f"{total / 3:.4f}kbps"
            res = qoslab.run(scenarios_dir() / "p2" / f"{stem}.toml", over)
            fl = res.tables["flows"]
            gp = fl.group_by("kind").agg(pl.col("goodput_bps").sum() / 1e3)
            kbps = dict(gp.iter_rows())
            d = res.tables["drops"].with_columns(pl.col("place").str.slice(0, 2).alias("r"))
            drops = dict(d.group_by("r").agg(pl.col("packets").sum()).iter_rows())
            q = res.tables["quench"]["sent"].sum() if "quench" in res.tables else 0
            print(
                f"{total:16.2f}  {'yes' if 'eruf' in stem else 'no':4}  {kbps['tcp']:10.1f}"
                f"  {kbps['cbr']:10.1f}  {drops.get('r1', 0):8}  {drops.get('r2', 0):8}  {q:8}"
            )


if __name__ == "__main__":
    main()
