"""``qoslab plot``: a quick look at any table of a run or sweep folder without SQL.

One column against another, one line per value of a third, and the mean with its
95 % Student-t interval wherever several rows share an x (and a line): the seeds of a
sweep, the flows of a run, the intervals of a series.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure

from qoslab.exceptions import QoslabError, ResultsError

__all__ = [
    "COUNT_TABLES",
    "KINDS",
    "MAX_LINES",
    "aggregate",
    "axis_labels",
    "load_table",
    "quick_plot",
    "table_names",
    "totals",
    "write_plot",
]

#: What ``kind`` may be: ``auto`` draws a line over a numeric x and points over text.
KINDS = ("auto", "line", "scatter")

#: Most lines one figure draws (the values of ``by`` with the most rows).
MAX_LINES = 20

#: The table a folder shows when none is named.
DEFAULT_TABLE = "flows"


#: Tables of counts, one row per place and cause that saw any, and the columns that
#: count: rows sharing an x (and line) add up within a run, and a run without a row saw
#: none (a 0, not a run left out of the mean).
COUNT_TABLES = {"drops": ("packets", "bytes")}


def _is_sweep(d: Path) -> bool:
    return (d / "sweep.json").is_file()


def table_names(directory: str | Path) -> list[str]:
    """The tables of the run or sweep folder ``directory``, sorted: a run's Parquet
    files; a sweep's own (``summary``, ``summary_*``) and its runs' tables."""
    d = Path(directory)
    if _is_sweep(d):
        from qoslab.sweep import load_tasks

        names = {f.stem for f in d.glob("*.parquet")}
        for t in load_tasks(d):
            names |= {f.stem for f in (d / "runs" / t.key).glob("*.parquet")}
        return sorted(names)
    if (d / "summary.json").is_file():
        return sorted(f.stem for f in d.glob("*.parquet"))
    raise ResultsError(
        f"{d}: not a qoslab run or sweep folder (expected summary.json or sweep.json)"
    )


def load_table(directory: str | Path, table: str) -> pl.DataFrame:
    """The table ``table`` of the folder ``directory``: a run's file as it is; in a
    sweep, its own file (``summary``, ``summary_*``) or the runs' table gathered, with
    run, seed and the swept parameters as columns (and numeric companions of values
    given with units, ``link.2.rate_bps``). Errors name the folder and list its tables;
    a damaged Parquet file raises :class:`~qoslab.ResultsError` naming it."""
    d = Path(directory)
    names = table_names(d)
    if table not in names:
        raise QoslabError(f"{d} has no table {table!r}; its tables: {', '.join(names)}")
    if (d / f"{table}.parquet").is_file():
        f = d / f"{table}.parquet"
        try:
            df = pl.read_parquet(f)
        except Exception as e:  # polars raises several types for damaged files
            raise ResultsError(f"{f}: corrupt or not a Parquet file ({e})") from None
    else:
        from qoslab.sweep import gather

        df = gather(d, table)
    if _is_sweep(d):
        from qoslab.tables import with_numeric_companions

        grid = json.loads((d / "sweep.json").read_text()).get("spec", {}).get("grid", {})
        df = with_numeric_companions(df, list(grid))
    return df


def axis_labels(directory: str | Path) -> dict[str, str]:
    """A sweep folder's ``[sweep.labels]`` (swept key → axis label); empty otherwise."""
    d = Path(directory)
    if not _is_sweep(d):
        return {}
    spec = json.loads((d / "sweep.json").read_text()).get("spec", {})
    return dict(spec.get("axis_labels") or {})


def _numeric_x(df: pl.DataFrame, x: str) -> str | None:
    """The column that puts ``x`` on a numeric axis: itself, or its numeric companion
    (``…_bps``, ``…_s``, ``…_bytes``); None for text."""
    if df[x].dtype.is_numeric():
        return x
    return next((f"{x}{s}" for s in ("_bps", "_s", "_bytes") if f"{x}{s}" in df.columns), None)


