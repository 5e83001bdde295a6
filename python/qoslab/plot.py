"""Figures drawn from result tables (never from in-memory runs).

Each function takes polars DataFrames as ``qoslab.load`` / ``qoslab.sweep.gather``
return them and gives a matplotlib :class:`~matplotlib.figure.Figure` (or a list of
them), or ``None`` when the table has nothing to draw. Figures are built directly as
``Figure`` objects: importing this module neither imports ``pyplot`` nor changes
matplotlib's backend, so it is safe in Jupyter (a ``Figure`` displays itself there).
"""

from __future__ import annotations

import io
import itertools
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = [
    "QFigure",
    "axis_name",
    "colour_averages_vs_param",
    "colour_bars",
    "cum_throughput",
    "cwnd_traces",
    "dodge_offsets",
    "drops_by_place",
    "fit_margins",
    "flow_names",
    "goodput_over_time",
    "goodput_over_time_by_group",
    "goodput_vs_param",
    "new_figure",
    "overlay_paper",
    "paper_band",
    "png_bytes",
    "queue_over_time",
    "save_figure",
    "sender_state",
    "svg_bytes",
]

#: Columns of the ``traces`` table that are not sender state.
_TRACE_KEYS = ("flow", "name", "t")


class QFigure(Figure):
    """A matplotlib ``Figure`` that notebooks display as PNG by itself (no pyplot,
    ``%matplotlib`` or backend needed). One made by :func:`new_figure` with ``layout
    "fixed"`` has its margins fitted to its text once, when first saved or shown
    (:func:`fit_margins`)."""

    _fit_pending = False

    def _repr_png_(self) -> bytes:
        return png_bytes(self)

    def savefig(self, *args: Any, **kw: Any) -> Any:
        if self._fit_pending:
            self._fit_pending = False
            fit_margins(self)
        return super().savefig(*args, **kw)


def new_figure(
    width: float = 7.0,
    height: float = 4.0,
    nrows: int = 1,
    ncols: int = 1,
    layout: str | None = "constrained",
    **kw: Any,
) -> tuple[Figure, Any]:
    """A new ``Figure`` of ``width`` × ``height`` inches with ``nrows`` × ``ncols`` axes
    (``Figure.subplots`` keywords in ``kw``, e.g. ``sharex=True``); returns (figure,
    axes) without touching pyplot or the backend. ``layout`` is matplotlib's layout
    engine, or ``"fixed"``: no engine, the margins fitted once to the figure's text
    when it is first saved (:func:`fit_margins`; the figures of this module: a third
    of the time to save them, constrained layout measuring every tick label twice and
    drawing the figure once more before it is written)."""
    fixed = layout == "fixed"
    fig = QFigure(figsize=(width, height), layout=None if fixed else layout)
    fig._fit_pending = fixed
    axes = fig.subplots(nrows, ncols, squeeze=True, **kw)
    if fixed:
        from matplotlib.ticker import MaxNLocator

        for ax in fig.axes:  # a tick costs more to make and draw than the rest of a line
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_locator(MaxNLocator(MAX_TICK_GAPS, steps=_TICK_STEPS, min_n_ticks=3))
    return fig, axes


#: Most gaps between major ticks on an axis of a figure with fitted margins
#: (:func:`new_figure`; matplotlib's own locator puts up to 9 on an axis 6 inches long).
MAX_TICK_GAPS = 5
_TICK_STEPS = [1, 2, 2.5, 5, 10]  # matplotlib's AutoLocator's


#: Space [points] :func:`fit_margins` leaves around the figure's text and between
#: a panel's text and the next panel.
_PAD = 5.0


def _text_box(fig: Figure, renderer: Any, text: Any, s: str | None = None) -> tuple[float, float]:
    """Width and height [pixels] of the matplotlib ``text`` as drawn (or of the string
    ``s`` in its font and rotation); (0, 0) for none or an invisible one."""
    from matplotlib.text import Text

    if s is None:
        if not text.get_visible() or not text.get_text():
            return 0.0, 0.0
        bb = text.get_window_extent(renderer)
    else:
        if not s:
            return 0.0, 0.0
        t = Text(0, 0, s, fontproperties=text.get_fontproperties(),
                 rotation=text.get_rotation(), linespacing=text.get_linespacing())  # fmt: skip
        t.set_figure(fig)
        bb = t.get_window_extent(renderer)
    return bb.width, bb.height


def _tick_labels(axis: Any) -> tuple[Any, list[str], str]:
    """An axis's first tick label (its font and rotation), those of the labels it
    draws in its view that may be the widest or tallest (strings from its locator and
    formatter, no ticks made) and the formatter's offset text; (None, [], "") when its
    labels are off."""
    side = "labelleft" if axis.axis_name == "y" else "labelbottom"
    if not axis.get_tick_params(which="major").get(side, True):
        return None, [], ""
    locs = axis.get_majorticklocs()
    lo, hi = sorted(axis.get_view_interval())
    eps = (hi - lo) * 1e-10
    fmt = axis.get_major_formatter()
    labels = fmt.format_ticks(locs)
    shown = [s for x, s in zip(locs, labels, strict=True) if lo - eps <= x <= hi + eps]
    offset = fmt.get_offset() if hasattr(fmt, "get_offset") else ""
    # the widest and the tallest: the three with most characters in a line, and most lines
    longest = sorted(shown, key=lambda s: -max(map(len, s.split("\n"))))[:3]
    tallest = max(shown, key=lambda s: s.count("\n"), default="")
    return axis.get_major_ticks(1)[0].label1, list(dict.fromkeys([*longest, tallest])), offset


