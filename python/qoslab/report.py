"""``qoslab report DIR``: one self-contained HTML page (figures embedded as base64 PNG)
for a run directory, a sweep directory or a reproduction directory.

Everything is read from the files under ``DIR``; nothing needs the engine.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
from pathlib import Path
from typing import Any

import polars as pl

from qoslab import plot
from qoslab.exceptions import ResultsError
from qoslab.store import load

__all__ = ["write_report"]

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #446}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#eef}
td.l,th.l{text-align:left}img{max-width:100%;display:block;margin:.5em 0}
pre{background:#f6f6f6;padding:.5em;overflow:auto;font-size:.8em}
.failed{color:#a00}.ok{color:#070}.expl{color:#a60}.muted{color:#777}
tr.v-outside td{background:#fdd}tr.v-outside-explained td{background:#ffe9c6}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return _esc(v)


def _table(df: pl.DataFrame, max_rows: int = 50) -> str:
    if df.is_empty():
        return "<p class=muted>(empty)</p>"
    head = "".join(f"<th>{_esc(c)}</th>" for c in df.columns)
    rows = []
    for r in df.head(max_rows).iter_rows():
        rows.append("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in r) + "</tr>")
    more = f"<p class=muted>{df.height - max_rows} more rows</p>" if df.height > max_rows else ""
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>{more}"


def _kv(d: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><th class=l>{_esc(k)}</th><td class=l>{_fmt(v)}</td></tr>"
        for k, v in d.items()
        if not isinstance(v, (dict, list))
    )
    return f"<table>{rows}</table>"


def _img(fig, alt: str) -> str:
    if fig is None:
        return ""
    b64 = base64.b64encode(plot.png_bytes(fig)).decode()
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{b64}">'


def _run_section(d: Path, level: int = 2) -> str:
    r = load(d)
    h = f"h{level}"
    title = r.summary.get("name") or d.name
    parts = [
        f"<{h}>Run {_esc(title)} (seed {_esc(r.summary.get('seed'))})</{h}>",
        f"<p class=muted>{_esc(d)}</p>",
        _kv(r.summary),
    ]
    parts.append(
        _img(plot.cum_throughput(r.series, f"{title}: cumulative throughput"), "throughput")
    )
    parts.append(_img(plot.drops_by_place(r.drops, f"{title}: drops"), "drops"))
    parts.append(_img(plot.cwnd_traces(r.traces, f"{title}: cwnd"), "cwnd"))
    for name in ("flows", "drops", "queues"):
        if name in r.tables:
            parts.append(f"<h{level + 1}>{name}</h{level + 1}>{_table(r.tables[name])}")
    if r.scenario is not None:
        parts.append(
            f"<details><summary>scenario</summary><pre>"
            f"{_esc(json.dumps(r.scenario, indent=2))}</pre></details>"
        )
    return "\n".join(parts)


def _sweep_section(d: Path, level: int = 2) -> str:
    from qoslab.sweep import _load_tasks, build_catalog

    h = f"h{level}"
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
    n_done = runs.filter(pl.col("status") == "done").height
    n_failed = runs.filter(pl.col("status") == "failed").height
    parts = [
        f"<{h}>Sweep {_esc(spec.get('name'))}</{h}>",
        f"<p class=muted>{_esc(d)}</p>",
        f"<p>{len(tasks)} runs: <span class=ok>{n_done} done</span>, "
        f"<span class=failed>{n_failed} failed</span>; grid "
        f"<code>{_esc(json.dumps(spec['spec']['grid']))}</code>, "
        f"seeds {_esc(spec['spec']['seeds'])}</p>",
    ]
    if (d / "summary.parquet").is_file():
        summary = pl.read_parquet(d / "summary.parquet")
        for param in spec["spec"]["grid"]:
            parts.append(_img(plot.goodput_vs_param(summary, param), f"goodput vs {param}"))
        parts.append(f"<h{level + 1}>Summary (mean and 95 % CI across seeds)</h{level + 1}>")
        parts.append(_table(summary))
    failed = runs.filter(pl.col("status") == "failed")
    if failed.height:
        parts.append(f"<h{level + 1} class=failed>Failed runs</h{level + 1}>{_table(failed)}")
    first = next(
        (d / "runs" / t.key for t in tasks if (d / "runs" / t.key / "summary.json").is_file()), None
    )
    if first is not None:
        parts.append(f"<h{level + 1}>First finished run</h{level + 1}>")
        parts.append(_run_section(first, level + 2))
    return "\n".join(parts)


def _comparisons_table(comps: list[dict[str, Any]]) -> str:
    head = "".join(
        f"<th{' class=l' if c in ('quantity', 'reference', 'verdict', 'why') else ''}>{c}</th>"
        for c in ("quantity", "ours", "unit", "reference", "deviation %", "verdict", "why")
    )
    rows = []
    for c in comps:
        dev = c.get("deviation")
        if dev is None and c.get("paper") not in (None, 0) and "deviation" not in c:
            dev = (c["ours"] - c["paper"]) / abs(c["paper"])
        verdict = c.get("verdict", "info")
        ex = c.get("explanation") or {}
        why = ""
        if verdict == "outside-explained" and ex:
            why = _esc(ex.get("why", "")) + f' (<a href="{_esc(ex.get("doc", ""))}">'
            why += f"{_esc(ex.get('doc', ''))}</a>"
            why += f"; <code>{_esc(ex['script'])}</code>)" if ex.get("script") else ")"
        elif c.get("note"):
            why = f"<span class=muted>{_esc(c['note'])}</span>"
        ref = c.get("reference") or ("" if c.get("paper") is None else _fmt(c["paper"]))
        rows.append(
            f"<tr class=v-{_esc(verdict)}><td class=l>{_esc(c['quantity'])}</td>"
            f"<td>{_fmt(c['ours'])}</td><td>{_esc(c.get('unit', ''))}</td>"
            f"<td class=l>{_esc(ref or '—')}</td>"
            f"<td>{'—' if dev is None else f'{100 * dev:+.2f}'}</td>"
            f"<td class=l>{_esc(verdict)}</td><td class=l>{why}</td></tr>"
        )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _reproduce_section(d: Path) -> str:
    from qoslab.reproduce import count_verdicts, experiment_status, summarize

    idx = json.loads((d / "reproduce.json").read_text())
    exps = idx.get("experiments", [])
    n_reg = len(idx.get("registered", []))
    mode = "quick" if idx.get("quick") else "full"
    summ = summarize(idx)
    st, cv = summ["experiments"], summ["comparisons"]
    parts = [
        f"<p>Mode: {mode}; {len(exps)} experiment(s) run of {n_reg} registered.</p>",
        "<table class=verdicts><tr><th class=l></th><th>within</th><th>outside, explained</th>"
        "<th>outside</th><th>failed</th><th>no reference</th></tr>"
        f"<tr><th class=l>experiments</th><td>{st['within']}</td>"
        f"<td>{st['outside-explained']}</td><td>{st['outside']}</td><td>{st['failed']}</td>"
        "<td>—</td></tr>"
        f"<tr><th class=l>comparisons</th><td>{cv['within']}</td>"
        f"<td>{cv['outside-explained']}</td><td>{cv['outside']}</td><td>—</td>"
        f"<td>{cv['info']}</td></tr></table>",
    ]
    if not idx.get("registered"):
        parts.append(
            "<p><b>No experiments are registered yet.</b> Paper reproductions are added as "
            "modules <code>python/qoslab/reproduce/p0.py … p4.py</code> that call "
            "<code>qoslab.reproduce.register</code>.</p>"
        )
    for e in exps:
        status = experiment_status(e)
        cls = {"within": "ok", "outside-explained": "expl"}.get(status, "failed")
        n = count_verdicts(e.get("comparisons") or [])
        counts = ", ".join(f"{v} {k}" for k, v in n.items() if v)
        parts.append(
            f"<h2>{_esc(e['name'])}: {_esc(e.get('title', ''))} "
            f"<span class={cls}>[{_esc(status)}{': ' if counts else ''}{_esc(counts)}]</span></h2>"
        )
        if e.get("paper"):
            parts.append(f"<p class=muted>{_esc(e['paper'])}</p>")
        if e.get("status") == "failed":
            parts.append(f"<pre class=failed>{_esc(e.get('error'))}</pre>")
            continue
        comps = e.get("comparisons") or []
        if comps:
            parts.append("<h3>Ours beside the paper's</h3>" + _comparisons_table(comps))
        if e.get("notes"):
            parts.append(f"<p>{_esc(e['notes'])}</p>")
        for t in e.get("tables", []):
            parts.append(f"<h3>{_esc(t)}</h3>")
            parts.append(_table(pl.read_parquet(d / e["name"] / f"table-{t}.parquet")))
        for s in e.get("sweeps", []):
            parts.append(_sweep_section(Path(s), 3))
        for r in e.get("runs", []):
            parts.append(_run_section(Path(r), 3))
    return "\n".join(parts)


def write_report(src: str | Path, out: str | Path | None = None) -> Path:
    """Writes the HTML report for ``src`` (a run, sweep or reproduction directory) to
    ``out`` (default ``src/report.html``) and returns its path."""
    d = Path(src)
    if (d / "reproduce.json").is_file():
        kind, body = "Reproduction", _reproduce_section(d)
    elif (d / "sweep.json").is_file():
        kind, body = "Sweep", _sweep_section(d)
    elif (d / "summary.json").is_file():
        kind, body = "Run", _run_section(d)
    else:
        raise ResultsError(
            f"{d}: not a qoslab results directory (expected summary.json, sweep.json or "
            "reproduce.json in it)"
        )
    import qoslab

    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    page = (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>qoslab report: {_esc(d.name)}</title><style>{_CSS}</style></head><body>"
        f"<h1>qoslab {kind.lower()} report: {_esc(d.name)}</h1>"
        f"<p class=muted>qoslab {_esc(qoslab.__version__)}, {stamp}</p>{body}</body></html>"
    )
    out = Path(out) if out else d / "report.html"
    out.write_text(page, encoding="utf-8")
    return out
