"""What a sweep's runs add up to: tables gathered across runs (:func:`gather`), mean and
95 % interval across seeds per grid point and flow (:func:`summarise`), and the DiffServ
summaries."""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from qoslab.exceptions import ResultsError
from qoslab.store import (
    OWN,
    group_delays,
    is_complete,
)
from qoslab.sweep.spec import RunTask

#: Metrics of the ``flows`` table summarised across seeds: with them the flow's added
#: round-trip delay ``extra_delay`` and its smoothed RTT ``srtt`` at the end [s], for
#: goodput against RTT; the summary also names each flow's group (``flow_group``).
SUMMARY_METRICS = ("goodput_bps", "goodput_bytes", "bytes_sent", "drops", "extra_delay", "srtt")


# --------------------------------------------------------------------------- results


def _finished(out: Path, tasks: list[RunTask]) -> list[RunTask]:
    return [t for t in tasks if is_complete(out / "runs" / t.key)]


def _param_columns(tasks: list[RunTask]) -> list[str]:
    """The columns that say a run's grid point: its case (with cases) and grid keys."""
    return list(tasks[0].labels) if tasks else []


def _with_params(df: pl.DataFrame, t: RunTask) -> pl.DataFrame:
    cols = [pl.lit(t.key).alias("run"), pl.lit(t.seed).alias("seed")]
    cols += [pl.lit(_param_value(v)).alias(k) for k, v in t.labels.items()]
    return df.select([*cols, *[c for c in df.columns if c not in ("run", "seed", *t.labels)]])


def _param_value(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) else json.dumps(v, sort_keys=True)


def run_warnings(out: str | Path, tasks: list[RunTask] | None = None) -> list[str]:
    """The warnings of a sweep's finished runs, one line per kind (the text with its
    numbers taken out): how many runs gave it, and one run's words with its key, e.g.
    a ``drop_events`` table cut short by ``record.drop_events_limit`` in 9 of 9 runs. A
    sweep prints them, so that no run's warning goes unsaid."""
    out = Path(out)
    tasks = load_tasks(out) if tasks is None else tasks
    done = _finished(out, tasks)
    kinds: dict[str, tuple[set[str], str, str]] = {}  # kind: runs, first words, its run
    for t in done:
        try:
            warned = json.loads((out / "runs" / t.key / "summary.json").read_text())["warnings"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for w in warned if isinstance(warned, list) else []:
            kind = re.sub(r"[0-9][0-9.,e+-]*", "N", str(w))
            kinds.setdefault(kind, (set(), str(w), t.key))[0].add(t.key)
    return [
        f"{len(runs)} of {len(done)} runs: {w} (e.g. run {key})" for runs, w, key in kinds.values()
    ]


def gather(out: str | Path, table: str, tasks: list[RunTask] | None = None) -> pl.DataFrame:
    """One engine table over every finished run of a sweep, with run key, seed and
    params as leading columns."""
    out = Path(out)
    if tasks is None:
        tasks = load_tasks(out)
    found = [
        (t, out / "runs" / t.key / f"{table}.parquet")
        for t in _finished(out, tasks)
        if (out / "runs" / t.key / f"{table}.parquet").is_file()
    ]
    fast = _gather_at_once(found) if found else None
    if fast is not None:
        return fast
    frames = []
    for t, f in found:
        try:
            frames.append(_with_params(pl.read_parquet(f), t))
        except Exception as e:  # polars raises several types for damaged files
            raise ResultsError(f"{f}: corrupt or not a Parquet file ({e})") from None
    frames = [f for f in frames if f.width > 0]
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="diagonal_relaxed")


_FILE_COL = "__qoslab_file"


def _gather_at_once(found: list[tuple[RunTask, Path]]) -> pl.DataFrame | None:
    """:func:`gather` with every file read in one call (two to three times faster than
    file by file); ``None`` when the files' schemas differ (or one does not read), for
    the file-by-file way, which names a damaged file. The same frame either way: the
    leading columns are made per run as there and repeated over its rows."""
    try:
        body = pl.read_parquet([str(f) for _, f in found], include_file_paths=_FILE_COL)
    except Exception:  # schemas differ, or a file is damaged: file by file
        return None
    if body.width <= 1:  # tables without columns: file by file
        return None
    index = {str(f): i for i, (_, f) in enumerate(found)}
    rows = body[_FILE_COL].replace_strict(index, return_dtype=pl.UInt32)
    head = pl.concat([_with_params(pl.DataFrame(), t) for t, _ in found], how="diagonal_relaxed")
    lead = set(head.columns)
    body = body.select([c for c in body.columns if c != _FILE_COL and c not in lead])
    return pl.concat([head[rows], body], how="horizontal")


def load_tasks(out: Path) -> list[RunTask]:
    """The runs a sweep directory planned (``sweep.json``), in plan order."""
    plan_ = json.loads((out / "sweep.json").read_text())
    return [
        RunTask(r["key"], r["seed"], r["params"], {}, None, r.get("labels") or {})
        for r in plan_["runs"]
    ]


