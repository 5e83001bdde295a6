"""``qoslab report DIR``: one self-contained HTML page (figures embedded as PNG) for a
run directory, a sweep directory or a reproduction directory, rendered from the Jinja2
template ``templates/report.html.j2`` (autoescaped). Every figure is also written as SVG
and PNG under ``DIR/figures/``.

Everything is read from the files under ``DIR``; nothing needs the engine.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from qoslab import plot
from qoslab.exceptions import ResultsError
from qoslab.store import load
from qoslab.tables import column_unit, fmt_cell, with_numeric_companions

__all__ = ["expected_figures", "result_html", "write_report"]


# --------------------------------------------------------------------------- pieces


@dataclass
class _Figures:
    """Where a page's figures go: ``dir/<prefix><slug>.svg|png``; remembers them."""

    dir: Path
    prefix: str = ""
    written: list[Path] = field(default_factory=list)

    def sub(self, prefix: str) -> _Figures:
        return _Figures(self.dir, f"{self.prefix}{prefix}-", self.written)

    def add(self, fig: Any, slug: str, title: str) -> dict[str, str] | None:
        if fig is None:
            return None
        slug = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{self.prefix}{slug}").strip("_")
        svg, png = plot.save_figure(fig, self.dir / slug)
        self.written += [svg, png]
        return {
            "title": title,
            "alt": title,
            "png_b64": base64.b64encode(png.read_bytes()).decode(),
            "files": f"figures/{svg.name}, figures/{png.name}",
        }

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


def _fig_title(fig: Any) -> str:
    try:
        t = fig.axes[0].get_title() if fig.axes else ""
        st = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else ""
    except Exception:  # a figure from a paper module that is not a plain matplotlib one
        return ""
    return st or t


def _table(df: pl.DataFrame | None, max_rows: int = 50, source: str = "") -> dict[str, Any]:
    """A table for the template: header (name, unit, text?) and formatted rows."""
    if df is None or df.is_empty():
        return {"header": [], "rows": [], "more": 0, "source": source}
    header = [
        {
            "name": c,
            "unit": column_unit(c) if df[c].dtype.is_numeric() else "",
            "text": not df[c].dtype.is_numeric(),
        }
        for c in df.columns
    ]
    rows = [{"cells": [fmt_cell(v) for v in r], "cls": ""} for r in df.head(max_rows).iter_rows()]
    return {"header": header, "rows": rows, "more": max(0, df.height - max_rows), "source": source}


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
    """The figure slugs a run report draws for a loaded run ``r``: goodput per interval
    and cumulative (with a ``series``), sender state per traced flow, queue length per
    recorded queue, drops by place and cause."""
    out = []
    if "series" in r.tables and not r.series.is_empty():
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
    if "drops" in r.tables and not r.tables["drops"].is_empty():
        out.append("drops")
    return out