def fit_margins(fig: Figure) -> None:
    """Margins and gaps of a figure whose axes fill one grid (:func:`new_figure`), fitted
    once to its text: the y tick labels and label of each panel on its left, its x tick
    labels and label below it, its title above, the figure's title on top and its
    legends ("outside right upper") on the right, each measured once (the tick labels
    as the axis's locator and formatter give them, without making ticks). A figure
    with other axes (a colour bar, a twin axis) gets constrained layout instead."""
    from matplotlib.backends.backend_agg import RendererAgg

    axes = [ax for ax in fig.axes if ax.get_visible()]
    specs = [ax.get_subplotspec() for ax in fig.axes]
    grids = {id(s.get_gridspec()) for s in specs if s is not None}
    if not axes or None in specs or len(grids) != 1:
        fig.set_layout_engine("constrained")
        return
    gs = specs[0].get_gridspec()
    nrows, ncols = gs.get_geometry()
    dpi = fig.dpi
    W, H = fig.get_size_inches() * dpi
    r = RendererAgg(int(W), int(H), dpi)
    pad = _PAD * dpi / 72
    lefts, rights = [0.0] * ncols, [0.0] * ncols
    tops, bottoms = [0.0] * nrows, [0.0] * nrows
    for ax in axes:
        ss = ax.get_subplotspec()
        r0, r1 = ss.rowspan.start, ss.rowspan.stop - 1
        c0, c1 = ss.colspan.start, ss.colspan.stop - 1
        ticks_out = (3.5 + 3.5) * dpi / 72  # tick length and its label's pad
        # left: y tick labels, then the y label
        first, labels, offset = _tick_labels(ax.yaxis)
        left = max((_text_box(fig, r, first, s)[0] for s in labels), default=0.0)
        left += ticks_out if labels else 0.0
        w, _ = _text_box(fig, r, ax.yaxis.label)
        left += w + pad / 2 if w else 0.0
        lefts[c0] = max(lefts[c0], left)
        # below: x tick labels, then the x label
        first, labels, xoffset = _tick_labels(ax.xaxis)
        below = max((_text_box(fig, r, first, s)[1] for s in labels), default=0.0)
        below += ticks_out if labels else 0.0
        _, h = _text_box(fig, r, ax.xaxis.label)
        below += h + pad / 2 if h else 0.0
        if xoffset:  # below the tick labels, at the right
            below += _text_box(fig, r, ax.xaxis.get_offset_text(), xoffset)[1]
        bottoms[r1] = max(bottoms[r1], below)
        # above: the titles (or the y offset text)
        above = max(_text_box(fig, r, t)[1] for t in (ax.title, ax._left_title, ax._right_title))
        above = above + 6 * dpi / 72 if above else 0.0  # axes.titlepad
        if offset:
            above = max(above, _text_box(fig, r, ax.yaxis.get_offset_text(), offset)[1] + pad)
        tops[r0] = max(tops[r0], above)
        rights[c1] = max(rights[c1], pad / 2)  # the last x tick label's right half
    legend_w = 0.0
    for leg in fig.legends:
        legend_w = max(legend_w, leg.get_window_extent(r).width + pad)
    _, sup = _text_box(fig, r, fig._suptitle) if fig._suptitle is not None else (0.0, 0.0)
    top = (0.02 * H + sup + pad if sup else pad) + tops[0]
    bottom = pad + bottoms[-1]
    left = pad + lefts[0]
    right = pad + max(rights[-1], legend_w)
    hgap = max((bottoms[i] + tops[i + 1] for i in range(nrows - 1)), default=0.0) + pad
    wgap = max((rights[i] + lefts[i + 1] for i in range(ncols - 1)), default=0.0) + pad
    aw = max((W - left - right - (ncols - 1) * wgap) / ncols, W * 0.1)
    ah = max((H - top - bottom - (nrows - 1) * hgap) / nrows, H * 0.1)
    fig.subplots_adjust(
        left=left / W, right=1 - right / W, bottom=bottom / H, top=1 - top / H,
        wspace=wgap / aw, hspace=hgap / ah,
    )  # fmt: skip
    for leg in fig.legends:  # at the right, its top level with the panels'
        leg.set_loc("upper right")
        leg.set_bbox_to_anchor((1.0, 1 - (top - tops[0]) / H), transform=fig.transFigure)


def flow_names(flows: pl.DataFrame | None) -> dict[int, str]:
    """Flow index → flow name, from a ``flows`` table (empty without one)."""
    if flows is None or flows.is_empty() or not {"flow", "name"} <= set(flows.columns):
        return {}
    return dict(zip(flows["flow"].to_list(), flows["name"].to_list(), strict=True))


def _label_col(df: pl.DataFrame, flows: pl.DataFrame | None) -> tuple[pl.DataFrame, str]:
    """``df`` with a ``_label`` column: the flow's name where known, else its index."""
    names = flow_names(flows)
    if "name" in df.columns:
        return df.with_columns(pl.col("name").cast(pl.String).alias("_label")), "_label"
    if "flow" in df.columns:
        lab = pl.col("flow").map_elements(
            lambda i: names.get(i, f"flow {i}"), return_dtype=pl.String
        )
        return df.with_columns(lab.alias("_label")), "_label"
    return df.with_columns(pl.lit("all").alias("_label")), "_label"


#: Most per-flow curves one figure draws; beyond it the flows that delivered most are
#: drawn (a scenario of 400 micro-flows would otherwise take minutes to draw, unreadably).
MAX_FLOW_CURVES = 20


