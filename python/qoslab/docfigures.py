"""Figures in the documentation, copied from the reproduction run a page's data came from.

A page names the source of its figures in a marker on the line before them: the data
file its tables are generated from, and per figure ``DEST=EXPERIMENT/NAME`` (``DEST``
relative to the page; ``NAME`` a figure the reproduction's report drew, ``RESULTS/
EXPERIMENT/figures/NAME.png``)::

    <!-- qoslab:figure data=data/p4-full.json p4-figures/f6b.png=p4-f6/paper-figure-2 -->
    ![Fig. 6(b)](p4-figures/f6b.png)

``python -m qoslab.docgen figures RESULTS docs/papers`` copies every such figure from
``RESULTS``, but only where ``RESULTS`` holds the very tables the data file holds for
that experiment (and is of the same mode, quick or full): a figure then shows the
numbers the page's tables show. Otherwise nothing is copied and the error names the
page, the experiment and the first table that differs. ``docgen check`` reports a
marker whose figure is missing or which the page does not show.

This module does not import :mod:`qoslab.docgen` (docgen imports it); the reader of a
results folder's tables comes in as an argument.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MARKER", "Figure", "copy", "figures_in", "problems"]

#: A figure marker; its spec is ``data=FILE`` and one or more ``DEST=EXPERIMENT/NAME``.
MARKER = re.compile(r"<!-- qoslab:figure (?P<spec>.*?) -->")

#: Reads one experiment's tables from a results folder: ``(results, index entry)`` →
#: ``{table: {"columns": [...], "rows": [[...], ...]}}`` (``docgen.results_tables``).
TablesOf = Callable[[Path, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Figure:
    """One figure a page shows, and where it comes from."""

    #: The page that shows it, and the line of its marker (1-based).
    page: Path
    line: int
    #: The data file the page's tables come from (absolute).
    data: Path
    #: Where the figure goes (absolute), as the page's image link names it.
    dest: Path
    #: The experiment and the report figure's name (without ``.png``).
    experiment: str
    name: str

    def where(self) -> str:
        """``page:line`` of the marker, for messages."""
        return f"{self.page}:{self.line}"


def figures_in(page: str | Path) -> list[Figure]:
    """Every figure a page's markers name (a marker in a fenced code block is an example,
    not one); a malformed marker is a ValueError naming the page and line."""
    page = Path(page)
    out: list[Figure] = []
    fenced = False
    for i, text in enumerate(page.read_text().splitlines(), start=1):
        if text.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for m in MARKER.finditer(text):
            where = f"{page}:{i}: qoslab:figure"
            data, pairs = None, []
            for w in shlex.split(m.group("spec")):
                k, sep, v = w.partition("=")
                if not sep or not v:
                    raise ValueError(f"{where}: expected key=value, got {w!r}")
                if k == "data":
                    data = v
                    continue
                exp, slash, name = v.partition("/")
                if not slash or not exp or not name or "/" in name:
                    raise ValueError(f"{where}: {k}={v!r}: expected DEST=EXPERIMENT/NAME")
                pairs.append((k, exp, name))
            if data is None:
                raise ValueError(f"{where}: no data=… file")
            if not pairs:
                raise ValueError(f"{where}: names no figure (DEST=EXPERIMENT/NAME)")
            src = (page.parent / data).resolve()
            for dest, exp, name in pairs:
                out.append(Figure(page, i, src, (page.parent / dest).resolve(), exp, name))
    return out


def _index(results: Path) -> dict[str, Any]:
    f = results / "reproduce.json"
    if not f.is_file():
        raise ValueError(f"{results}: no reproduce.json (run `qoslab reproduce` first)")
    try:
        return json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{f}: not a reproduction index ({e})") from e


def _first_difference(ours: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """The first table that differs between two ``{table: {columns, rows}}``, told."""
    for t in sorted(set(ours) | set(theirs)):
        if t not in ours:
            return f"table {t!r} is in the data file only"
        if t not in theirs:
            return f"table {t!r} is in the results only"
        if ours[t]["columns"] != theirs[t]["columns"]:
            return f"table {t!r} has other columns"
        if ours[t]["rows"] != theirs[t]["rows"]:
            rows = zip(ours[t]["rows"], theirs[t]["rows"], strict=False)
            n = next((k for k, (a, b) in enumerate(rows) if a != b), None)
            if n is None:
                n_data, n_here = len(theirs[t]["rows"]), len(ours[t]["rows"])
                return f"table {t!r}: {n_data} rows in the data, {n_here} here"
            return f"table {t!r} differs from row {n} on"
    return None


def copy(results: str | Path, figures: list[Figure], tables_of: TablesOf) -> list[Path]:
    """Copies every figure from ``results`` after checking them all (see the module
    comment); returns the figures whose file changed. Nothing is written if any check
    fails (ValueError)."""
    results = Path(results)
    idx = _index(results)
    entries = {e.get("name"): e for e in idx.get("experiments", [])}
    datas: dict[Path, dict[str, Any]] = {}
    checked: set[tuple[Path, str]] = set()
    todo: list[tuple[Figure, bytes]] = []
    for fig in figures:
        if fig.data not in datas:
            if not fig.data.is_file():
                raise ValueError(f"{fig.where()}: data file {fig.data} does not exist")
            datas[fig.data] = json.loads(fig.data.read_text())
        data = datas[fig.data]
        if (fig.data, fig.experiment) not in checked:
            if bool(data.get("quick")) != bool(idx.get("quick")):
                mode = {True: "quick", False: "full"}
                raise ValueError(
                    f"{fig.where()}: {fig.data.name} holds {mode[bool(data.get('quick'))]}-mode "
                    f"data, {results} is a {mode[bool(idx.get('quick'))]}-mode reproduction"
                )
            want = data.get("experiments", {}).get(fig.experiment)
            if want is None:
                raise ValueError(
                    f"{fig.where()}: {fig.data.name} has no experiment {fig.experiment!r}"
                )
            if fig.experiment not in entries:
                raise ValueError(f"{fig.where()}: {results} did not run {fig.experiment!r}")
            ours = json.loads(json.dumps(tables_of(results, entries[fig.experiment])))
            diff = _first_difference(ours, want.get("tables", {}))
            if diff:
                raise ValueError(
                    f"{fig.where()}: {results}/{fig.experiment} is not the run {fig.data.name} "
                    f"was exported from ({diff}): its figures would not show the page's numbers"
                )
            checked.add((fig.data, fig.experiment))
        src = results / fig.experiment / "figures" / f"{fig.name}.png"
        if not src.is_file():
            raise ValueError(f"{fig.where()}: {src} does not exist")
        todo.append((fig, src.read_bytes()))
    changed = []
    for fig, png in todo:
        if fig.dest.is_file() and fig.dest.read_bytes() == png:
            continue
        fig.dest.parent.mkdir(parents=True, exist_ok=True)
        fig.dest.write_bytes(png)
        changed.append(fig.dest)
    return changed


def problems(page: str | Path) -> list[str]:
    """What is wrong with a page's figure markers: a figure that does not exist, or one
    the page does not show as an image (empty: nothing)."""
    page = Path(page)
    text = page.read_text()
    shown = {
        (page.parent / m.group(1)).resolve() for m in re.finditer(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
    }
    out = []
    for fig in figures_in(page):
        if not fig.dest.is_file():
            out.append(f"{fig.where()}: {fig.dest} does not exist")
        elif fig.dest not in shown:
            out.append(f"{fig.where()}: the page shows no image {fig.dest.name}")
    return out