def _run_context(d: Path, figs: _Figures) -> dict[str, Any]:
    r = load(d)
    title = r.summary.get("name") or d.name
    flows = r.tables.get("flows")
    f: list[dict[str, str]] = []
    series = r.tables.get("series", pl.DataFrame())
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
    f += figs.add_all(
        plot.drops_by_place(r.tables.get("drops", pl.DataFrame()), f"{title}: drops"),
        "drops",
        "drops by place and cause",
    )
    tables = [
        (name, _table(r.tables[name], source=f"{d}/{name}.parquet"))
        for name in ("flows", "drops", "queues")
        if name in r.tables
    ]
    by_class = r.goodput_by_class()
    if not by_class.is_empty():
        tables.append(
            ("goodput by class", _table(by_class, source=f"{d}/flows + flow_classes.parquet"))
        )
    tables += [
        (name, _table(r.tables[name], source=f"{d}/{name}.parquet"))
        for name in ("colours", "colour_drops", "classes", "delays")
        if name in r.tables
    ]
    return {
        "title": title,
        "seed": r.summary.get("seed"),
        "path": str(d),
        "summary": _summary_items(r.summary),
        "warnings": list(r.summary.get("warnings") or []),
        "figures": f,
        "tables": tables,
        "scenario": json.dumps(r.scenario, indent=2) if r.scenario is not None else "",
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
    from qoslab.sweep import _load_tasks, build_catalog

    spec = json.loads((d / "sweep.json").read_text())
    tasks = _load_tasks(d)
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
    params = list(grid)
    ctx: dict[str, Any] = {
        "name": spec.get("name"),
        "path": str(d),
        "n_runs": len(tasks),
        "n_done": runs.filter(pl.col("status") == "done").height,
        "n_failed": runs.filter(pl.col("status") == "failed").height,
        "grid": json.dumps(grid),
        "seeds": spec["spec"].get("seeds"),
        "figures": [],
        "summary": None,
        "failed": None,
        "first_run": None,
    }
    done = [t for t in tasks if is_complete(d / "runs" / t.key)]
    if (d / "summary.parquet").is_file():
        summary = with_numeric_companions(pl.read_parquet(d / "summary.parquet"), params)
        for param in params:
            refs: dict[str, dict[Any, tuple[float, float]]] = {}
            xcol = next(
                (f"{param}{s}" for s in ("_bps", "_s", "_bytes") if f"{param}{s}" in summary),
                None,
            )
            for t in done:
                x = t.params.get(param)
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
            fig = plot.goodput_vs_param(summary, param, others=others, references=references)
            ctx["figures"] += figs.add_all(fig, f"goodput-vs-{param}", f"goodput vs {param}")
        ctx["summary"] = _table(summary, 100, f"{d}/summary.parquet")
    failed = runs.filter(pl.col("status") == "failed")
    if failed.height:
        ctx["failed"] = _table(failed)
    if done:
        ctx["first_run"] = _run_context(d / "runs" / done[0].key, figs.sub("first-run"))
    return ctx


# --------------------------------------------------------------------------- reproduce


def _doc_href(doc: str) -> str:
    """A repository path with an anchor as a link that opens from the report."""
    path, _, anchor = doc.partition("#")
    f = Path(__file__).resolve().parents[2] / path  # the repository, in a clone
    if f.is_file():
        return f.resolve().as_uri() + (f"#{anchor}" if anchor else "")
    return doc


def _comparison_row(c: dict[str, Any]) -> dict[str, Any]:
    dev = c.get("deviation")
    if "deviation" not in c and c.get("paper") not in (None, 0):
        dev = (c["ours"] - c["paper"]) / abs(c["paper"])
    verdict = c.get("verdict", "info")
    ex = c.get("explanation") or {}
    explained = verdict in ("outside-explained", "outside") and bool(ex)
    cf = ex.get("counterfactual") if explained else None
    counterfactual = ""
    if cf:
        landed = {True: "lands in the band", False: "misses the band"}.get(
            ex.get("confirmed"), "not run"
        )
        counterfactual = f"{cf['change']} → {fmt_cell(cf.get('value'), 5)} ({landed})"
    if verdict == "tie" or c.get("kind") == "order":
        ref = c.get("reference") or ""
    else:
        ref = c.get("reference") or ("—" if c.get("paper") is None else fmt_cell(c["paper"], 6))
    return {
        "quantity": c["quantity"],
        "ours": fmt_cell(c["ours"], 5),
        "unit": c.get("unit") or "",
        "reference": ref,
        "deviation": "—" if dev is None else f"{100 * dev:+.2f}",
        "verdict": verdict,
        "why": ex.get("why", "") if explained else "",
        "doc": ex.get("doc", ""),
        "doc_href": _doc_href(ex.get("doc", "")) if explained else "",
        "script": ex.get("script", "") if explained else "",
        "counterfactual": counterfactual,
        "note": c.get("note", ""),
    }


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
            row = _comparison_row(c)
            rows.append({**row, "reading": label})
    return rows


def _calibration_rows(cals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for cal in cals:
        for v, cs in zip(cal["values"], cal["comparisons"], strict=True):
            chosen = " (chosen)" if v == cal["chosen"] else ""
            for c in cs:
                label = f"{cal['parameter']} = {v}{chosen}"
                rows.append({**_comparison_row(c), "parameter": label})
    return rows


def _experiment_context(d: Path, e: dict[str, Any], quick: bool) -> tuple[dict, list[Path]]:
    """One experiment's section of a reproduction report (its paper figure, tables,
    sweeps and runs, figures written under ``d/<name>/figures``) and the figure files
    written; runs in a worker process when the report has several experiments."""
    from qoslab.reproduce import FIGURES, Saved, count_verdicts, discover, experiment_status

    discover()  # the paper modules register their figures
    status = experiment_status(e)
    n = count_verdicts(e.get("comparisons") or [])
    ectx: dict[str, Any] = {
        "name": e["name"],
        "title": e.get("title", ""),
        "paper": e.get("paper", ""),
        "status": status,
        "cls": {"within": "ok", "outside-explained": "expl", "tie": "expl"}.get(status, "failed"),
        "counts": ", ".join(f"{v} {k}" for k, v in n.items() if v),
        "error": e.get("error") if e.get("status") == "failed" else "",
        "figures": [],
        "figure_error": "",
        "comparisons": [_comparison_row(c) for c in e.get("comparisons") or []],
        "ablations": [_ablation_row(a) for a in e.get("ablations") or []],
        "readings": _reading_rows(e.get("readings") or []),
        "argued": [
            f"Headline reading {r['knob']} = {r['reading']}: {r['argued']}"
            for r in e.get("readings") or []
            if r.get("headline")
        ],
        "calibrations": _calibration_rows(e.get("calibrations") or []),
        "notes": e.get("notes", ""),
        "tables": [],
        "sweeps": [],
        "runs": [],
    }
    efigs = _Figures(d / e["name"] / "figures")
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
            ectx["tables"].append((t, _table(pl.read_parquet(f), source=str(f))))
        for i, s in enumerate(e.get("sweeps", [])):
            ectx["sweeps"].append(_sweep_context(Path(s), efigs.sub(f"sweep{i}")))
        for i, r in enumerate(e.get("runs", [])):
            ectx["runs"].append(_run_context(Path(r), efigs.sub(f"run{i}")))
    return ectx, efigs.written


def _experiment_contexts(d: Path, exps: list[dict], quick: bool) -> list[tuple[dict, list]]:
    """:func:`_experiment_context` of every experiment, in order: drawing the figures
    is most of a report's time (the main job's report has over 300), so several
    experiments are drawn in parallel, one worker process per core. Only when every
    paper figure among them is qoslab's own: a worker imports qoslab afresh, so a
    figure registered by the user's script (or a test) is drawn here, in this process."""
    import os

    from qoslab.reproduce import FIGURES, discover

    discover()
    own = all(
        FIGURES[e["name"]].__module__.startswith("qoslab.") for e in exps if e["name"] in FIGURES
    )
    workers = min(len(exps), os.cpu_count() or 1, 8)
    if workers < 2 or not own:
        return [_experiment_context(d, e, quick) for e in exps]
    from concurrent.futures import ProcessPoolExecutor

    from qoslab.sweep import _plain_main, worker_context

    with _plain_main(), ProcessPoolExecutor(workers, mp_context=worker_context()) as ex:
        futures = [ex.submit(_experiment_context, d, e, quick) for e in exps]
    return [f.result() for f in futures]


def _reproduce_context(d: Path, figs: _Figures) -> dict[str, Any]:
    from qoslab.reproduce import summarize

    idx = json.loads((d / "reproduce.json").read_text())
    exps = idx.get("experiments", [])
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
    return {
        "mode": mode,
        "n_run": len(exps),
        "n_registered": len(idx.get("registered", [])),
        "st": summ["experiments"],
        "cv": summ["comparisons"],
        "ab": summ["ablations"],
        "experiments": out,
    }


# --------------------------------------------------------------------------- page


def _env():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("qoslab", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )


def result_html(r: Any) -> str:
    """A :class:`~qoslab.Result` as HTML (name, seed, table sizes, the flows table), as
    notebooks show it."""
    return (
        _env()
        .get_template("result.html.j2")
        .render(
            name=r.summary.get("name", ""),
            seed=r.summary.get("seed"),
            path=str(r.path) if getattr(r, "path", None) else "",
            shapes=[(k, v.height) for k, v in r.tables.items()],
            flows=_table(r.tables.get("flows"), 20),
        )
    )


def write_report(src: str | Path, out: str | Path | None = None) -> Path:
    """Writes the HTML report for ``src`` (a run, sweep or reproduction directory) to
    ``out`` (default ``src/report.html``), and every figure as SVG and PNG under
    ``src/figures/`` (a reproduction: ``src/<experiment>/figures/``); returns the
    page's path. Raises :class:`~qoslab.ResultsError` if ``src`` is not a results
    directory."""
    import qoslab

    d = Path(src)
    figs = _Figures(d / "figures")
    ctx: dict[str, Any] = {"run": None, "sweep": None, "repro": None}
    if (d / "reproduce.json").is_file():
        kind = "reproduction"
        ctx["repro"] = _reproduce_context(d, figs)
    elif (d / "sweep.json").is_file():
        kind = "sweep"
        ctx["sweep"] = _sweep_context(d, figs)
    elif (d / "summary.json").is_file():
        kind = "run"
        ctx["run"] = _run_context(d, figs)
    else:
        raise ResultsError(
            f"{d}: not a qoslab results directory (expected summary.json, sweep.json or "
            "reproduce.json in it)"
        )
    page = (
        _env()
        .get_template("report.html.j2")
        .render(
            kind=kind,
            name=d.resolve().name,
            version=qoslab.__version__,
            stamp=_dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
            **ctx,
        )
    )
    out = Path(out) if out else d / "report.html"
    out.write_text(page, encoding="utf-8")
    return out