def _busiest(df: pl.DataFrame, label: str, col: str) -> tuple[pl.DataFrame, str]:
    """``df`` restricted to the :data:`MAX_FLOW_CURVES` labels with the largest ``col``
    total, and a title suffix saying how many are shown ("" when all are)."""
    n = df[label].n_unique()
    if n <= MAX_FLOW_CURVES:
        return df, ""
    top = (df.group_by(label).agg(pl.col(col).sum()).sort([col, label], descending=[True, False]))[
        label
    ].head(MAX_FLOW_CURVES)
    return df.filter(pl.col(label).is_in(top.to_list())), (
        f" ({MAX_FLOW_CURVES} of {n} flows shown: those that delivered most)"
    )


def _legend(ax: Axes, n: int) -> None:
    if n:
        ax.legend(fontsize="small", ncols=1 if n <= 8 else 2)


def cum_throughput(
    series: pl.DataFrame, title: str = "", flows: pl.DataFrame | None = None
) -> Figure | None:
    """Cumulative data delivered per flow over time, with the total (P0's figures)."""
    if series.is_empty() or not {"t", "cum_bytes"} <= set(series.columns):
        return None
    df, label = _label_col(series.sort("t"), flows)
    df, shown = _busiest(df, label, "goodput_bps" if "goodput_bps" in df.columns else "cum_bytes")
    fig, ax = new_figure(layout="fixed")
    n = 0
    for key, g in df.group_by(label, maintain_order=True):
        ax.plot(g["t"], g["cum_bytes"] * 8 / 1e6, label=str(key[0]))
        n += 1
    total = series.group_by("t").agg(pl.col("cum_bytes").sum()).sort("t")
    ax.plot(total["t"], total["cum_bytes"] * 8 / 1e6, "k--", lw=2, label="total")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("data delivered [Mbit]")
    ax.set_title((title or "Cumulative goodput per flow") + shown)
    ax.grid(alpha=0.3)
    _legend(ax, n + 1)
    return fig


def goodput_over_time(
    series: pl.DataFrame, title: str = "", flows: pl.DataFrame | None = None
) -> Figure | None:
    """Goodput per flow in each recording interval (the ``series`` table), in Mb/s."""
    if series.is_empty() or not {"t", "goodput_bps"} <= set(series.columns):
        return None
    df, label = _label_col(series.sort("t"), flows)
    df, shown = _busiest(df, label, "goodput_bps")
    fig, ax = new_figure(layout="fixed")
    n = 0
    for key, g in df.group_by(label, maintain_order=True):
        ax.step(g["t"], g["goodput_bps"] / 1e6, where="pre", label=str(key[0]))
        n += 1
    ax.set_xlabel("time [s] (end of interval)")
    ax.set_ylabel("goodput [Mb/s]")
    ax.set_ylim(bottom=0)
    ax.set_title((title or "Goodput per flow and interval") + shown)
    ax.grid(alpha=0.3)
    _legend(ax, n)
    return fig


def drops_by_place(drops: pl.DataFrame, title: str = "") -> Figure | None:
    """Dropped packets per place, stacked by cause."""
    place = next((c for c in ("place", "iface", "node") if c in drops.columns), None)
    count = next((c for c in ("packets", "drops") if c in drops.columns), None)
    if drops.is_empty() or place is None or count is None:
        return None
    cause = "cause" if "cause" in drops.columns else None
    piv = drops.group_by([place, *([cause] if cause else [])], maintain_order=True).agg(
        pl.col(count).sum()
    )
    places = list(dict.fromkeys(piv[place].to_list()))
    fig, ax = new_figure(7, 3.5, layout="fixed")
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
    ax.legend(fontsize="small", title="cause")
    return fig


def _is_long_traces(traces: pl.DataFrame) -> bool:
    return any(c in traces.columns for c in ("variable", "var")) and "value" in traces.columns


def _wide_traces(traces: pl.DataFrame) -> pl.DataFrame:
    """Traces in the wide form (one column per variable), whichever form they come in."""
    if not _is_long_traces(traces):
        return traces
    var = "variable" if "variable" in traces.columns else "var"
    key = "name" if "name" in traces.columns else "flow"
    return traces.pivot(on=var, index=[key, "t"], values="value", aggregate_function="last")