def t95(df: int) -> float:
    """The two-sided 95 % Student t quantile for ``df`` degrees of freedom (exact)."""
    from qoslab.tables import t_quantile

    if df < 1:
        return math.nan
    return t_quantile(0.975, df)


def summarise(out: str | Path, tasks: list[RunTask] | None = None) -> pl.DataFrame | None:
    """Mean and 95 % CI half-width across seeds of each flow metric, per grid point and
    flow; written to ``summary.parquet``. ``None`` if no run has finished."""
    from qoslab.tables import with_numeric_companions

    out = Path(out)
    tasks = load_tasks(out) if tasks is None else tasks
    flows = gather(out, "flows", tasks)
    if flows.is_empty():
        (out / "summary.parquet").unlink(missing_ok=True)
        return None
    by = [*_param_columns(tasks), "name"]
    by = [c for c in by if c in flows.columns]
    metrics = [m for m in SUMMARY_METRICS if m in flows.columns]
    aggs: list[pl.Expr] = [pl.len().alias("n")]
    if "group" in flows.columns:
        from qoslab.studies import FLOW_GROUP

        aggs.append(pl.col("group").first().alias(FLOW_GROUP))
    for m in metrics:
        aggs += [
            pl.col(m).cast(pl.Float64).mean().alias(f"{m}_mean"),
            pl.col(m).cast(pl.Float64).std().alias(f"{m}_std"),
        ]
    s = flows.group_by(by, maintain_order=True).agg(aggs)
    s = with_numeric_companions(s, by)  # e.g. link.2.rate "2Mbps" → link.2.rate_bps 2e6
    tq = pl.col("n").map_elements(lambda n: t95(n - 1), return_dtype=pl.Float64)
    s = s.with_columns(
        [(tq * pl.col(f"{m}_std") / pl.col("n").sqrt()).alias(f"{m}_ci95") for m in metrics]
    )
    _write_parquet(out, "summary.parquet", s)
    params = _param_columns(tasks)
    for name, df in _diffserv_summaries(out, tasks, flows, params).items():
        if df is None or df.is_empty():
            (out / f"{name}.parquet").unlink(missing_ok=True)
        else:
            _write_parquet(out, f"{name}.parquet", df)
    return s


def _write_parquet(out: Path, name: str, df: pl.DataFrame) -> None:
    tmp = out / OWN / f"{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.parent.mkdir(exist_ok=True)
    try:
        df.write_parquet(tmp)
        os.replace(tmp, out / name)
    finally:
        tmp.unlink(missing_ok=True)


#: The summaries beside ``summary.parquet`` (each ``<name>.parquet`` and a catalog
#: table): per flow group, per DiffServ class, per meter and colour, per queue and
#: colour (drops), per sampled RIO/WRED queue and colour (RED averages).
EXTRA_SUMMARIES = (
    "summary_groups",
    "summary_classes",
    "summary_colours",
    "summary_colour_drops",
    "summary_colour_averages",
)


def seed_stats(df: pl.DataFrame, by: list[str], metrics: list[str]) -> pl.DataFrame:
    """Per value of ``by``: ``n`` (rows, one per seed) and each metric's ``_mean``,
    ``_std`` and ``_ci95`` (half-width of the 95 % Student-t interval of the mean)."""
    metrics = [m for m in metrics if m in df.columns]
    aggs: list[pl.Expr] = [pl.len().alias("n")]
    for m in metrics:
        aggs += [
            pl.col(m).cast(pl.Float64).mean().alias(f"{m}_mean"),
            pl.col(m).cast(pl.Float64).std().alias(f"{m}_std"),
        ]
    s = df.group_by(by, maintain_order=True).agg(aggs)
    tq = pl.col("n").map_elements(lambda n: t95(n - 1), return_dtype=pl.Float64)
    return s.with_columns(
        [(tq * pl.col(f"{m}_std") / pl.col("n").sqrt()).alias(f"{m}_ci95") for m in metrics]
    )


#: The per-group delay columns of ``summary_groups`` (runs with ``record.delays``).
GROUP_DELAY_METRICS = ("delay_mean", "delay_p50", "delay_p95", "delay_p99", "delay_max")


