"""``qoslab report DIR``: the HTML report of a run directory, a sweep directory or a
reproduction directory, rendered from the Jinja2 templates under ``templates/``
(autoescaped). :func:`write_report` is the report layer's one entry point; it sits above
the store and the sweeps (``tests/test_imports.py`` keeps it so).

Every figure is written as SVG (``--formats`` adds PNG or PDF; a reproduction always
has PNG too) under ``DIR/figures/`` (a reproduction: ``DIR/<experiment>/figures/``) and
referenced by relative links (the SVG shown, a PNG the lazily loaded fallback); tables
show a preview and link to their Parquet files. A run's or sweep's figures are written
by processes forked from this one while it draws the next (:class:`_Writer`), their SVG
text as text (:data:`FIGURE_RC`). A reproduction gets an index page (one
row per experiment in natural order, verdict counts as links), one page per experiment
and one list per verdict; an explained miss carries its docs passage rendered into the
page. Nothing links outside ``DIR``, so the folder can be copied or shared as it is.
Everything is read from the files under ``DIR`` (and the docs passages from the
checkout); nothing needs the engine.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import json
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from qoslab import plot, topology
from qoslab.exceptions import ResultsError
from qoslab.pages import doc_passage, env, table
from qoslab.store import load, prepare_file
from qoslab.sweep import build_catalog, load_tasks, plain_main, worker_context
from qoslab.tables import fmt_cell, with_numeric_companions

__all__ = ["check_formats", "expected_figures", "filter_page", "write_report"]


# --------------------------------------------------------------------------- pieces


def _rel(target: Path, page_dir: Path) -> str:
    """``target`` as a link from a page in ``page_dir`` (forward slashes)."""
    return Path(os.path.relpath(Path(target).resolve(), Path(page_dir).resolve())).as_posix()


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


#: matplotlib settings of a run or sweep report's figures: SVG text as text in the
#: page's sans-serif font (selectable; no path drawn for each glyph), and titles at the
#: top of their axes instead of placed anew above any tick labels there at every draw
#: (these figures have none there: the same files), each to draw them in less time;
#: and the SVG's element ids from a fixed salt instead of a random one, so that the
#: same results give the same files, byte for byte.
FIGURE_RC = {"svg.fonttype": "none", "axes.titley": 1.0, "svg.hashsalt": "qoslab"}

#: Most processes that write a run or sweep report's figures at once (this one and its
#: forked children).
MAX_FIGURE_JOBS = 4


_Job = tuple[Any, Path, tuple[str, ...]]  # a figure, its files' stem, their formats


class _Writer:
    """Writes the figures a report hands it (:func:`qoslab.plot.save_figure`). With
    ``jobs`` > 1 (Linux, which forks) the figures are written by children forked from
    this process, up to ``jobs - 1`` at once, while this process draws the next ones: a
    free child slot takes the figures waiting; :meth:`finish` shares what is left
    between this process and children, then waits for them. A child starts with every
    module and its figures in memory (nothing imported, nothing pickled: a worker pool
    that did both was slower on two cores), writes their files and exits; it uses only
    matplotlib, never the tables (polars and DuckDB keep threads a forked child must
    not need). A child that fails has its figures written again here, which raises its
    error. Elsewhere, or with ``jobs`` 1, each figure is written at once."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs if sys.platform.startswith("linux") and hasattr(os, "fork") else 1
        self.pending: list[_Job] = []
        self.children: dict[int, list[_Job]] = {}

    def submit(self, fig: Any, stem: Path, formats: tuple[str, ...]) -> None:
        if self.jobs < 2:
            plot.save_figure(fig, stem, formats=formats)
            return
        self.pending.append((fig, stem, formats))
        self._reap(block=False)
        if len(self.children) < self.jobs - 1:  # this process draws on: a child takes all
            self._fork(self.pending)
            self.pending = []

    def finish(self) -> None:
        """Writes every figure submitted and not yet written; returns once all are."""
        try:
            while self.pending:
                self._reap(block=False)
                free = self.jobs - 1 - len(self.children)
                if free > 0 and len(self.pending) > 1:  # a share each, this process's last
                    n = len(self.pending) * free // (free + 1)
                    for i in range(free):
                        batch = self.pending[i * n // free : (i + 1) * n // free]
                        if batch:
                            self._fork(batch)
                    del self.pending[:n]
                fig, stem, formats = self.pending.pop()
                plot.save_figure(fig, stem, formats=formats)
            while self.children:
                self._reap(block=True)
        except BaseException:
            self.abort()
            raise
        finally:
            gc.unfreeze()

    def abort(self) -> None:
        """Stops the children still writing (the report failed or was interrupted)."""
        import signal

        for pid in list(self.children):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            del self.children[pid]
        self.pending.clear()
        gc.unfreeze()

    def _fork(self, batch: list[_Job]) -> None:
        for stream in (sys.stdout, sys.stderr):  # nothing buffered written twice
            with contextlib.suppress(Exception):
                stream.flush()
        # Pages a process writes while a child shares them are copied: the objects so
        # far are left out of this process's collections until finish() (a collection
        # writes to every object it visits), and the child collects nothing.
        gc.freeze()
        with warnings.catch_warnings():  # 3.12+: "multi-threaded, use of fork()"
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: these figures' files, then out (no atexit, no flush)
            code = 1
            try:
                gc.disable()
                for fig, stem, formats in batch:
                    plot.save_figure(fig, stem, formats=formats)
                code = 0
            finally:
                os._exit(code)
        self.children[pid] = list(batch)

    def _reap(self, block: bool) -> None:
        for pid in list(self.children)[: 1 if block else None]:
            done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
            if done == 0:
                continue
            batch = self.children.pop(pid)
            if os.waitstatus_to_exitcode(status) != 0:  # again here: raises its error
                for fig, stem, formats in batch:
                    plot.save_figure(fig, stem, formats=formats)


@dataclass
class _Figures:
    """Where a page's figures go: ``dir/<prefix><slug>.<format>`` for each of
    ``formats``; remembers them. The page (in ``page``, default ``dir``'s parent) refers
    to the files by relative links. ``writer`` writes them (at once by default; a
    report's own calls :meth:`_Writer.finish` before the page is written)."""

    dir: Path
    prefix: str = ""
    written: list[Path] = field(default_factory=list)
    page: Path | None = None
    formats: tuple[str, ...] = ("svg", "png")
    writer: _Writer = field(default_factory=_Writer)

    def sub(self, prefix: str) -> _Figures:
        return _Figures(
            self.dir, f"{self.prefix}{prefix}-", self.written, self.page, self.formats,
            self.writer,
        )  # fmt: skip

    def add(self, fig: Any, slug: str, title: str) -> dict[str, str] | None:
        if fig is None:
            return None
        slug = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{self.prefix}{slug}").strip("_")
        stem = self.dir / slug
        paths = [stem.with_name(f"{stem.name}.{ext}") for ext in self.formats]
        self.writer.submit(fig, stem, self.formats)
        for ext in plot.FORMATS:  # this figure's files of an earlier report, other formats
            old = stem.with_name(f"{stem.name}.{ext}")
            if ext not in self.formats and old.is_file() and _own_figure(old):
                old.unlink()
        self.written += paths
        page = self.page_dir()
        links = {ext: _rel(p, page) for ext, p in zip(self.formats, paths, strict=True)}
        return {"title": title, "alt": title, **links, "id": f"fig-{slug}"}

    def page_dir(self) -> Path:
        """The folder of the page that shows these figures."""
        return self.page if self.page is not None else self.dir.parent

    def add_all(self, figs: Any, slug: str, title: str) -> list[dict[str, str]]:
        if figs is None:
            return []
        if not isinstance(figs, (list, tuple)):
            figs = [figs]
        out = []
        for i, f in enumerate(figs):
            s = slug if len(figs) == 1 else f"{slug}-{i + 1}"
            t = title if len(figs) == 1 else f"{title} ({i + 1})"
            fig = self.add(f, s, _fig_title(f) or t)
            if fig:
                out.append(fig)
        return out


def _own_figure(path: Path) -> bool:
    """Whether ``path`` is a figure file qoslab wrote (so a report may remove it)."""
    try:
        prepare_file(path, plot.FORMATS)
    except ResultsError:
        return False
    return True


def _fig_title(fig: Any) -> str:
    try:
        t = fig.axes[0].get_title() if fig.axes else ""
        st = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else ""
    except Exception:  # a figure from a paper module that is not a plain matplotlib one
        return ""
    return st or t


def _table(
    df: pl.DataFrame | None,
    max_rows: int = 50,
    source: str = "",
    page: Path | None = None,
    pm: bool = False,
) -> dict[str, Any]:
    """A table for the template (:func:`qoslab.pages.table`); ``source`` a Parquet file
    holding all rows, linked relative to the page's folder ``page`` when given; with
    ``pm`` each mean beside its 95 % interval ("mean ± CI")."""
    href = (
        _rel(Path(source), page) if source and page is not None and Path(source).is_file() else ""
    )
    name = Path(source).name if source and href else source
    return table(df, max_rows, name, href, pm=pm)


#: Most flows a run report draws one goodput curve each for when the flows have groups;
#: above it the report draws one curve per group.
MAX_FLOW_LINES = 12


def _grouped(flows: pl.DataFrame | None) -> bool:
    """True when a run's flows have groups and are too many to draw one by one."""
    return (
        flows is not None
        and "group" in flows.columns
        and flows.height > MAX_FLOW_LINES
        and flows.filter(pl.col("group") != "").height > 0
    )


def _summary_items(d: dict[str, Any]) -> list[tuple[str, str]]:
    units = {"duration": "s", "warmup": "s", "wall_s": "s", "call_s": "s"}
    out = []
    for k, v in d.items():
        if isinstance(v, (dict, list)):
            continue
        u = units.get(k)
        if k.endswith("_at") and isinstance(v, (int, float)):  # a Unix time stamp
            v = _dt.datetime.fromtimestamp(v, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        out.append((f"{k} [{u}]" if u else k, fmt_cell(v)))
    return out


def expected_figures(r: Any) -> list[str]:
    """The figure slugs a run report draws for a loaded run ``r``: the topology (with
    its scenario), goodput per interval and cumulative (with a ``series``), sender
    state per traced flow, queue length per recorded queue, drops by place and cause,
    and a live run's goodput against its simulated twin's (with a ``twin_series``)."""
    out = ["topology"] if r.scenario else []
    if "series" in r.tables and not r.series.is_empty():
        flows = r.tables.get("flows")
        if flows is not None and "group" in flows.columns and (flows["group"] != "").any():
            out.append("group-goodput")
        if not _grouped(flows):
            out += ["goodput", "cumulative"]
    traces = r.tables.get("traces")
    if traces is not None and not traces.is_empty():
        names = plot.flow_names(r.tables.get("flows"))
        key = "name" if "name" in traces.columns else "flow"
        for f in dict.fromkeys(traces[key].to_list()):
            out.append(f"sender-{names.get(f, f) if key == 'flow' else f}")
    qs = r.tables.get("queue_samples")
    if qs is not None and not qs.is_empty():
        out.append("queues")
    qcs = r.tables.get("queue_colour_samples")
    if qcs is not None and not qcs.is_empty() and "avg_green" in qcs.columns:
        out.append("colour-averages")
    if "drops" in r.tables and not r.tables["drops"].is_empty():
        out.append("drops")
    if "twin_series" in r.tables and not r.tables["twin_series"].is_empty():
        out.append("twin")
    return out


def _run_context(d: Path, figs: _Figures) -> dict[str, Any]:
    r = load(d)
    title = r.summary.get("name") or d.name
    flows = r.tables.get("flows")
    f: list[dict[str, str]] = []
    if r.scenario:
        f += figs.add_all(topology.draw(r.scenario), "topology", "topology")
    series = r.tables.get("series", pl.DataFrame())
    f += figs.add_all(
        plot.goodput_over_time_by_group(
            series, flows, f"{title}: goodput per flow group and interval"
        ),
        "group-goodput",
        "goodput per group and interval",
    )
    if not _grouped(flows):  # 40 flows of four groups: the groups' curves say it
        f += figs.add_all(
            plot.goodput_over_time(series, f"{title}: goodput per flow and interval", flows),
            "goodput",
            "goodput per interval",
        )
        f += figs.add_all(
            plot.cum_throughput(series, f"{title}: data delivered per flow", flows),
            "cumulative",
            "cumulative goodput",
        )
    traces = r.tables.get("traces")
    if traces is not None and not traces.is_empty():
        for fig in plot.sender_state(traces, f"{title}: sender state of {{flow}}", flows):
            name = _fig_title(fig).rsplit(" of ", 1)[-1]
            f += figs.add_all(fig, f"sender-{name}", f"sender state of {name}")
    qs = r.tables.get("queue_samples")
    if qs is not None:
        f += figs.add_all(plot.queue_over_time(qs, f"{title}: queues"), "queues", "queues")
    qcs = r.tables.get("queue_colour_samples")
    if qcs is not None:
        f += figs.add_all(
            plot.colour_averages(qcs, f"{title}: per-colour averages of the RIO/WRED queues"),
            "colour-averages",
            "per-colour queue averages",
        )
    f += figs.add_all(
        plot.drops_by_place(r.tables.get("drops", pl.DataFrame()), f"{title}: drops"),
        "drops",
        "drops by place and cause",
    )
    twin = r.tables.get("twin_series")
    if twin is not None:
        from qoslab.twin import twin_figure

        f += figs.add_all(
            twin_figure(twin, f"{title}: goodput per flow, live against its simulated twin"),
            "twin",
            "live against the simulated twin",
        )
    tables = []
    if "repeat_ci" in r.tables:  # qoslab live --repeat: the intervals first
        tables += [
            (
                f"{name}: mean ± 95 % CI over the repeats" if name == "repeat_ci" else name,
                _table(r.tables[name], source=f"{d}/{name}.parquet", page=figs.page_dir(), pm=True),
            )
            for name in ("repeat_ci", "repeats")
        ]
    groups = r.by_group()
    if not groups.is_empty():
        tables.append(("goodput per flow group", _table(groups, source="flows.parquet")))
    tables += [
        (name, _table(r.tables[name], source=f"{d}/{name}.parquet", page=figs.page_dir()))
        for name in ("flows", "drops", "queues")
        if name in r.tables
    ]
    by_class = r.goodput_by_class()
    if not by_class.is_empty():
        tables.append(("goodput by class", _table(by_class, source="flows + flow_classes.parquet")))
    tables += [
        (name, _table(r.tables[name], source=f"{d}/{name}.parquet", page=figs.page_dir()))
        for name in (
            "colours",
            "colour_drops",
            "classes",
            "delays",
            "live_timing",
            "live_ping",
            "twin",
        )
        if name in r.tables
    ]
    return {
        "anchor": f"{figs.prefix}run-",
        "live": _live_verdict(r.summary),
        "title": title,
        "seed": r.summary.get("seed"),
        "path": str(d),
        "summary": _summary_items(r.summary),
        "warnings": list(r.summary.get("warnings") or []),
        "figures": f,
        "tables": tables,
        "scenario": json.dumps(r.scenario, indent=2) if r.scenario is not None else "",
    }


def _live_verdict(summary: dict[str, Any]) -> dict[str, Any] | None:
    """A live run's timing-validity verdict for the top of its page (None: simulated):
    the datapath's p99 and p99.9 lateness against the 100 µs and 2 ms bounds."""
    if "live_timing_ok" not in summary:
        return None
    ok = bool(summary["live_timing_ok"])
    p99 = float(summary.get("live_lateness_p99_us") or 0.0)
    p999 = float(summary.get("live_lateness_p999_us") or 0.0)
    return {
        "ok": ok,
        "text": (
            f"Live run, real Linux TCP: timing {'valid' if ok else 'OUT OF BOUNDS'} — "
            f"lateness p99 {p99:.1f} µs (bound 100 µs), p99.9 {p999:.1f} µs (bound 2 ms)"
            + ("" if ok else "; the datapath ran late, so rates and delays are not trustworthy")
        ),
    }


# --------------------------------------------------------------------------- sweeps


def _rate(v: Any) -> float | None:
    from qoslab.tables import numeric_companions

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        c = numeric_companions({"x": v})
        return c.get("x_bps")
    return None


def _references(sc: dict[str, Any]) -> dict[str, float]:
    """Reference goodputs [bit/s] a scenario implies: each CBR flow's offered rate, each
    TRC's requested rate, and for TCP flows sharing the slowest link the fair share
    (its rate / number of flows). At most four lines, to stay readable."""
    flows = sc.get("flow") or []
    refs: dict[str, float] = {}
    for c in sc.get("conditioner") or []:
        for st in c.get("stages") or []:
            if st.get("kind") == "trc" and _rate(st.get("rate")) is not None:
                refs[f"requested {st.get('flow')}"] = _rate(st.get("rate"))  # type: ignore[assignment]
    for fl in flows:
        cbr = fl.get("cbr")
        if isinstance(cbr, dict) and _rate(cbr.get("rate")) is not None:
            refs[f"offered {fl.get('name')}"] = _rate(cbr.get("rate"))  # type: ignore[assignment]
    tcp = [fl for fl in flows if "tcp" in fl]
    rates = [_rate(link.get("rate")) for link in sc.get("link") or []]
    rates = [r for r in rates if r]
    if len(tcp) >= 2 and len(tcp) == len(flows) and rates and not refs:
        refs[f"fair share (slowest link / {len(tcp)})"] = min(rates) / len(tcp)
    return refs if len(refs) <= 4 else {}


def _sweep_context(d: Path, figs: _Figures) -> dict[str, Any]:
    from qoslab.store import is_complete

    spec = json.loads((d / "sweep.json").read_text())
    tasks = load_tasks(d)
    if not (d / "catalog.duckdb").is_file():
        build_catalog(d, tasks)
    import duckdb

    con = duckdb.connect(str(d / "catalog.duckdb"), read_only=True)
    try:
        runs = pl.from_arrow(con.sql("SELECT * FROM runs").to_arrow_table())
    finally:
        con.close()
    assert isinstance(runs, pl.DataFrame)
    grid = spec["spec"].get("grid") or {}
    # the columns that say a grid point: the case (with [sweep.cases]), then the grid keys
    params = (["case"] if spec["spec"].get("cases") else []) + list(grid)
    ctx: dict[str, Any] = {
        "anchor": figs.prefix,
        "axis_labels": spec["spec"].get("axis_labels") or {},  # [sweep.labels]
        "name": spec.get("name"),
        "path": str(d),
        "n_runs": len(tasks),
        "n_done": runs.filter(pl.col("status") == "done").height,
        "n_failed": runs.filter(pl.col("status") == "failed").height,
        "grid": json.dumps(grid),
        "seeds": spec["spec"].get("seeds"),
        "figures": [],
        "summary": None,
        "tables": [],
        "failed": None,
        "first_run": None,
    }
    done = [t for t in tasks if is_complete(d / "runs" / t.key)]
    if (d / "summary.parquet").is_file():
        summary = with_numeric_companions(pl.read_parquet(d / "summary.parquet"), params)
        _diffserv_sweep(d, params, figs, ctx)  # per group and class first: the aggregates
        grouped = (d / "summary_groups.parquet").is_file()
        many = summary["name"].n_unique() > 12 if "name" in summary.columns else False
        for param in [] if grouped and many else params:  # per flow: unreadable then
            refs: dict[str, dict[Any, tuple[float, float]]] = {}
            xcol = next(
                (f"{param}{s}" for s in ("_bps", "_s", "_bytes") if f"{param}{s}" in summary),
                None,
            )
            for t in done:
                x = t.labels.get(param)  # the grid value's label, as in the summary
                sc_file = d / "runs" / t.key / "scenario.json"
                if x is None or not sc_file.is_file():
                    continue
                xv = summary.filter(pl.col(param) == x)[xcol][0] if xcol else x
                for lab, y in _references(json.loads(sc_file.read_text())).items():
                    refs.setdefault(lab, {}).setdefault(x, (xv, y))
            references: dict[str, Any] = {}
            for lab, pts in refs.items():
                ys = {y for _, y in pts.values()}
                references[lab] = ys.pop() if len(ys) == 1 else pts
            others = [p for p in params if p != param]
            fig = plot.goodput_vs_param(
                summary, param, others=others, references=references,
                axis_names=ctx["axis_labels"],
            )  # fmt: skip
            ctx["figures"] += figs.add_all(fig, f"goodput-vs-{param}", f"goodput vs {param}")
        _rtt_sweep(summary, params, figs, ctx)
        ctx["summary"] = _table(summary, 100, f"{d}/summary.parquet", figs.page_dir(), pm=True)
    failed = runs.filter(pl.col("status") == "failed")
    if failed.height:
        ctx["failed"] = _table(failed)
    if done:
        ctx["first_run"] = _run_context(d / "runs" / done[0].key, figs.sub("first-run"))
    return ctx


#: The sweep's DiffServ summaries (see qoslab.sweep.EXTRA_SUMMARIES) as the report
#: titles them; ``summary_groups`` and ``summary_classes`` are also drawn.
_DIFFSERV_TABLES = {
    "summary_groups": "Per flow group: goodput, share, drops, retransmissions",
    "summary_classes": "Per DiffServ class: goodput, share, drops, retransmissions",
    "summary_colours": "Packets of each colour per meter",
    "summary_colour_drops": "Queue drops per colour and class (none: no drop precedence)",
    "summary_colour_averages": "Per-colour RED averages of the sampled RIO/WRED queues",
}


#: The stacked colour figures of the DiffServ summaries: column prefix and suffix of
#: the colours, the columns naming a bar, and the figure's title.
_COLOUR_BARS = {
    "summary_colours": (
        "", "_pkts", ["place", "stage"],
        "Packets of each colour per meter and case (mean, 95 % CI of the total)",
    ),
    "summary_colour_drops": (
        "dropped_", "", ["iface", "class"],
        "Queue drops per class and colour and case (mean, 95 % CI of the total)",
    ),
}  # fmt: skip


def _rtt_sweep(summary: pl.DataFrame, params: list[str], figs: _Figures, ctx: dict) -> None:
    """Goodput against the added round-trip delay per flow group (the per-flow summary's
    ``flow_group`` and ``extra_delay``): a table, and a figure with one line per group
    and one panel per grid point. Nothing when the flows have no groups."""
    from qoslab.studies import FLOW_GROUP, rtt_by_group

    t = rtt_by_group(summary, params)
    if t.is_empty():
        return
    title = "Goodput against RTT per flow group (mean ± 95 % CI across seeds)"
    ctx["tables"].append((title, _table(t, 100, "summary.parquet", pm=True)))
    if "extra_delay_mean" not in t.columns or t["extra_delay_mean"].n_unique() < 2:
        return
    lines = t.with_columns((pl.col("extra_delay_mean") * 1e3).alias("rtt_ms"))
    lines = lines.drop("name").rename({FLOW_GROUP: "name"})
    # one line per group, its flows in order of their added delay; a panel per grid point
    fig = plot.goodput_vs_param(
        lines, "rtt_ms", others=[p for p in params if p in lines.columns],
        xlabel="added round-trip delay (extra_delay) [ms]", ylabel="goodput per flow",
        axis_names=ctx.get("axis_labels"),
        title="Goodput per flow against its added RTT, per group (mean, 95 % CI)",
    )  # fmt: skip
    ctx["figures"] += figs.add_all(fig, "goodput-vs-rtt", "goodput against RTT per group")


def _diffserv_sweep(d: Path, params: list[str], figs: _Figures, ctx: dict[str, Any]) -> None:
    """The per-group and per-class goodput figures (one line per group, mean and 95 %
    interval across seeds, against each grid key; one panel per value of the others)
    and the DiffServ summary tables of a sweep, with 95 % intervals."""
    names = ctx.get("axis_labels")
    for name, title in _DIFFSERV_TABLES.items():
        f = d / f"{name}.parquet"
        if not f.is_file():
            continue
        df = with_numeric_companions(pl.read_parquet(f), params)
        ctx["tables"].append(
            (f"{title} (mean ± 95 % CI across seeds)", _table(df, 100, str(f), pm=True))
        )
        swept = [p for p in params if p != "case"] or params
        if name in _COLOUR_BARS:
            prefix, suffix, bars, what = _COLOUR_BARS[name]
            fig = plot.colour_bars(df, prefix, suffix, bars, params, title=what)
            ctx["figures"] += figs.add_all(fig, f"{name.removeprefix('summary_')}-bars", what)
        if name == "summary_colour_averages":
            for param in swept:
                others = [p for p in params if p != param]
                fig = plot.colour_averages_vs_param(df, param, others=others, axis_names=names)
                title = f"RED average per colour vs {plot.axis_name(param, names)} (mean, 95 % CI)"
                ctx["figures"] += figs.add_all(fig, f"colour-averages-vs-{param}", title)
            continue
        key = {"summary_groups": "group", "summary_classes": "class"}.get(name)
        if key is None or key not in df.columns:
            continue
        lines = df.rename({key: "name"}) if "name" not in df.columns else df
        for param in swept:
            others = [p for p in params if p != param]
            title = f"goodput per {key} vs {plot.axis_name(param, names)} (mean, 95 % CI)"
            fig = plot.goodput_vs_param(lines, param, others=others, title=title, axis_names=names)
            ctx["figures"] += figs.add_all(fig, f"{key}-goodput-vs-{param}", title)
            if key == "group" and "delay_p99_mean" in lines.columns:
                what = plot.axis_name(param, names)
                title = f"p99 one-way delay per group vs {what} (mean, 95 % CI)"
                fig = plot.goodput_vs_param(
                    lines, param, metric="delay_p99", others=others, title=title,
                    axis_names=names,
                )  # fmt: skip
                ctx["figures"] += figs.add_all(fig, f"group-delay-p99-vs-{param}", title)


# --------------------------------------------------------------------------- reproduce


def _comparison_row(c: dict[str, Any], i: int = 0) -> dict[str, Any]:
    dev = c.get("deviation")
    if "deviation" not in c and c.get("paper") not in (None, 0):
        dev = (c["ours"] - c["paper"]) / abs(c["paper"])
    verdict = c.get("verdict", "info")
    ex = c.get("explanation") or {}
    explained = verdict in ("outside-explained", "outside") and bool(ex)
    cf = ex.get("counterfactual") if explained else None
    counterfactual = ""
    if cf:
        from qoslab.reproduce import counterfactual_outcome

        landed = counterfactual_outcome(ex)
        counterfactual = f"{cf['change']} → {fmt_cell(cf.get('value'), 5)} ({landed})"
    if verdict == "tie" or c.get("kind") == "order":
        ref = c.get("reference") or ""
    else:
        ref = c.get("reference") or ("—" if c.get("paper") is None else fmt_cell(c["paper"], 6))
    return {
        "id": f"c{i}",
        "quantity": c["quantity"],
        "ours": fmt_cell(c["ours"], 5),
        "unit": c.get("unit") or "",
        "reference": ref,
        "deviation": _percent(dev),
        "verdict": verdict,
        "why": ex.get("why", "") if explained else "",
        "doc": ex.get("doc", "") if explained else "",
        "script": ex.get("script", "") if explained else "",
        "counterfactual": counterfactual,
        "command": (cf or {}).get("command", "") if explained else "",
        "note": c.get("note", "") or _OPEN.get(verdict, ""),
    }


#: What the "why" column says of a verdict that has no explanation and no note: an
#: outside without a tested cause is an open finding, not a blank.
_OPEN = {
    "outside": "no tested explanation: an open finding",
    "tie": "the seed-paired interval holds zero: the seeds cannot tell the two apart",
}


def _percent(dev: float | None) -> str:
    """A relative deviation in percent to three significant digits ("—" for none, "0" for
    exactly none): two fixed decimals printed "+0.00" for a deviation of 0.004 %."""
    if dev is None:
        return "—"
    if dev == 0:
        return "0"
    return f"{100 * dev:+.3g}"


def _explanations(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each explained miss of a page with its docs passage rendered into the page, once
    per passage (a later miss explained by the same passage links to the first): the
    page links to nothing in the checkout."""
    out, seen = [], {}
    for r in rows:
        if not r["why"]:
            continue
        if r["doc"] and r["doc"] in seen:  # the passage once, at its first explanation
            out.append({**r, "passage": "", "passage_at": seen[r["doc"]]})
            continue
        if r["doc"]:
            seen[r["doc"]] = {"id": r["id"], "quantity": r["quantity"]}
        out.append({**r, "passage": doc_passage(r["doc"]) if r["doc"] else "", "passage_at": None})
    return out


def _ablation_row(a: dict[str, Any]) -> dict[str, Any]:
    unit = f" {a['unit']}" if a.get("unit") else ""
    fall = "—" if a.get("fall") is None else f"{a['fall']:.3g}"
    return {
        "claim": a["claim"],
        "mechanism": a["mechanism"],
        "twin": a["twin"],
        "quantity": a["quantity"],
        "with": fmt_cell(a["effect_with"], 4) + unit,
        "without": fmt_cell(a["effect_without"], 4) + unit,
        "fall": f"{fall} (≥ {a['falls_by']:.3g})",
        "verdict": a["verdict"],
    }


def _reading_rows(readings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for r in readings:
        label = f"{r['knob']} = {r['reading']}" + (" (headline)" if r["headline"] else "")
        for c in r["comparisons"]:
            row = _comparison_row(c, len(rows))
            rows.append({**row, "id": f"r{len(rows)}", "reading": label})
    return rows


def _calibration_rows(cals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for cal in cals:
        for v, cs in zip(cal["values"], cal["comparisons"], strict=True):
            chosen = " (chosen)" if v == cal["chosen"] else ""
            for c in cs:
                label = f"{cal['parameter']} = {v}{chosen}"
                row = _comparison_row(c, len(rows))
                rows.append({**row, "id": f"k{len(rows)}", "parameter": label})
    return rows


#: Verdicts an index counts per experiment, in its columns' order.
INDEX_VERDICTS = ("within", "outside-explained", "tie", "outside", "not-judged", "failed")

#: Rows of an experiment's raw tables shown on its page (all rows are in the Parquet file).
PREVIEW_ROWS = 12


def _local(d: Path, e: dict[str, Any], p: str | Path) -> Path:
    """A run or sweep folder an experiment recorded, found in the results folder ``d``
    also when ``d`` was moved after the experiments ran (the index keeps the path the
    run was saved at)."""
    p = Path(p)
    if p.is_dir():
        return p
    moved = d / e["name"] / p.parent.name / p.name
    return moved if moved.is_dir() else p


def _experiment_context(d: Path, e: dict[str, Any], quick: bool) -> tuple[dict, list[Path]]:
    """One experiment's page of a reproduction report (its paper figure, tables,
    sweeps and runs, figures written under ``d/<name>/figures``, the page at
    ``d/<name>/report.html``) and the figure files written; runs in a worker process
    when the report has several experiments."""
    from qoslab.reproduce import FIGURES, Saved, count_verdicts, discover, experiment_status

    discover()  # the paper modules register their figures
    status = experiment_status(e)
    n = count_verdicts([*(e.get("comparisons") or []), *(e.get("ablations") or [])])
    if e.get("status") == "failed":
        n = {**dict.fromkeys(INDEX_VERDICTS, 0), "failed": 1}
    comparisons = [_comparison_row(c, i) for i, c in enumerate(e.get("comparisons") or [])]
    readings = _reading_rows(e.get("readings") or [])
    calibrations = _calibration_rows(e.get("calibrations") or [])
    first: dict[str, str] = {}
    for r in comparisons:
        first.setdefault(r["verdict"], r["id"])
    ablations = [_ablation_row(a) for a in e.get("ablations") or []]
    for i, a in enumerate(ablations):
        a["id"] = f"a{i}"
        first.setdefault(a["verdict"], a["id"])
    page = d / e["name"]
    ectx: dict[str, Any] = {
        "name": e["name"],
        "href": f"{e['name']}/report.html",
        "title": e.get("title", ""),
        "paper": e.get("paper", ""),
        "status": status,
        "cls": {"within": "ok", "outside-explained": "expl", "tie": "expl", "skipped": "expl"}.get(
            status, "failed"
        ),
        "counts": ", ".join(f"{v} {k}" for k, v in n.items() if v),
        "n": {k: n.get(k, 0) for k in INDEX_VERDICTS},
        "first": first,
        "error": e.get("error") if e.get("status") == "failed" else "",
        "figures": [],
        "figure_error": "",
        "comparisons": comparisons,
        "ablations": ablations,
        "readings": readings,
        "argued": [
            f"Headline reading {r['knob']} = {r['reading']}: {r['argued']}"
            for r in e.get("readings") or []
            if r.get("headline")
        ],
        "calibrations": calibrations,
        "explanations": _explanations([*comparisons, *readings, *calibrations]),
        "notes": e.get("notes", ""),
        "tables": [],
        "sweeps": [],
        "runs": [],
    }
    efigs = _Figures(page / "figures", page=page)
    if e.get("status") != "failed":
        if e["name"] in FIGURES:
            saved = Saved(d / e["name"], e, bool(e.get("quick", quick)))
            try:
                drawn = FIGURES[e["name"]](saved)
                ectx["figures"] = efigs.add_all(drawn, "paper-figure", f"{e['name']}")
            except Exception as ex:  # a broken figure must not hide the numbers
                ectx["figure_error"] = f"{type(ex).__name__}: {ex}"
        for t in e.get("tables", []):
            f = d / e["name"] / f"table-{t}.parquet"
            ectx["tables"].append((t, _table(pl.read_parquet(f), PREVIEW_ROWS, str(f), page)))
        for i, s in enumerate(e.get("sweeps", [])):
            ectx["sweeps"].append(_sweep_context(_local(d, e, s), efigs.sub(f"sweep{i}")))
        for i, r in enumerate(e.get("runs", [])):
            ectx["runs"].append(_run_context(_local(d, e, r), efigs.sub(f"run{i}")))
    return ectx, efigs.written


def _experiment_contexts(d: Path, exps: list[dict], quick: bool) -> list[tuple[dict, list]]:
    """:func:`_experiment_context` of every experiment, in order: drawing the figures
    is most of a report's time (the main job's report has over 300), so several
    experiments are drawn in parallel, one worker process per core. Only when every
    paper figure among them is qoslab's own: a worker imports qoslab afresh, so a
    figure registered by the user's script (or a test) is drawn here, in this process."""
    from qoslab.reproduce import FIGURES, discover

    discover()
    own = all(
        FIGURES[e["name"]].__module__.startswith("qoslab.") for e in exps if e["name"] in FIGURES
    )
    workers = min(len(exps), os.cpu_count() or 1, 8)
    if workers < 2 or not own:
        return [_experiment_context(d, e, quick) for e in exps]
    from concurrent.futures import ProcessPoolExecutor

    with plain_main(), ProcessPoolExecutor(workers, mp_context=worker_context()) as ex:
        futures = [ex.submit(_experiment_context, d, e, quick) for e in exps]
    return [f.result() for f in futures]


def _reproduce_context(d: Path, figs: _Figures) -> dict[str, Any]:
    from qoslab.docgen import natural_key
    from qoslab.reproduce import summarize

    idx = json.loads((d / "reproduce.json").read_text())
    exps = sorted(idx.get("experiments", []), key=lambda e: natural_key(e["name"]))
    summ = summarize(idx)
    out = []
    for ectx, written in _experiment_contexts(d, exps, bool(idx.get("quick"))):
        figs.written += written
        out.append(ectx)
    full = [e["name"] for e in exps if idx.get("quick") and e.get("quick") is False]
    mode = "quick" if idx.get("quick") else "full"
    if full:
        mode += f" (full mode: {', '.join(full)})"
    if idx.get("paper_only"):
        mode += "; the papers' configurations only (--paper-only)"
    if idx.get("finished") is False:
        wanted = idx.get("requested") or []
        mode += f"; STOPPED PART-WAY: {len(exps)} of {len(wanted) or '?'} experiments finished"
    return {
        "mode": mode,
        "n_run": len(exps),
        "n_registered": len(idx.get("registered", [])),
        "st": summ["experiments"],
        "cv": summ["comparisons"],
        "ab": summ["ablations"],
        "experiments": out,
    }


def _filtered(repro: dict[str, Any], verdict: str) -> list[dict[str, Any]]:
    """The rows of every experiment with ``verdict`` (comparisons and ablations; for
    ``failed``, the failed experiments), each with a link into its page."""
    rows = []
    for e in repro["experiments"]:
        if verdict == "failed":
            if e["status"] == "failed":
                rows.append({"exp": e, "what": "experiment failed", "href": e["href"],
                             "row": None, "explanation": None})  # fmt: skip
            continue
        expl = {x["id"]: x for x in e["explanations"]}
        for c in e["comparisons"]:
            if c["verdict"] == verdict:
                rows.append({"exp": e, "what": "comparison", "href": f"{e['href']}#{c['id']}",
                             "row": c, "explanation": expl.get(c["id"])})  # fmt: skip
        for a in e["ablations"]:
            if a["verdict"] == verdict:
                rows.append({"exp": e, "what": "ablation", "href": f"{e['href']}#{a['id']}",
                             "row": {"quantity": f"{a['claim']} ({a['quantity']})",
                                     "ours": f"{a['with']} → {a['without']}", "unit": "",
                                     "reference": f"fall {a['fall']}"},
                             "explanation": None})  # fmt: skip
    return rows


# --------------------------------------------------------------------------- page


def _render(template: str, out: Path, **ctx: Any) -> Path:
    import qoslab

    page = (
        env()
        .get_template(template)
        .render(
            version=qoslab.__version__,
            stamp=_dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
            **ctx,
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out


def filter_page(out: Path, verdict: str) -> Path:
    """Where the index of ``out`` (a reproduction's index page) lists only ``verdict``."""
    return out.with_name(f"{out.stem}-{verdict}.html")


def _write_reproduction(d: Path, out: Path, repro: dict[str, Any]) -> Path:
    """The index (``out``), one page per experiment (``d/<name>/report.html``) and one
    filtered list per verdict (``out``'s name with ``-<verdict>``)."""
    index_dir = out.parent
    for e in repro["experiments"]:
        e["index_href"] = _rel(d / e["href"], index_dir)
        page = d / e["href"]
        _render("experiment.html.j2", page, e=e, name=d.resolve().name,
                index=_rel(out, page.parent))  # fmt: skip
    filters = {v: filter_page(out, v) for v in INDEX_VERDICTS}
    for v, f in filters.items():
        rows = _filtered(repro, v)
        for r in rows:
            r["link"] = _rel(d / r["href"].partition("#")[0], index_dir) + (
                "#" + r["href"].partition("#")[2] if "#" in r["href"] else ""
            )
        _render("filtered.html.j2", f, verdict=v, rows=rows, name=d.resolve().name,
                index=out.name)  # fmt: skip
    links = {v: f.name for v, f in filters.items()}
    return _render("index.html.j2", out, kind="reproduction", name=d.resolve().name,
                   repro=repro, filters=links, verdicts=INDEX_VERDICTS)  # fmt: skip


def check_formats(formats: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``formats`` as a tuple if each is one of :data:`qoslab.plot.FORMATS` and SVG or
    PNG is among them (the page shows one of those); else ``ValueError`` saying so."""
    formats = tuple(formats)
    bad = [f for f in formats if f not in plot.FORMATS]
    if bad or not {"svg", "png"} & set(formats):
        raise ValueError(
            f"figure formats {','.join(formats)}: each one of {', '.join(plot.FORMATS)}, "
            "with svg or png among them (the page shows one of those)"
        )
    return formats


def write_report(
    src: str | Path, out: str | Path | None = None, formats: tuple[str, ...] | None = None
) -> Path:
    """The report layer's entry point: writes the HTML report for ``src`` (a run, sweep
    or reproduction directory) to ``out`` (default ``src/report.html``), every figure in
    ``formats`` (of :data:`qoslab.plot.FORMATS`, SVG or PNG among them; default SVG, a
    reproduction SVG and PNG, whose PNGs the docs' figures are copied from) under
    ``src/figures/`` (a reproduction: ``src/<experiment>/figures/``) referenced by the
    page, and returns the page's path. A reproduction's page is an index: one row
    per experiment (natural order), linking to one page per experiment
    (``src/<experiment>/report.html``) and to lists of the comparisons of one verdict.
    Raises :class:`~qoslab.ResultsError` if ``src`` is not a results directory and
    ``ValueError`` for an unknown format or formats without SVG or PNG."""
    d = Path(src)
    if out:
        prepare_file(out, ("html",))  # never over a file qoslab did not write
    out = Path(out) if out else d / "report.html"
    repro = (d / "reproduce.json").is_file()
    formats = check_formats(formats or (("svg", "png") if repro else ("svg",)))
    if repro and "png" not in formats:
        formats = (*formats, "png")  # the docs' figures are copied from these
    if repro:  # its experiments are drawn in a worker pool, each writing its own
        figs = _Figures(d / "figures", page=out.parent, formats=formats)
        return _write_reproduction(d, out, _reproduce_context(d, figs))
    if not (d / "sweep.json").is_file() and not (d / "summary.json").is_file():
        raise ResultsError(
            f"{d}: not a qoslab results directory (expected summary.json, sweep.json or "
            "reproduce.json in it)"
        )
    import matplotlib

    writer = _Writer(min(_cores(), MAX_FIGURE_JOBS))
    figs = _Figures(d / "figures", page=out.parent, formats=formats, writer=writer)
    ctx: dict[str, Any] = {"run": None, "sweep": None}
    try:
        with matplotlib.rc_context(FIGURE_RC):
            if (d / "sweep.json").is_file():
                kind = "sweep"
                ctx["sweep"] = _sweep_context(d, figs)
            else:
                kind = "run"
                ctx["run"] = _run_context(d, figs)
            writer.finish()
    finally:
        writer.abort()  # after an error: the children still writing
    return _render("report.html.j2", out, kind=kind, name=d.resolve().name, **ctx)