def sender_state(
    traces: pl.DataFrame, title: str = "", flows: pl.DataFrame | None = None
) -> list[Figure]:
    """Per traced flow, one figure of its sender state over time: cwnd, ssthresh and
    bytes in flight [kB]; SRTT and RTO [ms]; and one panel per further state column
    (numbers as steps, text as categories). ssthresh's initial "infinite" value is cut
    off above the largest cwnd."""
    if traces.is_empty() or "t" not in traces.columns:
        return []
    wide, label = _label_col(_wide_traces(traces).sort("t"), flows)
    window = [c for c in ("cwnd", "ssthresh", "in_flight") if c in wide.columns]
    timers = [c for c in ("srtt", "rto") if c in wide.columns]
    extra = [
        c for c in wide.columns if c not in (*_TRACE_KEYS, label, *window, *timers, "flow_name")
    ][:4]
    panels = [p for p in ([window] if window else []) + ([timers] if timers else [])]
    panels += [[c] for c in extra]
    if not panels:
        return []
    figs = []
    for key, g in wide.group_by(label, maintain_order=True):
        name = str(key[0])
        fig, axes = new_figure(
            7, 1.3 + 1.7 * len(panels), len(panels), 1, sharex=True, layout="fixed"
        )
        axes = [axes] if len(panels) == 1 else list(axes)
        t = g["t"].to_numpy()
        for ax, cols in zip(axes, panels, strict=True):
            if cols is window:
                top = 0.0
                for c in cols:
                    y = g[c].cast(pl.Float64).to_numpy() / 1e3
                    style = {"cwnd": {"lw": 1.6, "zorder": 3}, "ssthresh": {"lw": 1.2}}
                    ax.step(t, y, where="post", label=c, **style.get(c, {"lw": 0.8, "ls": ":"}))
                    if c != "ssthresh" and len(y):
                        top = max(top, float(y.max()))
                if top > 0:
                    ax.set_ylim(0, top * 1.15)
                ax.set_ylabel("[kB]")
            elif cols is timers:
                for c in cols:
                    ax.step(t, g[c].cast(pl.Float64).to_numpy() * 1e3, where="post", label=c)
                ax.set_ylabel("[ms]")
                ax.set_ylim(bottom=0)
            else:
                c = cols[0]
                col = g[c]
                if col.dtype.is_numeric() or col.dtype == pl.Boolean:
                    ax.step(t, col.cast(pl.Float64).to_numpy(), where="post", label=c)
                else:
                    cats = list(dict.fromkeys(col.cast(pl.String).to_list()))
                    codes = [cats.index(v) for v in col.cast(pl.String).to_list()]
                    ax.step(t, codes, where="post", label=c)
                    ax.set_yticks(range(len(cats)), [str(x) for x in cats])
                ax.set_ylabel(c)
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small", loc="upper right")
        axes[-1].set_xlabel("time [s]")
        axes[0].set_title(title.format(flow=name) if title else f"Sender state of {name}")
        figs.append(fig)
    return figs


def cwnd_traces(
    traces: pl.DataFrame, title: str = "", flows: pl.DataFrame | None = None
) -> Figure | None:
    """Congestion window over time of every traced flow in one figure [kB]."""
    if traces.is_empty() or "t" not in traces.columns:
        return None
    wide, label = _label_col(_wide_traces(traces).sort("t"), flows)
    if "cwnd" not in wide.columns:
        return None
    fig, ax = new_figure(layout="fixed")
    n = 0
    for key, g in wide.group_by(label, maintain_order=True):
        ax.step(g["t"], g["cwnd"].cast(pl.Float64) / 1e3, where="post", label=str(key[0]))
        n += 1
    ax.set_xlabel("time [s]")
    ax.set_ylabel("cwnd [kB]")
    ax.set_title(title or "Congestion window")
    ax.grid(alpha=0.3)
    _legend(ax, n)
    return fig


def queue_over_time(samples: pl.DataFrame, title: str = "", max_queues: int = 8) -> Figure | None:
    """Per recorded queue (``queue_samples``), its length [packets] over time and, for
    the RED family, the average queue the RED computes; one panel per queue."""
    if samples.is_empty() or not {"t", "iface"} <= set(samples.columns):
        return None
    length = next((c for c in ("packets", "len", "length") if c in samples.columns), None)
    if length is None:
        return None
    ifaces = list(dict.fromkeys(samples["iface"].to_list()))[:max_queues]
    fig, axes = new_figure(7, 1.2 + 1.8 * len(ifaces), len(ifaces), 1, sharex=True, layout="fixed")
    axes = [axes] if len(ifaces) == 1 else list(axes)
    for ax, iface in zip(axes, ifaces, strict=True):
        g = samples.filter(pl.col("iface") == iface).sort("t")
        ax.step(g["t"], g[length], where="post", lw=0.8, label="length")
        if "avg" in g.columns:
            avg = g["avg"].cast(pl.Float64).fill_nan(None)
            if avg.null_count() < len(avg):
                ax.plot(g["t"], avg.to_numpy(), lw=1.5, label="RED average")
        ax.set_ylabel("[packets]")
        ax.set_ylim(bottom=0)
        ax.set_title(f"queue {iface}", fontsize="medium", loc="left")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="upper right")
    axes[-1].set_xlabel("time [s]")
    if title:
        fig.suptitle(title)
    return fig


def colour_averages(samples: pl.DataFrame, title: str = "", max_panels: int = 8) -> Figure | None:
    """Per sampled multi-colour queue (``queue_colour_samples``: RIO-C, RIO-D, WRED,
    also as a class's queue), each colour's average queue [packets] over time as its
    drop decision uses it; one panel per interface and class."""
    cols = [c for c in ("avg_green", "avg_yellow", "avg_red") if c in samples.columns]
    if samples.is_empty() or not cols or not {"t", "iface"} <= set(samples.columns):
        return None
    key = ["iface", "class"] if "class" in samples.columns else ["iface"]
    panels = list(dict.fromkeys(samples.select(key).rows()))[:max_panels]
    fig, axes = new_figure(7, 1.2 + 1.8 * len(panels), len(panels), 1, sharex=True, layout="fixed")
    axes = [axes] if len(panels) == 1 else list(axes)
    colours = {"avg_green": "tab:green", "avg_yellow": "goldenrod", "avg_red": "tab:red"}
    for ax, p in zip(axes, panels, strict=True):
        g = samples
        for k, v in zip(key, p, strict=True):
            g = g.filter(pl.col(k) == v)
        g = g.sort("t")
        for c in cols:
            ax.plot(g["t"], g[c].cast(pl.Float64).to_numpy(), color=colours[c], lw=1.2,
                    label=c.removeprefix("avg_"))  # fmt: skip
        ax.set_ylabel("average [packets]")
        ax.set_ylim(bottom=0)
        name = " ".join(f"{v}" for v in p if v)
        ax.set_title(f"queue {name}", fontsize="medium", loc="left")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time [s]")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


# --------------------------------------------------------------------------- sweeps

