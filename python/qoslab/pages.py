"""HTML building blocks shared by the report (:mod:`qoslab.report`) and the notebook view
of a result (:meth:`qoslab.Result._repr_html_`): the Jinja2 environment over
``templates/``, tables formatted with units, and a Markdown passage rendered for a page.

This module sits below :mod:`qoslab.store` and :mod:`qoslab.sweep` (it imports neither),
so the store can show a result as HTML without importing the report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from qoslab.tables import column_unit, fmt_cell

__all__ = ["doc_passage", "env", "result_html", "table"]


def env():
    """The autoescaping Jinja2 environment over ``qoslab/templates``."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("qoslab", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )


def table(
    df: Any, max_rows: int = 50, source: str = "", href: str = "", pm: bool = False
) -> dict[str, Any]:
    """A polars DataFrame as a table for the templates: header (name, unit, text?) and
    at most ``max_rows`` formatted rows; ``more`` rows left out, all of them in
    ``source`` (a file's name, linked by ``href`` when the page can reach it). With
    ``pm``, a summary's ``X_mean`` and ``X_ci95`` are shown as one column ``X`` of
    "mean ± CI" (its ``X_std`` left out; every column is in the file)."""
    if df is None or df.is_empty():
        return {"header": [], "rows": [], "more": 0, "source": source, "href": href}
    pairs = _pm_pairs(df.columns) if pm else {}
    hidden = {c for m, ci in pairs.items() for c in (ci, m.removesuffix("_mean") + "_std")}
    cols = [c for c in df.columns if c not in hidden]
    header = [
        {
            "name": c.removesuffix("_mean") if c in pairs else c,
            "unit": column_unit(c) if df[c].dtype.is_numeric() else "",
            "text": not df[c].dtype.is_numeric(),
        }
        for c in cols
    ]
    rows = []
    for r in df.head(max_rows).iter_rows(named=True):
        cells = [
            f"{fmt_cell(r[c])} ± {fmt_cell(r[pairs[c]], 2)}" if c in pairs else fmt_cell(r[c])
            for c in cols
        ]
        rows.append({"cells": cells, "cls": ""})
    return {
        "header": header,
        "rows": rows,
        "more": max(0, df.height - max_rows),
        "source": source,
        "href": href,
    }


def _pm_pairs(columns: list[str]) -> dict[str, str]:
    """``{X_mean: X_ci95}`` for every mean that has its interval among ``columns``."""
    have = set(columns)
    return {
        c: c.removesuffix("_mean") + "_ci95"
        for c in columns
        if c.endswith("_mean") and c.removesuffix("_mean") + "_ci95" in have
    }


def result_html(r: Any) -> str:
    """A :class:`~qoslab.Result` as HTML (name, seed, table sizes, the flows table), as
    notebooks show it."""
    return (
        env()
        .get_template("result.html.j2")
        .render(
            name=r.summary.get("name", ""),
            seed=r.summary.get("seed"),
            path=str(r.path) if getattr(r, "path", None) else "",
            shapes=[(k, v.height) for k, v in r.tables.items()],
            flows=table(r.tables.get("flows"), 20),
        )
    )


_ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def doc_passage(doc: str, root: Path | None = None, limit: int = 6000) -> str | None:
    """The passage of a Markdown document that an explanation points at
    (``docs/papers/p1.md#t1-queueing``: the text after ``<a id="t1-queueing"></a>`` up
    to the next anchor or heading, at most ``limit`` characters) as HTML, for a page
    that must not link into the checkout. Links to other files become their text (they
    would not resolve from a copied report); web links stay. ``None`` when the file or
    the anchor is not found (e.g. qoslab installed from a wheel, without ``docs/``)."""
    path, _, anchor = doc.partition("#")
    root = root or Path(__file__).resolve().parents[2]  # the repository, in a clone
    f = root / path
    if not path.endswith(".md") or not f.is_file():
        return None
    lines = f.read_text(encoding="utf-8").splitlines()
    start = 0
    if anchor:
        found = [i for i, s in enumerate(lines) if f'<a id="{anchor}"></a>' in s]
        if not found:
            return None
        start = found[0] + 1
    out: list[str] = []
    for s in lines[start:]:
        if _ANCHOR.search(s) or (s.startswith("#") and out):
            break
        out.append(s)
    text = "\n".join(out).strip()
    if len(text) > limit:
        cut = text.rfind("\n\n", 0, limit)
        text = text[: cut if cut > 0 else limit].rstrip() + "\n\n…"
    return _markdown(text)


def _markdown(text: str) -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    html = md.render(text)

    # Relative links (into the checkout) become their text; web links stay.
    def unlink(m: re.Match) -> str:
        href, body = m.group(1), m.group(2)
        return m.group(0) if href.startswith(("http://", "https://")) else body

    html = re.sub(r'<a href="([^"]*)">(.*?)</a>', unlink, html, flags=re.S)

    # Relative images (the docs' figures, beside the page in the checkout) would not
    # load from a copied report: their alt text and file name stand in for them.
    def unimage(m: re.Match) -> str:
        tag = m.group(0)
        src = re.search(r'src="([^"]*)"', tag)
        if src is None or src.group(1).startswith(("http://", "https://", "data:")):
            return tag
        alt = re.search(r'alt="([^"]*)"', tag)
        name = src.group(1).rsplit("/", 1)[-1]
        return f"<em>[figure: {alt.group(1) if alt and alt.group(1) else name} ({name})]</em>"

    return re.sub(r"<img\b[^>]*>", unimage, html)
