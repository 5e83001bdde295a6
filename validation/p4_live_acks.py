"""P4 live: how often the receivers of striping's sockets ACK, live and in the twin, and
how full the segments Linux's striped sockets send are (``docs/papers/live.md#p4-tlp``),
from a finished ``p4-live`` reproduction; no run of its own.

    .venv/bin/python validation/p4_live_acks.py results/p4live-full
    .venv/bin/python validation/p4_live_acks.py results/p4live-full \
        --out docs/validation/p4-live-acks.md

Per striping run (``stripe-wW-sS`` and its simulated twin ``…-twin``):

- live, the striped sockets (``live_conns``, the datapath's count per 5-tuple): data
  packets delivered to the receiver (retransmissions included), their mean TCP payload
  [bytes] (Linux's MSS here is 1448), and packets the receiver sent back (ACKs, window
  updates) per data packet delivered; the unit Linux flow's the same (``flows``);
- twin, the same ratio for qoslab's striped flow and unit flow (``flows``:
  ``acks_sent`` ÷ ``pkts_delivered``).

Printed per w as the mean over the seeds; ``--out`` writes it as a Markdown page.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import polars as pl

from qoslab.reproduce.p4_live import PORT

RUN = re.compile(r"stripe-w(?P<w>\d+)-s(?P<seed>\d+)$")
COLUMNS = [
    "w",
    "seeds",
    "live_payload_bytes",
    "live_acks_per_pkt",
    "twin_acks_per_pkt",
    "live_unit_acks_per_pkt",
    "twin_unit_acks_per_pkt",
]


def run_row(run: Path) -> dict[str, float]:
    """The measures of one striping run and its twin."""
    conns = pl.read_parquet(run / "live_conns.parquet").filter(pl.col("proto") == "tcp")
    data = conns.filter(pl.col("dport") == PORT)
    back = conns.filter(pl.col("sport") == PORT)
    pkts = data["pkts_delivered"].sum()
    live = pl.read_parquet(run / "flows.parquet").row(
        by_predicate=pl.col("name") == "unit", named=True
    )
    twin = pl.read_parquet(run.with_name(run.name + "-twin") / "flows.parquet")

    def twin_ratio(name: str) -> float:
        r = twin.row(by_predicate=pl.col("name") == name, named=True)
        return r["acks_sent"] / r["pkts_delivered"]

    return {
        "live_payload_bytes": data["payload_delivered"].sum() / pkts,
        "live_acks_per_pkt": back["pkts_sent"].sum() / pkts,
        "twin_acks_per_pkt": twin_ratio("weighted"),
        "live_unit_acks_per_pkt": live["acks_sent"] / live["pkts_delivered"],
        "twin_unit_acks_per_pkt": twin_ratio("unit"),
    }


def table(results: Path) -> pl.DataFrame:
    """One row per w: the mean over the seeds of :func:`run_row`."""
    runs = results / "p4-live" / "runs"
    rows = []
    for run in sorted(runs.iterdir()):
        m = RUN.match(run.name)
        if m and (run / "manifest.json").is_file() and (runs / f"{run.name}-twin").is_dir():
            rows.append({"w": int(m["w"]), "seed": int(m["seed"]), **run_row(run)})
    if not rows:
        raise SystemExit(f"{runs}: no finished striping run with its twin")
    df = pl.DataFrame(rows)
    means = [pl.col(c).mean() for c in COLUMNS[2:]]
    return df.group_by("w").agg(pl.len().alias("seeds"), *means).sort("w").select(COLUMNS)


def markdown(df: pl.DataFrame, results: Path) -> str:
    """The page ``--out`` writes."""
    lines = [
        "# P4 live: the striped sockets' ACKs, live and in the twin",
        "",
        "Written by `python validation/p4_live_acks.py "
        f"{results} --out …` from the runs of a finished `p4-live` reproduction "
        "(mean over the seeds per w; see the script's docstring for each column).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in df.iter_rows():
        cells = (f"{v:.4g}" if isinstance(v, float) else str(v) for v in r)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a finished `qoslab reproduce p4-live -o` folder")
    ap.add_argument("--out", type=Path, help="write the table as a Markdown page")
    a = ap.parse_args(argv)
    df = table(a.results)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200):
        print(df)
    if a.out:
        a.out.write_text(markdown(df, a.results))
        print(f"wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