_SCALE = {"_bps": (1e6, "Mb/s"), "_s": (1e-3, "ms"), "_bytes": (1e3, "kB")}


def _x_axis(summary: pl.DataFrame, param: str) -> tuple[str | None, float, str]:
    """The numeric column to put on the x axis for ``param`` (itself if numeric, else
    its companion), its scale and its unit; (None, 1, "") if it is not numeric."""
    if summary[param].dtype.is_numeric():
        return param, 1.0, ""
    for suf, (scale, unit) in _SCALE.items():
        if f"{param}{suf}" in summary.columns:
            return f"{param}{suf}", scale, unit
    return None, 1.0, ""


def _y_unit(metric: str) -> tuple[float, str]:
    if metric.endswith("_bps"):
        return 1e6, "Mb/s"
    if metric.endswith("_bytes") or metric in ("bytes_sent",):
        return 1e6, "MB"
    if metric.endswith("_s") or metric.startswith("delay_"):
        return 1e-3, "ms"
    if metric in ("drops", "packets") or metric.endswith("_packets"):
        return 1.0, "packets"
    return 1.0, ""


#: Readable names of scenario keys, for axes (``param_name``).
_KEY_NAMES = {
    "cir": "committed rate",
    "pir": "peak rate",
    "cbs": "committed burst",
    "ebs": "excess burst",
    "pbs": "peak burst",
    "rate": "rate",
    "limit": "queue limit",
    "limit_bytes": "queue limit",
    "delay": "delay",
    "size": "packet size",
    "window": "window",
    "depth": "bucket depth",
    "weight": "weight",
    "min_th": "min threshold",
    "max_th": "max threshold",
    "max_p": "max drop probability",
    "w_q": "averaging weight",
    "warmup": "warm-up",
}
#: Scenario lists whose entries an axis name mentions (``link 2``, ``stage 0``).
_OWNERS = {"link": "link", "flow": "flow", "conditioner": "conditioner", "stages": "stage",
           "classes": "class", "node": "node"}  # fmt: skip


def param_name(param: str) -> str:
    """An axis name for a sweep parameter: ``conditioner.0.stages.0.cir`` → "committed
    rate (conditioner 0, stage 0)", ``link.2.rate`` → "rate (link 2)"; a key it does
    not know keeps its last part, with spaces for underscores."""
    parts = [p for p in param.replace("[", ".").replace("]", "").split(".") if p]
    if not parts:
        return param
    where = []
    i = 0
    while i < len(parts) - 2 or (i == len(parts) - 2 and parts[i] not in _OWNERS):
        if parts[i] in _OWNERS:
            where.append(f"{_OWNERS[parts[i]]} {parts[i + 1]}")
            i += 2
        else:
            i += 1
    if i == len(parts) - 2 and parts[i] in _OWNERS:  # a whole entry: "conditioner 0"
        where.append(f"{_OWNERS[parts[i]]} {parts[i + 1]}")
        leaf = ""
    else:
        leaf = parts[-1]
    name = _KEY_NAMES.get(leaf, leaf.replace("_", " "))
    if not name:
        return ", ".join(where)
    return f"{name} ({', '.join(where)})" if where else name


#: Line styles cycled with the ten colours: 40 series stay distinguishable.
_STYLES = ["-", "--", ":", "-."]
#: Markers, the next one for each series: lines drawn on each other stay told apart.
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h", "p", "d"]


