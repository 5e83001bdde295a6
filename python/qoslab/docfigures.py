"""Figures in the documentation, copied from the reproduction run a page's data came from.

A page names the source of its figures in a marker on the line before them: the data
file its tables are generated from, and per figure ``DEST=EXPERIMENT/NAME`` (``DEST``
relative to the page; ``NAME`` a figure the reproduction's report drew, ``RESULTS/
EXPERIMENT/figures/NAME.png``)::

    <!-- qoslab:figure data=data/p4-full.json p4-figures/f6b.png=p4-f6/paper-figure-2 -->
    ![Fig. 6(b)](p4-figures/f6b.png)

``python -m qoslab.docgen figures RESULTS docs/papers`` copies every such figure from
``RESULTS``, but only where ``RESULTS`` finished, holds the very tables the data file
holds for that experiment (and is of the same mode, quick or full) and drew the figure
after them: a figure then shows the numbers the page's tables show. A page may show the
figures of a quick and of a full run, each marker naming its own data file: a run
provides those of its mode (when none is of its mode, the error says so). Otherwise nothing
is copied and the error names the page, the experiment and what differs. ``docgen
check`` reports what :func:`problems` finds.

This module does not import :mod:`qoslab.docgen` (docgen imports it); the reader of a
results folder's tables comes in as an argument.
"""

from __future__ import annotations

import json
import os
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


#: An image link in Markdown: ``![alt](path "title")`` or ``![alt](<path>)``.
_IMAGE = re.compile(r"!\[[^\n]*?\]\(\s*<?([^)\s>]+)")