def _check_column(df: pl.DataFrame, table: str, col: str, what: str, numeric: bool) -> None:
    if col not in df.columns:
        raise QoslabError(
            f"table {table!r} has no column {col!r} ({what}); its columns: {', '.join(df.columns)}"
        )
    if numeric and not df[col].dtype.is_numeric():
        nums = [c for c in df.columns if df[c].dtype.is_numeric()]
        raise QoslabError(
            f"table {table!r}: column {col!r} ({what}) holds {df[col].dtype}, not numbers; "
            f"its numeric columns: {', '.join(nums)}"
        )


def aggregate(df: pl.DataFrame, x: str, y: str, by: str | None = None) -> pl.DataFrame:
    """Per value of ``x`` (and ``by``): ``n`` rows, the ``mean`` of ``y`` and
    ``ci95``, the half-width of its 95 % Student-t interval (0 for a single row), in
    order of first appearance. NaN values of ``y`` are left out."""
    from qoslab.tables import t_quantile

    keys = [x] if by is None else [by, x]
    g = (
        df.filter(pl.col(y).is_not_null() & ~pl.col(y).cast(pl.Float64).is_nan())
        .group_by(keys, maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col(y).cast(pl.Float64).mean().alias("mean"),
            pl.col(y).cast(pl.Float64).std().alias("std"),
        )
    )
    t = [t_quantile(0.975, n - 1) if n > 1 else 0.0 for n in g["n"].to_list()]
    ci = [0.0 if n < 2 or s is None else q * s / math.sqrt(n)
          for n, s, q in zip(g["n"].to_list(), g["std"].to_list(), t, strict=True)]  # fmt: skip
    return g.with_columns(pl.Series("ci95", ci, dtype=pl.Float64)).drop("std")


def _runs(d: Path) -> pl.DataFrame:
    """One row per finished run of the sweep ``d``: run, seed and its swept values."""
    from qoslab.sweep.summary import _finished, _with_params, load_tasks

    one = pl.DataFrame({"_n": [0]})
    frames = [_with_params(one, t) for t in _finished(d, load_tasks(d))]
    return pl.concat(frames, how="diagonal_relaxed").drop("_n") if frames else pl.DataFrame()


def totals(directory: str | Path, df: pl.DataFrame, x: str, y: str, by: str | None) -> pl.DataFrame:
    """A count table's ``y`` summed per run and value of ``x`` (and ``by``), with a 0
    for every run and value that has no row (it saw none): what :func:`aggregate` then
    averages over the runs (a run folder: one total per value)."""
    d = Path(directory)
    keys = [c for c in dict.fromkeys([x, by]) if c is not None]
    if not _is_sweep(d):
        return df.group_by(keys, maintain_order=True).agg(pl.col(y).sum())
    runs = _runs(d)
    if runs.is_empty():
        return df
    from qoslab.tables import with_numeric_companions

    grid = json.loads((d / "sweep.json").read_text()).get("spec", {}).get("grid", {})
    runs = with_numeric_companions(runs, list(grid))
    per_row = [k for k in keys if k not in runs.columns]  # e.g. place: a row's, not a run's
    sums = df.group_by(["run", *per_row], maintain_order=True).agg(pl.col(y).sum())
    full = (
        runs.join(df.select(per_row).unique(maintain_order=True), how="cross") if per_row else runs
    )
    out = full.join(sums, on=["run", *per_row], how="left")
    return out.with_columns(pl.col(y).fill_null(0))


def _pooled(df: pl.DataFrame, x: str, by: str | None) -> str:
    """Where one run's rows at one x are several things (flows, places, causes) and no
    ``by`` separates them, what the title says of the pooled mean; else empty."""
    if by is not None:
        return ""
    for col in ("name", "place", "iface", "cause"):
        if col in df.columns and col != x:
            per = [x, "run"] if "run" in df.columns and "run" != x else [x]
            if df.group_by(per).agg(pl.col(col).n_unique().alias("k"))["k"].max() > 1:
                return f"\n(mean over several {col} values per x: --by {col} draws one line each)"
    return ""