def _diffserv_summaries(
    out: Path, tasks: list[RunTask], flows: pl.DataFrame, params: list[str]
) -> dict[str, pl.DataFrame | None]:
    """Across seeds, per grid point: goodput, share, drops, retransmissions and Jain's
    fairness index per flow group (``count``/``group`` flows; with ``record.delays``
    also the group's one-way packet delay: mean, p50, p95, p99, max) and per DiffServ
    class; packets of each colour per meter; queue drops of each colour (``none``: no
    drop precedence, best effort among them) per interface and class; the per-colour
    RED averages of sampled RIO/WRED queues."""
    from qoslab.studies import DROP_COLOURS, class_colour_drops, group_fairness
    from qoslab.tables import with_numeric_companions

    res: dict[str, pl.DataFrame | None] = dict.fromkeys(EXTRA_SUMMARIES)
    sums = ("goodput_bps", "drops", "retransmits")

    def per_run(df: pl.DataFrame, key: list[str], cols: list[str]) -> pl.DataFrame:
        cols = [c for c in cols if c in df.columns]
        g = df.group_by(["run", *params, *key], maintain_order=True).agg(
            [pl.col(c).sum() for c in cols]
        )
        if "goodput_bps" in cols:
            total = pl.col("goodput_bps").sum().over("run")
            g = g.with_columns((pl.col("goodput_bps") / total).alias("share"))
        return g

    def finish(df: pl.DataFrame, key: list[str], cols: list[str]) -> pl.DataFrame:
        return with_numeric_companions(seed_stats(df, [*params, *key], cols), params)

    if "group" in flows.columns:
        g = per_run(flows.filter(pl.col("group") != ""), ["group"], list(sums))
        metrics = [*sums, "share"]
        jain = group_fairness(flows, ["run"])
        if not jain.is_empty():
            g = g.join(jain, on=["run", "group"], how="left", maintain_order="left")
            metrics.append("jain")
        hist = gather(out, "delay_histogram", tasks)
        if not hist.is_empty():
            # Per run, the percentiles of all the group's packets together; then the
            # mean and interval of each across seeds.
            tabs = {"delay_histogram": hist, "delays": gather(out, "delays", tasks)}
            d = group_delays({**tabs, "flows": flows}, by=["run"])
            if not d.is_empty():
                g = g.join(d, on=["run", "group"], how="left", maintain_order="left")
                metrics += [c for c in GROUP_DELAY_METRICS if c in d.columns]
        res["summary_groups"] = finish(g, ["group"], metrics)
    fc = gather(out, "flow_classes", tasks)
    if not fc.is_empty() and {"flow", "class"} <= set(fc.columns):
        j = flows.join(fc.select("run", "flow", "class"), on=["run", "flow"])
        c = per_run(j, ["class"], list(sums))
        res["summary_classes"] = finish(c, ["class"], [*sums, "share"])
    colours = gather(out, "colours", tasks)
    pk = ["green_pkts", "yellow_pkts", "red_pkts"]
    if not colours.is_empty() and set(pk) <= set(colours.columns):
        key = [k for k in ("place", "stage", "kind") if k in colours.columns]
        c = per_run(colours, key, pk).with_columns(
            (pl.col("green_pkts") / pl.sum_horizontal(pk)).alias("green_fraction")
        )
        res["summary_colours"] = finish(c, key, [*pk, "green_fraction"])
    drops = class_colour_drops(
        gather(out, "classes", tasks), gather(out, "colour_drops", tasks), ["run", *params]
    )
    if not drops.is_empty():
        dk = [*(f"dropped_{c}" for c in DROP_COLOURS), "dropped"]
        res["summary_colour_drops"] = finish(drops, ["iface", "class"], dk)
    res["summary_colour_averages"] = _colour_averages(out, tasks, params, finish)
    return res


#: The per-colour RED averages of ``queue_colour_samples`` (RIO-C, RIO-D, WRED).
COLOUR_AVERAGES = ("avg_green", "avg_yellow", "avg_red")


def _colour_averages(
    out: Path, tasks: list[RunTask], params: list[str], finish: Callable[..., pl.DataFrame]
) -> pl.DataFrame | None:
    """Per grid point, sampled queue (``iface``, ``class``): the time-mean after the
    warm-up of each colour's RED average (``avg_green``, ``avg_yellow``, ``avg_red``
    [packets], as the queue's drop decisions use them) in each run, then their mean and
    95 % interval across seeds. ``None`` when no run sampled a multi-colour queue."""
    qcs = gather(out, "queue_colour_samples", tasks)
    cols = [c for c in COLOUR_AVERAGES if c in qcs.columns]
    if qcs.is_empty() or not cols or not {"t", "iface"} <= set(qcs.columns):
        return None
    warm = {}
    for t in _finished(out, tasks):
        try:
            s = json.loads((out / "runs" / t.key / "summary.json").read_text())
            warm[t.key] = float(s.get("warmup") or 0.0)
        except (OSError, ValueError, TypeError):
            warm[t.key] = 0.0
    key = [k for k in ("iface", "class") if k in qcs.columns]
    w = pl.col("run").replace_strict(warm, default=0.0, return_dtype=pl.Float64)
    per_run = (
        qcs.filter(pl.col("t") >= w)
        .group_by(["run", *params, *key], maintain_order=True)
        .agg([pl.col(c).cast(pl.Float64).mean() for c in cols])
    )
    if per_run.is_empty():
        return None
    return finish(per_run, key, cols)
