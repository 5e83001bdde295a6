"""What a DiffServ study reads first, per run, ready to be summarised across seeds by
:mod:`qoslab.sweep`: queue drops per class and colour, Jain's fairness index per flow
group, and each flow's group and added round-trip time beside its goodput.

Nothing here needs the engine or matplotlib; every function takes the gathered result
tables (one row per run and flow, interface or class, with the run's ``run`` key and
parameter columns) and returns a polars DataFrame.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = [
    "DROP_COLOURS",
    "FLOW_GROUP",
    "class_colour_drops",
    "group_fairness",
    "rtt_by_group",
]

#: The colours of queue drops, as the engine counts them: the drop precedence of an
#: AF codepoint (green, yellow, red) and ``none`` for a packet whose codepoint carries
#: none (best effort, EF, class selectors), which is never counted as green.
DROP_COLOURS = ("green", "yellow", "red", "none")

#: The per-flow summary's name for a flow's group (``group`` is an SQL keyword).
FLOW_GROUP = "flow_group"


def class_colour_drops(
    classes: pl.DataFrame, colour_drops: pl.DataFrame, by: Sequence[str]
) -> pl.DataFrame:
    """Per value of ``by`` (e.g. run and parameters), interface and class: queue drops
    of each colour (``dropped_green``, ``dropped_yellow``, ``dropped_red``,
    ``dropped_none``) and their total ``dropped``. Interfaces with per-class queues give
    one row per class (from the ``classes`` table); other colour-aware interfaces (RIO,
    WRED, ERED) one row with ``class`` empty (from ``colour_drops``). Results recorded
    before colour ``none`` existed count their drops by the colours they have."""
    by = list(by)
    cols = [f"dropped_{c}" for c in DROP_COLOURS]
    parts = []
    if not classes.is_empty() and {"iface", "class"} <= set(classes.columns):
        parts.append(_colour_columns(classes, [*by, "iface", "class"], cols))
    if not colour_drops.is_empty() and "iface" in colour_drops.columns:
        d = colour_drops
        if parts:  # interfaces with classes are counted per class above
            d = d.join(parts[0].select([*by, "iface"]).unique(), on=[*by, "iface"], how="anti")
        d = d.with_columns(pl.lit("").alias("class"))
        parts.append(_colour_columns(d, [*by, "iface", "class"], cols))
    parts = [p for p in parts if not p.is_empty()]
    if not parts:
        return pl.DataFrame()
    out = pl.concat(parts, how="vertical_relaxed")
    return out.with_columns(pl.sum_horizontal(cols).alias("dropped"))


def _colour_columns(df: pl.DataFrame, key: list[str], cols: list[str]) -> pl.DataFrame:
    """``df``'s ``key`` and colour columns (0 where a colour is missing), as integers."""
    present = [c for c in cols if c in df.columns]
    if not present:
        return pl.DataFrame()
    return df.select(
        [
            *key,
            *[(pl.col(c) if c in df.columns else pl.lit(0)).cast(pl.Int64).alias(c) for c in cols],
        ]
    )


def group_fairness(flows: pl.DataFrame, by: Sequence[str], metric: str = "goodput_bps"):
    """Per value of ``by`` and flow group (``group``): ``jain``, Jain's fairness index
    (Σx)² / (n·Σx²) of the group's flows' ``metric`` (1: all equal, 1/n: one flow has
    everything; NaN when every flow has 0). Empty without groups."""
    if flows.is_empty() or "group" not in flows.columns or metric not in flows.columns:
        return pl.DataFrame()
    x = pl.col(metric).cast(pl.Float64)
    return (
        flows.filter(pl.col("group") != "")
        .group_by([*by, "group"], maintain_order=True)
        .agg((x.sum() ** 2 / (pl.len() * (x**2).sum())).alias("jain"))
        .with_columns(pl.col("jain").fill_nan(None))
    )


def rtt_by_group(summary: pl.DataFrame, params: Sequence[str]) -> pl.DataFrame:
    """The per-flow sweep summary as goodput against round-trip time per group: per
    grid point, flow group and flow, its ``extra_delay`` (the delay added to its
    round trip [s], mean across seeds), its smoothed RTT at the end of the run
    (``srtt``) and its goodput, each with its 95 % interval, ordered by group and added
    delay. Empty when the flows have no groups."""
    if summary.is_empty() or FLOW_GROUP not in summary.columns:
        return pl.DataFrame()
    keep = [
        *[p for p in params if p in summary.columns],
        FLOW_GROUP,
        "name",
        "n",
        *[
            c
            for m in ("extra_delay", "srtt", "goodput_bps")
            for c in (f"{m}_mean", f"{m}_ci95")
            if c in summary.columns
        ],
    ]
    # grid points and groups in the summary's order; each group's flows by added delay
    at = [p for p in params if p in summary.columns]
    t = summary.filter(pl.col(FLOW_GROUP).is_not_null() & (pl.col(FLOW_GROUP) != ""))
    t = t.with_row_index("_i")
    order = [pl.col("_i").min().over(at) if at else pl.lit(0)]
    order.append(pl.col("_i").min().over([*at, FLOW_GROUP]))
    if "extra_delay_mean" in summary.columns:
        order.append(pl.col("extra_delay_mean"))
    return t.sort(order, maintain_order=True).select(keep)