def series_style(i: int) -> dict[str, Any]:
    """Colour, line style and marker of the ``i``-th series of a figure: each of the
    first 13 series has its own marker, each of the first 40 its own colour and line
    style."""
    import matplotlib as mpl

    colours = mpl.colormaps["tab10"].colors
    ls = _STYLES[(i // len(colours)) % len(_STYLES)]
    return {"color": colours[i % len(colours)], "ls": ls, "marker": _MARKERS[i % len(_MARKERS)]}


def dodge_offsets(xs: Iterable[float], lines: int, width: float = 0.2) -> list[float]:
    """x offsets of ``lines`` lines drawn over the x values ``xs``, so that lines with
    the same values do not hide each other: spread evenly over ``width`` times the
    smallest gap between two x values (1 with a single x), centred on 0."""
    vals = sorted({float(x) for x in xs if x is not None and not math.isnan(float(x))})
    gaps = [b - a for a, b in itertools.pairwise(vals) if b > a]
    span = width * (min(gaps) if gaps else 1.0)
    if lines < 2 or span <= 0:
        return [0.0] * max(lines, 0)
    step = span / (lines - 1)
    return [(j - (lines - 1) / 2) * step for j in range(lines)]


def axis_name(param: str, names: Mapping[str, str] | None = None) -> str:
    """The name ``names`` (a sweep's ``[sweep.labels]``) gives ``param``, else
    :func:`param_name`'s."""
    return (names or {}).get(param) or param_name(param)


def goodput_vs_param(
    summary: pl.DataFrame,
    param: str,
    metric: str = "goodput_bps",
    title: str = "",
    others: Sequence[str] | None = None,
    references: Mapping[str, Any] | None = None,
    max_facets: int = 12,
    xlabel: str | None = None,
    ylabel: str | None = None,
    series: str = "name",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
    axis_names: Mapping[str, str] | None = None,
    dodge: float = 0.2,
) -> Figure | None:
    """Mean ``metric`` per flow vs the swept parameter ``param`` with 95 % CI bars (the
    sweep summary's ``…_ci95``: Student t across seeds). One panel per combination of
    the ``others`` grid parameters (default: every other parameter column), one line per
    flow in it, so points of different settings are never joined. A parameter given with
    units goes on a numeric axis through its companion column (``link.2.rate_bps``).
    ``references`` = {label: value or {x: value}} draws horizontal (or per-x) reference
    lines in the metric's unit, e.g. the fair share or a requested rate.

    Fit for a paper: the x axis is named by :func:`param_name` (or ``xlabel``) with its
    unit, never the raw key path; panels share the y axis; one legend sits outside the
    data, right of the panels; each ``series`` value (the column naming a line: flow
    name, group, class) keeps one colour, line style and marker in every panel (20 stay
    distinct, :func:`series_style`); ``styles`` = {series value: matplotlib keywords}
    sets some series' colour, line style or marker instead. ``axis_names`` = {key: axis
    name} (``[sweep.labels]``) names the x axis and the panels' keys instead of
    :func:`param_name`. The lines of a panel are drawn side by side, spread over
    ``dodge`` times the smallest gap between x values (:func:`dodge_offsets`; 0: on
    the values), so equal values never hide one line under another."""
    mean, ci = f"{metric}_mean", f"{metric}_ci95"
    if series != "name" and series in summary.columns:
        summary = summary.drop("name", strict=False).rename({series: "name"})
    if summary.is_empty() or param not in summary.columns or mean not in summary.columns:
        return None
    xcol, xscale, xunit = _x_axis(summary, param)
    xs = list(dict.fromkeys(summary[param].to_list()))
    if others is None:
        skip = {param, "name", "n", "flow", "run", "seed"}
        others = [
            c
            for c in summary.columns
            if c not in skip
            and not c.startswith(tuple(f"{m}_" for m in ("goodput", "bytes", "drops", "packets")))
            and not any(c.endswith(s) for s in (*_SCALE, "_mean", "_std", "_ci95"))
        ]
    others = [o for o in others if o in summary.columns]
    combos = (
        [dict(zip(others, k, strict=True)) for k in dict.fromkeys(summary.select(others).rows())]
        if others
        else [{}]
    )
    shown = combos[:max_facets]
    ncols = 1 if len(shown) == 1 else 2 if len(shown) <= 4 else 3
    nrows = math.ceil(len(shown) / ncols)
    fig, axes = new_figure(
        8.5 if ncols == 1 else 4 * ncols + 1.5,
        1 + 3 * nrows,
        nrows,
        ncols,
        sharey=True,
        layout="fixed",
    )
    flat = list(axes.flat) if hasattr(axes, "flat") else [axes]
    yscale, yunit = _y_unit(metric)
    names = [str(n) for n in dict.fromkeys(summary["name"].to_list())] if "name" in summary else []
    style = {n: {**series_style(i), **((styles or {}).get(n) or {})} for i, n in enumerate(names)}
    handles: dict[str, Any] = {}
    for ax, combo in zip(flat, shown, strict=False):
        sub = summary
        for k, v in combo.items():
            sub = sub.filter(pl.col(k) == v)
        if xcol is None:
            pos = {x: float(i) for i, x in enumerate(xs)}
            sub = sub.with_columns(
                pl.col(param).replace_strict(pos, return_dtype=pl.Float64).alias("_x")
            )
        else:
            sub = sub.with_columns((pl.col(xcol).cast(pl.Float64) / xscale).alias("_x"))
        groups = list(sub.sort("_x").group_by("name", maintain_order=True))
        offsets = dodge_offsets(sub["_x"].to_list(), len(groups), dodge)
        for (key, g), dx in zip(groups, offsets, strict=True):
            y = g[mean].cast(pl.Float64).to_numpy() / yscale
            err = g[ci].cast(pl.Float64).fill_nan(0).fill_null(0).to_numpy() / yscale if (
                ci in g.columns
            ) else None  # fmt: skip
            h = ax.errorbar(
                g["_x"].to_numpy() + dx, y, yerr=err, capsize=3, label=str(key[0]),
                **style.get(str(key[0]), series_style(0)),
            )  # fmt: skip
            handles.setdefault(str(key[0]), h)
        for i, (lab, ref) in enumerate((references or {}).items()):
            rstyle = dict(color="0.3", lw=1, ls=("--", ":", "-.")[i % 3])
            if isinstance(ref, Mapping):
                pts = sorted(
                    ((float(xv) / xscale if xcol else xs.index(xk)), float(yv) / yscale)
                    for xk, (xv, yv) in ref.items()
                )
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=lab, **rstyle)
            else:
                ax.axhline(float(ref) / yscale, label=lab, **rstyle)
            handles.setdefault(lab, ax.lines[-1])
        if xcol is None:
            ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        elif len(xs) <= 6:  # a tick at each swept value
            ax.set_xticks(sorted({float(v) for v in sub["_x"].to_list() if v is not None}))
        xname = xlabel or axis_name(param, axis_names)
        ax.set_xlabel(f"{xname} [{xunit}]" if xunit else xname)
        if ax in flat[::ncols]:
            yname = ylabel or metric.removesuffix("_bps").replace("_", " ")
            ax.set_ylabel(f"{yname} [{yunit}]" if yunit else yname)
        if combo:
            text = ", ".join(f"{axis_name(k, axis_names)} = {v}" for k, v in combo.items())
            ax.set_title(textwrap.fill(text, 45 if ncols > 1 else 90), fontsize="medium")
        ax.grid(alpha=0.3)
    if handles:
        fig.legend(
            list(handles.values()), list(handles), loc="outside right upper", fontsize="small",
            ncols=1 + len(handles) // 16,
        )  # fmt: skip
    for ax in flat[len(shown) :]:
        ax.set_visible(False)
    more = f" (first {max_facets} of {len(combos)} settings)" if len(combos) > max_facets else ""
    what = metric.removesuffix("_bps")
    fig.suptitle((title or f"{what} vs {axis_name(param, axis_names)} (mean, 95 % CI)") + more)
    return fig


def colour_averages_vs_param(
    summary: pl.DataFrame,
    param: str,
    others: Sequence[str] | None = None,
    title: str = "",
    max_queues: int = 6,
    axis_names: Mapping[str, str] | None = None,
) -> Figure | None:
    """A sweep's per-colour RED averages (``summary_colour_averages``: the time-mean
    after the warm-up of each colour's average queue of each sampled RIO/WRED queue)
    vs the swept parameter ``param``: mean and 95 % CI across seeds, one line per
    queue and colour, one panel per setting of the ``others`` parameters (default:
    every other parameter column); the colour of a line is its drop precedence, its
    line style and marker its queue; ``axis_names`` as :func:`goodput_vs_param`'s.
    ``None`` without such a summary."""
    cols = [c for c in ("avg_green", "avg_yellow", "avg_red") if f"{c}_mean" in summary.columns]
    if summary.is_empty() or not cols or param not in summary.columns:
        return None
    key = [k for k in ("iface", "class") if k in summary.columns]
    queues = list(dict.fromkeys(summary.select(key).rows()))[:max_queues] if key else [()]
    stat = ("_mean", "_std", "_ci95")
    base = [c for c in summary.columns if c not in key and not c.endswith(stat) and c != "n"]
    parts = []
    styles: dict[str, dict[str, Any]] = {}
    hues = {"avg_green": "tab:green", "avg_yellow": "goldenrod", "avg_red": "tab:red"}
    for qi, q in enumerate(queues):
        sub = summary
        for k, v in zip(key, q, strict=True):
            sub = sub.filter(pl.col(k) == v)
        where = " ".join(str(v) for v in q if v)
        for c in cols:
            label = f"{where} {c.removeprefix('avg_')}".strip()
            ls, marker = _STYLES[qi % len(_STYLES)], _MARKERS[qi % len(_MARKERS)]
            styles[label] = {"color": hues[c], "ls": ls, "marker": marker}
            parts.append(
                sub.select(
                    *base,
                    pl.lit(label).alias("name"),
                    pl.col(f"{c}_mean").cast(pl.Float64).alias("avg_mean"),
                    pl.col(f"{c}_ci95").cast(pl.Float64).alias("avg_ci95"),
                )
            )
    long = pl.concat(parts, how="diagonal_relaxed")
    if others is None:
        others = [c for c in base if c != param and not c.endswith(tuple(_SCALE))]
    return goodput_vs_param(
        long,
        param,
        metric="avg",
        others=others,
        ylabel="average queue [packets]",
        title=title or f"RED average per colour vs {axis_name(param, axis_names)}",
        styles=styles,
        axis_names=axis_names,
    )


#: Bar colours of the drop precedences (``none``: no precedence, e.g. best effort).
COLOUR_HUES = {"green": "tab:green", "yellow": "goldenrod", "red": "tab:red", "none": "0.6"}


def colour_bars(
    summary: pl.DataFrame,
    prefix: str,
    suffix: str,
    bars: Sequence[str],
    params: Sequence[str] = (),
    title: str = "",
    ylabel: str = "packets",
    max_facets: int = 12,
) -> Figure | None:
    """Stacked bars of a sweep summary's per-colour means (``{prefix}{colour}{suffix}_mean``
    for the colours of :data:`COLOUR_HUES` it has, e.g. ``dropped_green_mean``): one bar
    per case and value of the ``bars`` columns (a meter's place, a queue's interface and
    class), each colour its drop precedence's colour (grey: ``none``), the bar's total
    with the 95 % interval of the summed column when the summary has it
    (``{prefix.rstrip('_')}{suffix}_ci95``, e.g. ``dropped_ci95``); one panel per value
    of the other ``params`` (the swept grid). ``None`` when it has no such columns."""
    colours = [c for c in COLOUR_HUES if f"{prefix}{c}{suffix}_mean" in summary.columns]
    bars = [b for b in bars if b in summary.columns]
    if summary.is_empty() or not colours or not bars:
        return None
    params = [p for p in params if p in summary.columns]
    inner = [p for p in params if p == "case"] + bars
    facets = [p for p in params if p != "case"]
    combos = list(dict.fromkeys(summary.select(facets).rows())) if facets else [()]
    shown = combos[:max_facets]
    ncols = 1 if len(shown) == 1 else 2 if len(shown) <= 4 else 3
    nrows = math.ceil(len(shown) / ncols)
    labels = list(dict.fromkeys(summary.select(inner).rows()))
    width = max(6.0, min(16.0, 0.45 * len(labels) * ncols + 2))
    fig, axes = new_figure(width, 1.5 + 3 * nrows, nrows, ncols, sharey=True, layout="fixed")
    flat = list(axes.flat) if hasattr(axes, "flat") else [axes]
    total_ci = f"{prefix.rstrip('_')}{suffix}_ci95"
    for ax, combo in zip(flat, shown, strict=False):
        sub = summary
        for k, v in zip(facets, combo, strict=True):
            sub = sub.filter(pl.col(k) == v)
        rows = {tuple(r[k] for k in inner): r for r in sub.iter_rows(named=True)}
        xs = range(len(labels))
        bottom = [0.0] * len(labels)
        for c in colours:
            col = f"{prefix}{c}{suffix}_mean"
            ys = [float(rows.get(lab, {}).get(col) or 0.0) for lab in labels]
            ax.bar(xs, ys, bottom=bottom, color=COLOUR_HUES[c], label=c, edgecolor="0.3", lw=0.5)
            bottom = [b + y for b, y in zip(bottom, ys, strict=True)]
        if total_ci in sub.columns:
            err = [float(rows.get(lab, {}).get(total_ci) or 0.0) for lab in labels]
            ax.errorbar(xs, bottom, yerr=err, fmt="none", ecolor="0.1", capsize=3)
        ax.set_xticks(list(xs), ["\n".join(str(v) for v in lab if v != "") for lab in labels],
                      fontsize="small")  # fmt: skip
        if ax in flat[::ncols]:
            ax.set_ylabel(ylabel)
        if combo:
            text = ", ".join(f"{param_name(k)} = {v}" for k, v in zip(facets, combo, strict=True))
            ax.set_title(textwrap.fill(text, 45 if ncols > 1 else 90), fontsize="medium")
        ax.grid(alpha=0.3, axis="y")
    handles, names = flat[0].get_legend_handles_labels()
    fig.legend(handles[::-1], names[::-1], loc="outside right upper", fontsize="small")
    for ax in flat[len(shown) :]:
        ax.set_visible(False)
    more = f" (first {max_facets} of {len(combos)} settings)" if len(combos) > max_facets else ""
    fig.suptitle((title or "per colour (mean, 95 % CI of the total)") + more)
    return fig


def goodput_over_time_by_group(
    series: pl.DataFrame, flows: pl.DataFrame | None, title: str = ""
) -> Figure | None:
    """Goodput of each flow group (its flows' goodput summed) in each recording interval
    of a run's ``series`` table, in Mb/s; ``None`` without groups."""
    if series.is_empty() or not {"t", "goodput_bps"} <= set(series.columns):
        return None
    if "group" not in series.columns:
        if flows is None or not {"flow", "group"} <= set(flows.columns) or "flow" not in series:
            return None
        series = series.join(flows.select("flow", "group"), on="flow", how="left")
    g = (
        series.filter(pl.col("group").is_not_null() & (pl.col("group") != ""))
        .group_by(["group", "t"], maintain_order=True)
        .agg(pl.col("goodput_bps").sum())
        .sort("t")
    )
    if g.is_empty():
        return None
    fig, ax = new_figure(layout="fixed")
    n = 0
    for i, (key, sub) in enumerate(g.group_by("group", maintain_order=True)):
        st = series_style(i)
        ax.step(sub["t"], sub["goodput_bps"] / 1e6, where="pre", label=str(key[0]),
                color=st["color"], ls=st["ls"])  # fmt: skip
        n += 1
    ax.set_xlabel("time [s] (end of interval)")
    ax.set_ylabel("goodput [Mb/s]")
    ax.set_ylim(bottom=0)
    ax.set_title(title or "Goodput per flow group and interval")
    ax.grid(alpha=0.3)
    _legend(ax, n)
    return fig


# --------------------------------------------------------------------------- papers


def overlay_paper(
    ax: Axes, x: Iterable[float], y: Iterable[float], label: str = "paper", **kw: Any
) -> None:
    """The paper's values as hollow black markers on ``ax`` (same units as ours)."""
    style = dict(ls="none", marker="D", mfc="none", mec="k", ms=7, zorder=5)
    style.update(kw)
    ax.plot(list(x), list(y), label=label, **style)


def paper_band(
    ax: Axes,
    x: Iterable[float],
    lo: Iterable[float],
    hi: Iterable[float],
    label: str = "paper (min–max)",
) -> None:
    """The paper's min–max per x as hollow black diamonds (at the middle) with bars."""
    xs, los, his = list(x), [float(v) for v in lo], [float(v) for v in hi]
    mid = [(a + b) / 2 for a, b in zip(los, his, strict=True)]
    ax.errorbar(
        xs,
        mid,
        yerr=[
            [m - a for m, a in zip(mid, los, strict=True)],
            [b - m for m, b in zip(mid, his, strict=True)],
        ],
        fmt="D",
        mfc="none",
        mec="k",
        ecolor="k",
        ms=6,
        capsize=3,
        label=label,
        zorder=5,
    )


# --------------------------------------------------------------------------- output


def png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def svg_bytes(fig: Figure) -> bytes:
    """The figure as SVG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg")
    return buf.getvalue()


#: What qoslab writes into a figure file's metadata, so that it knows its own files
#: again (:func:`qoslab.store.prepare_file`).
CREATOR = "qoslab (matplotlib)"

#: The figure formats a report can write (``qoslab report --formats``).
FORMATS = ("svg", "png", "pdf")


def save_figure(
    fig: Figure, stem: str | Path, dpi: int = 100, formats: tuple[str, ...] = ("svg", "png")
) -> list[Path]:
    """Writes ``stem.<format>`` for each of ``formats`` (of :data:`FORMATS`); returns
    the paths in that order. Its metadata name qoslab (so that it knows its own files)
    and no date: the same figure gives the same file (with a fixed ``svg.hashsalt``,
    :data:`qoslab.report.FIGURE_RC`, the same SVG bytes)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in formats:
        if ext not in FORMATS:
            raise ValueError(f"figure format {ext!r}: one of {', '.join(FORMATS)}")
        buf = io.BytesIO()
        meta: dict[str, Any] = {"Software" if ext == "png" else "Creator": CREATOR}
        meta.update({"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(ext, {}))
        fig.savefig(buf, format=ext, metadata=meta, **({"dpi": dpi} if ext == "png" else {}))
        p = stem.with_name(f"{stem.name}.{ext}")
        p.write_bytes(buf.getvalue())
        out.append(p)
    return out