def quick_plot(
    directory: str | Path,
    x: str,
    y: str,
    by: str | None = None,
    table: str | None = None,
    kind: str = "auto",
) -> Figure:
    """``y`` against ``x`` from ``table`` (default ``flows``) of a run or sweep folder,
    one line per value of ``by``: the mean with a 95 % interval bar where several rows
    share an x. ``kind``: ``line``, ``scatter`` or ``auto`` (a line over a numeric x,
    its companion for a value with a unit, points over text); a sweep's
    ``[sweep.labels]`` names the x axis. Errors name the table and list its columns."""
    from qoslab.plot import new_figure, series_style

    if kind not in KINDS:
        raise QoslabError(f"kind {kind!r}: one of {', '.join(KINDS)}")
    table = table or DEFAULT_TABLE
    df = load_table(directory, table)
    _check_column(df, table, x, "--x", numeric=False)
    _check_column(df, table, y, "--y", numeric=True)
    if by is not None:
        _check_column(df, table, by, "--by", numeric=False)
    if df.is_empty():
        raise QoslabError(f"table {table!r} of {directory} has no rows")
    pooled = _pooled(df, x, by)
    if y in COUNT_TABLES.get(table, ()):
        df, pooled = totals(directory, df, x, y, by), ""
    xnum = _numeric_x(df, x)
    agg = aggregate(df.with_columns(pl.col(xnum).alias("_x")) if xnum else df,
                    "_x" if xnum else x, y, by)  # fmt: skip
    xcol = "_x" if xnum else x
    if xnum is None:
        cats = [str(v) for v in dict.fromkeys(agg[xcol].to_list())]
        pos = {c: float(i) for i, c in enumerate(cats)}
        agg = agg.with_columns(
            pl.col(xcol).cast(pl.String).replace_strict(pos, return_dtype=pl.Float64).alias("_pos")
        )
    else:
        agg = agg.with_columns(pl.col(xcol).cast(pl.Float64).alias("_pos"))
    line = kind == "line" or (kind == "auto" and xnum is not None)
    fig, ax = new_figure(8.0, 4.5)
    groups: Sequence[tuple[str, pl.DataFrame]]
    if by is None:
        groups = [("", agg)]
        shown = pooled
    else:
        sizes = agg.group_by(by, maintain_order=True).agg(pl.col("n").sum())
        top = sizes.sort("n", descending=True, maintain_order=True)[by].head(MAX_LINES).to_list()
        groups = [(str(k[0]), g) for k, g in agg.group_by(by, maintain_order=True) if k[0] in top]
        shown = f" ({MAX_LINES} of {sizes.height} {by} values)" if sizes.height > MAX_LINES else ""
    several = agg["n"].max() > 1
    for i, (label, g) in enumerate(groups):
        g = g.sort("_pos")
        style = series_style(i)
        ax.errorbar(
            g["_pos"].to_numpy(), g["mean"].to_numpy(),
            yerr=g["ci95"].to_numpy() if several else None,
            capsize=3 if several else 0, label=label or None,
            color=style["color"], marker=style["marker"], ms=4,
            ls=style["ls"] if line else "none",
        )  # fmt: skip
    if xnum is None:
        ax.set_xticks(range(len(cats)), cats, rotation=30 if len(cats) > 6 else 0)
    xname = axis_labels(directory).get(x, x)  # [sweep.labels]
    ax.set_xlabel(xname if xnum in (None, x) else f"{xname} ({xnum})")
    ax.set_ylabel(f"{y} (mean, 95 % CI)" if several else y)
    if by is not None:
        ax.legend(title=by, fontsize="small", ncols=1 if len(groups) <= 10 else 2)
    ax.grid(alpha=0.3)
    ax.set_title(f"{table}: {y} vs {x}" + (f" by {by}" if by else "") + shown)
    return fig


def write_plot(fig: Figure, out: str | Path) -> Path:
    """Writes ``fig`` to ``out`` in the format its suffix names (png, svg, pdf)."""
    from qoslab.plot import CREATOR
    from qoslab.store import prepare_file

    out = Path(out)
    fmt = prepare_file(out, ("png", "svg", "pdf"))  # never over a file qoslab did not write
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"Software" if fmt == "png" else "Creator": CREATOR}
    fig.savefig(out, format=fmt, dpi=120, metadata=meta)
    return out
