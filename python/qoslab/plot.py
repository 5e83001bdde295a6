"""Figures in the papers' styles, drawn from result tables (never from in-memory runs).

Each function takes polars DataFrames as ``qoslab.load`` / ``qoslab.sweep.gather``
return them and gives a matplotlib ``Figure`` (Agg backend; no display needed), or
``None`` when the table has nothing to draw.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
from matplotlib.figure import Figure

__all__ = ["cum_throughput", "cwnd_traces", "drops_by_place", "goodput_vs_param", "png_bytes"]


def _first(df: pl.DataFrame, *names: str) -> str | None:
    return next((n for n in names if n in df.columns), None)


def cum_throughput(series: pl.DataFrame, title: str = "") -> Figure | None:
    """Cumulative data delivered per flow over time, with the total (P0's figures)."""
    if series.is_empty() or not {"t", "cum_bytes"} <= set(series.columns):
        return None
    label = _first(series, "name", "flow")
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, g in series.sort("t").group_by(label, maintain_order=True):
        ax.plot(g["t"], g["cum_bytes"] * 8 / 1e6, label=str(key[0]))
    total = series.group_by("t").agg(pl.col("cum_bytes").sum()).sort("t")
    ax.plot(total["t"], total["cum_bytes"] * 8 / 1e6, "k--", lw=2, label="total")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("cumulative goodput [Mbit]")
    ax.set_title(title or "Cumulative throughput per flow")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def goodput_vs_param(
    summary: pl.DataFrame, param: str, metric: str = "goodput_bps", title: str = ""
) -> Figure | None:
    """Mean ``metric`` per flow vs a swept parameter, with 95 % CI bands."""
    mean, ci = f"{metric}_mean", f"{metric}_ci95"
    if summary.is_empty() or param not in summary.columns or mean not in summary.columns:
        return None
    xs = list(dict.fromkeys(summary[param].to_list()))
    numeric = all(isinstance(x, (int, float)) for x in xs)
    pos = {x: (x if numeric else i) for i, x in enumerate(xs)}
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, g in summary.group_by("name", maintain_order=True):
        g = g.with_columns(pl.col(param).replace_strict(pos, return_dtype=pl.Float64).alias("_x"))
        g = g.sort("_x")
        x = g["_x"].to_numpy()
        y = g[mean].to_numpy() / 1e6
        ax.plot(x, y, marker="o", label=str(key[0]))
        if ci in g.columns:
            e = g[ci].fill_null(0).fill_nan(0).to_numpy() / 1e6
            ax.fill_between(x, y - e, y + e, alpha=0.2)
    if not numeric:
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_xlabel(param)
    ax.set_ylabel(f"{metric} [M]" if metric.endswith("bps") else metric)
    ax.set_title(title or f"{metric} vs {param} (mean, 95 % CI)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def drops_by_place(drops: pl.DataFrame, title: str = "") -> Figure | None:
    """Dropped packets per place, stacked by cause."""
    place = _first(drops, "place", "where", "node", "iface")
    count = _first(drops, "packets", "drops", "count", "pkts")
    if drops.is_empty() or place is None or count is None:
        return None
    cause = _first(drops, "cause")
    piv = drops.group_by([place, *([cause] if cause else [])], maintain_order=True).agg(
        pl.col(count).sum()
    )
    places = list(dict.fromkeys(piv[place].to_list()))
    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = [0.0] * len(places)
    groups = piv.group_by(cause, maintain_order=True) if cause else [(("all",), piv)]
    for key, g in groups:
        m = dict(zip(g[place].to_list(), g[count].to_list(), strict=True))
        h = [float(m.get(p, 0)) for p in places]
        ax.bar(range(len(places)), h, bottom=bottom, label=str(key[0]))
        bottom = [b + v for b, v in zip(bottom, h, strict=True)]
    ax.set_xticks(range(len(places)), [str(p) for p in places], rotation=30, ha="right")
    ax.set_ylabel("packets dropped")
    ax.set_title(title or "Drops by place and cause")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def cwnd_traces(traces: pl.DataFrame, title: str = "") -> Figure | None:
    """Congestion window over time per traced flow."""
    var = _first(traces, "variable", "var")
    label = _first(traces, "name", "flow")
    if traces.is_empty() or var is None or label is None or "value" not in traces.columns:
        return None
    cw = traces.filter(pl.col(var) == "cwnd").sort("t")
    if cw.is_empty():
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, g in cw.group_by(label, maintain_order=True):
        ax.step(g["t"], g["value"] / 1000, where="post", label=str(key[0]))
    ax.set_xlabel("time [s]")
    ax.set_ylabel("cwnd [kB]")
    ax.set_title(title or "Congestion window")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes; closes it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()