def _prose_lines(page: Path) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks (``` or ~~~), numbered from 1: a
    marker or an image in a code block is an example."""
    out, fence = [], ""
    for i, text in enumerate(page.read_text().splitlines(), start=1):
        t = text.lstrip()
        if fence:
            if t.startswith(fence):
                fence = ""
            continue
        if t.startswith(("```", "~~~")):
            fence = t[:3]
            continue
        out.append((i, text))
    return out


def figures_in(page: str | Path) -> list[Figure]:
    """Every figure a page's markers name; a malformed marker (one not on a line of its
    own form, a DEST outside the page's folder or not a ``.png``, the same DEST from two
    sources) is a ValueError naming the page and line."""
    page = Path(page)
    folder = page.parent.resolve()
    out: list[Figure] = []
    seen: dict[Path, Figure] = {}
    for i, text in _marker_lines(page):
        where = f"{page}:{i}: qoslab:figure"
        m = MARKER.fullmatch(text.strip())
        if m is None:
            raise ValueError(f"{where}: expected one `<!-- qoslab:figure … -->` on its line")
        try:
            words = shlex.split(m.group("spec"))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from e
        data, pairs = None, []
        for w in words:
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
            d = (page.parent / dest).resolve()
            if d.suffix != ".png" or not d.is_relative_to(folder):
                raise ValueError(f"{where}: {dest}: a figure is a .png in {folder} or below")
            fig = Figure(page, i, src, d, exp, name)
            old = seen.setdefault(d, fig)
            if (old.experiment, old.name) != (exp, name):
                raise ValueError(
                    f"{where}: {dest} is {exp}/{name} here but {old.experiment}/{old.name} "
                    f"at line {old.line}"
                )
            if old is fig:
                out.append(fig)
    return out


def _marker_lines(page: Path) -> list[tuple[int, str]]:
    """The lines of a page (outside code blocks) that hold a figure marker, or look as if
    they meant to: a comment that mentions ``qoslab:figure``."""
    return [
        (i, t)
        for i, t in _prose_lines(page)
        if t.lstrip().startswith("<!--") and "qoslab:figure" in t
    ]


def _json(f: Path, what: str, experiments: type) -> dict[str, Any]:
    """A JSON object read from ``f`` whose ``experiments`` is of the type given; anything
    else is a ValueError naming the file."""
    try:
        v = json.loads(f.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{f}: not a {what} ({e})") from e
    if not isinstance(v, dict) or not isinstance(v.get("experiments"), experiments):
        raise ValueError(f"{f}: not a {what} (no experiments)")
    return v


def _index(results: Path) -> dict[str, Any]:
    f = results / "reproduce.json"
    if not f.is_file():
        raise ValueError(f"{results}: no reproduce.json (run `qoslab reproduce` first)")
    idx = _json(f, "reproduction index", list)
    if not idx.get("finished"):
        # The report, which draws the figures, is written after the last experiment: an
        # unfinished run may hold new tables beside an earlier run's figures.
        raise ValueError(f"{f}: the reproduction did not finish (its figures may be older)")
    return idx


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


def _verify(
    fig: Figure,
    data: dict[str, Any],
    idx: dict[str, Any],
    results: Path,
    tables_of: TablesOf,
) -> dict[str, Any]:
    """Checks that ``results`` is the run the data file's entry for ``fig``'s experiment
    was exported from (mode and every table); returns that entry."""
    mode = {True: "quick", False: "full"}
    if bool(data.get("quick")) != bool(idx.get("quick")):
        raise ValueError(
            f"{fig.where()}: {fig.data.name} holds {mode[bool(data.get('quick'))]}-mode "
            f"data, {results} is a {mode[bool(idx.get('quick'))]}-mode reproduction"
        )
    want = data["experiments"].get(fig.experiment)
    if want is None:
        raise ValueError(f"{fig.where()}: {fig.data.name} has no experiment {fig.experiment!r}")
    entry = next((e for e in idx["experiments"] if e.get("name") == fig.experiment), None)
    if entry is None:
        raise ValueError(f"{fig.where()}: {results} did not run {fig.experiment!r}")
    if not want.get("tables"):
        raise ValueError(
            f"{fig.where()}: {fig.data.name} holds no table of {fig.experiment!r} "
            "to check its figures against"
        )
    diff = _first_difference(json.loads(json.dumps(tables_of(results, entry))), want["tables"])
    if diff:
        raise ValueError(
            f"{fig.where()}: {results}/{fig.experiment} is not the run {fig.data.name} "
            f"was exported from ({diff}): its figures would not show the page's numbers"
        )
    return want


def copy(results: str | Path, figures: list[Figure], tables_of: TablesOf) -> list[Path]:
    """Copies every figure from ``results`` after checking them all (see the module
    comment); returns the figures whose file changed. Nothing is written if any check
    fails (ValueError)."""
    results = Path(results)
    idx = _index(results)
    datas: dict[Path, dict[str, Any]] = {}
    for fig in figures:
        if fig.data not in datas:
            if not fig.data.is_file():
                raise ValueError(f"{fig.where()}: data file {fig.data} does not exist")
            datas[fig.data] = _json(fig.data, "docgen data file", dict)
    # The other mode's figures come from a run of that mode; with none of this run's
    # mode, every figure is checked and the first names the mismatch.
    same = [f for f in figures if bool(datas[f.data].get("quick")) == bool(idx.get("quick"))]
    figures = same or figures
    verified: dict[tuple[Path, str], dict[str, Any]] = {}
    todo: list[tuple[Figure, bytes]] = []
    for fig in figures:
        key = (fig.data, fig.experiment)
        if key not in verified:
            verified[key] = _verify(fig, datas[fig.data], idx, results, tables_of)
        src = results / fig.experiment / "figures" / f"{fig.name}.png"
        if not src.is_file():
            raise ValueError(f"{fig.where()}: {src} does not exist")
        tables = [results / fig.experiment / f"table-{t}.parquet" for t in verified[key]["tables"]]
        if any(t.stat().st_mtime > src.stat().st_mtime for t in tables if t.is_file()):
            raise ValueError(f"{fig.where()}: {src} is older than its experiment's tables")
        if fig.dest.exists() and not fig.dest.is_file():
            raise ValueError(f"{fig.where()}: {fig.dest} is not a file")
        todo.append((fig, src.read_bytes()))
    todo = [(f, png) for f, png in todo if not (f.dest.is_file() and f.dest.read_bytes() == png)]
    # Every new figure is written beside its place first and moved in only when all are.
    staged: list[tuple[Path, Path]] = []
    try:
        for fig, png in todo:
            fig.dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = fig.dest.with_name(f".{fig.dest.name}.docgen-tmp")
            tmp.write_bytes(png)
            staged.append((tmp, fig.dest))
    except OSError as e:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise ValueError(f"cannot write the figures: {e}") from e
    for tmp, dest in staged:
        os.replace(tmp, dest)
    return [dest for _, dest in staged]


def problems(page: str | Path) -> list[str]:
    """What is wrong with a page's figure markers: a figure or data file that does not
    exist, a figure the page does not show as an image, or (on a page with markers) an
    image no marker names (empty: nothing)."""
    page = Path(page)
    shown = {
        (page.parent / m.group(1)).resolve(): i
        for i, text in _prose_lines(page)
        for m in _IMAGE.finditer(text)
    }
    figs = figures_in(page)
    out = []
    for fig in figs:
        if not fig.data.is_file():
            out.append(f"{fig.where()}: data file {fig.data} does not exist")
        if not fig.dest.is_file():
            out.append(f"{fig.where()}: {fig.dest} does not exist")
        elif fig.dest not in shown:
            out.append(f"{fig.where()}: the page shows no image {fig.dest.name}")
    if figs:
        named = {f.dest for f in figs}
        for img, i in sorted(shown.items(), key=lambda kv: kv[1]):
            if img not in named and img.suffix == ".png":
                out.append(f"{page}:{i}: image {img.name} is named by no qoslab:figure marker")
    return out
