"""Result tables in the documentation, generated from reproduction outputs.

A reproduction's outputs are committed as data (``export``): its comparisons with their
verdicts and every table an experiment returned, as one JSON file, e.g.
``docs/papers/data/p1-quick.json``. A Markdown page holds generated blocks between
markers; the text between them is rewritten from the data (``update``), and ``check``
fails when the committed page and the data disagree (a test runs it)::

    <!-- qoslab:table comparisons data=data/p1-quick.json experiment=p1-f6b -->
    …generated, never edited by hand…
    <!-- qoslab:end -->

The first word after ``qoslab:table`` names a renderer; ``key=value`` pairs (values
without spaces, or in double quotes) are its arguments; ``data`` is a path relative to
the page. Built-in renderers: ``comparisons`` (``experiment``, optional ``match``: a
substring of the quantity), ``table`` (``experiment``, ``table``, optional
``columns`` = comma-separated, ``digits``), and ``ablations``, ``readings`` (optional
``knob``) and ``calibrations`` (each ``experiment=NAME`` or ``prefix=p2-`` for all of a
paper's experiments). A paper module adds its own with
:func:`renderer` (looked up after :func:`qoslab.reproduce.discover`)::

    @docgen.renderer("p1-t1-ranges")
    def t1_ranges(data: dict, **args: str) -> str: ...   # returns Markdown

Command line::

    python -m qoslab.docgen export results/reproduce docs/papers/data/p1-quick.json
    python -m qoslab.docgen update docs/papers/p1.md     # rewrite the blocks
    python -m qoslab.docgen check docs                   # exit 1 if any page is stale
    python -m qoslab.docgen diff OLD.json NEW.json --pages docs/papers  # before replacing
                                 # OLD: changed verdicts, moved numbers, prose quoting them
    python -m qoslab.docgen figures results/reproduce docs/papers   # the pages' figures,
                                 # from the run their data came from (qoslab.docfigures)
"""

from __future__ import annotations

import json
import math
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "RENDERERS",
    "check",
    "export",
    "figure_problems",
    "figures",
    "generate",
    "main",
    "md_table",
    "natural_key",
    "renderer",
    "results_tables",
    "update",
]

Renderer = Callable[..., str]
RENDERERS: dict[str, Renderer] = {}

_BLOCK = re.compile(
    r"(?P<open><!-- qoslab:table (?P<spec>.*?) -->\n)(?P<body>.*?)(?P<close><!-- qoslab:end -->)",
    re.S,
)


def renderer(name: str) -> Callable[[Renderer], Renderer]:
    """Decorator registering ``fn(data: dict, **args: str) -> str`` (Markdown) as the
    renderer ``name`` of ``<!-- qoslab:table name … -->`` blocks."""

    def deco(fn: Renderer) -> Renderer:
        RENDERERS[name] = fn
        return fn

    return deco


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _clean(v: Any) -> Any:
    """``v`` with every non-finite float, at any depth, replaced by None."""
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return _jsonable(v)


def export(
    results: str | Path, out: str | Path, names: list[str] | None = None, merge: bool = False
) -> Path:
    """Writes the outputs of the reproduction in ``results`` (its ``reproduce.json`` and
    ``table-*.parquet`` files) to the JSON file ``out``: per experiment its status,
    verdicts, comparisons and tables (columns and rows). ``names`` limits the
    experiments; with ``merge`` the experiments already in ``out`` that this run did not
    produce are kept (both must be of the same mode, quick or full); returns ``out``."""
    from qoslab.exceptions import ResultsError

    src = Path(results)
    index_file = src / "reproduce.json"
    if not index_file.is_file():
        raise ResultsError(f"{src}: no reproduce.json (run `qoslab reproduce` first)")
    idx = json.loads(index_file.read_text())
    exps: dict[str, Any] = {}
    for e in idx.get("experiments", []):
        if names and e["name"] not in names:
            continue
        tables = results_tables(src, e)
        exps[e["name"]] = {
            "title": e.get("title", ""),
            "paper": e.get("paper", ""),
            "status": e.get("status"),
            "verdict": e.get("verdict"),
            "verdicts": e.get("verdicts"),
            "comparisons": [
                {k: _jsonable(v) for k, v in c.items()} for c in e.get("comparisons", [])
            ],
            "ablations": _clean(e.get("ablations", [])),
            "readings": _clean(e.get("readings", [])),
            "calibrations": _clean(e.get("calibrations", [])),
            "tables": tables,
        }
        if e.get("wall_s") is not None:
            exps[e["name"]]["wall_s"] = round(float(e["wall_s"]), 1)
    data = {"quick": bool(idx.get("quick")), "experiments": exps}
    out = Path(out)
    if merge and out.is_file():
        old = json.loads(out.read_text())
        if bool(old.get("quick")) != data["quick"]:
            raise ResultsError(
                f"{out}: holds {'quick' if old.get('quick') else 'full'}-mode data; "
                f"{src} is {'quick' if data['quick'] else 'full'} mode: not merged"
            )
        data["experiments"] = {**old.get("experiments", {}), **exps}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return out


def results_tables(results: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """The tables one experiment of a reproduction saved (its ``reproduce.json`` entry),
    as :func:`export` writes them: ``{table: {"columns": [...], "rows": [[...]]}}``."""
    import polars as pl

    tables = {}
    for t in entry.get("tables", []):
        df = pl.read_parquet(results / entry["name"] / f"table-{t}.parquet")
        tables[t] = {
            "columns": df.columns,
            "rows": [[_jsonable(v) for v in r] for r in df.iter_rows()],
        }
    return tables


def fmt(v: Any, digits: int = 4) -> str:
    """One cell: floats with ``digits`` significant digits, None as an em dash."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "—"
        return f"{v:.{digits}g}"
    return str(v).replace("|", "\\|")


def md_table(header: list[str], rows: list[list[Any]], digits: int = 4) -> str:
    """A Markdown table (cells through :func:`fmt`)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(v, digits) for v in r) + " |")
    return "\n".join(lines) + "\n"


def _experiment(data: dict[str, Any], name: str) -> dict[str, Any]:
    try:
        return data["experiments"][name]
    except KeyError:
        raise KeyError(f"experiment {name!r} is not in the data") from None


def table_rows(data: dict[str, Any], experiment: str, table: str) -> list[dict[str, Any]]:
    """The rows of a table ``experiment`` returned in exported ``data``, as dicts."""
    t = _experiment(data, experiment)["tables"][table]
    return [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]]


@renderer("comparisons")
def _comparisons(
    data: dict[str, Any], experiment: str, match: str = "", notes: str = "", **_: str
) -> str:
    """Ours, the reference and the verdict of each comparison of ``experiment`` (with
    ``notes=yes`` also each comparison's note: what the run behind it was, e.g. its
    timing verdict)."""
    with_notes = _notes_on(notes)
    rows = []
    for c in _experiment(data, experiment)["comparisons"]:
        if match and match not in c["quantity"]:
            continue
        ref = c.get("reference") or "—"
        verdict = _verdict_text(c)
        cf = (c.get("explanation") or {}).get("counterfactual")
        if cf and verdict in ("outside-explained", "outside"):
            from qoslab.reproduce import counterfactual_outcome

            landed = counterfactual_outcome(c.get("explanation"))
            landed = {"lands in the band": "lands", "misses the band": "misses"}.get(landed, landed)
            verdict += f" (counterfactual: {cf['change']} → {fmt(cf.get('value'))}, {landed})"
        rows.append([c["quantity"], _value_unit(c), ref, verdict,
                     *([c.get("note") or "—"] if with_notes else [])])  # fmt: skip
    head = ["quantity", "ours", "compared with", "verdict"]
    return md_table([*head, "note"] if with_notes else head, rows)


def _verdict_text(c: dict[str, Any]) -> str:
    """A stored item's verdict as a page shows it: ``not-judged`` is written out with what
    the claim needs ("not judged in quick mode (needs seeds 1–10)")."""
    from qoslab.reproduce import NOT_JUDGED, not_judged_text

    v = c.get("verdict", "info")
    return not_judged_text(c.get("needs") or "?") if v == NOT_JUDGED else v


def _notes_on(notes: str) -> bool:
    """A block's ``notes=`` option: ``yes`` shows each row's note."""
    if notes not in ("", "yes", "no"):
        raise ValueError(f"notes={notes!r}: expected yes or no")
    return notes == "yes"


def _selected(data: dict[str, Any], experiment: str = "", prefix: str = "") -> list[str]:
    """The experiments a block names: one (``experiment``) or all whose name starts with
    ``prefix``, in natural order (p0-f3 before p0-f10)."""
    if experiment:
        _experiment(data, experiment)
        return [experiment]
    if not prefix:
        raise ValueError("give experiment=NAME or prefix=PREFIX")
    names = [n for n in data["experiments"] if n.startswith(prefix)]
    return sorted(names, key=natural_key)


def natural_key(name: str) -> list[Any]:
    """Sort key that orders numbers inside names by value (p0-f3 before p0-f10)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _value_unit(c: dict[str, Any]) -> str:
    unit = f" {c['unit']}" if c.get("unit") and c["unit"] != "×" else ""
    return f"{fmt(c.get('ours'))}{unit}"


@renderer("ablations")
def _ablations(
    data: dict[str, Any], experiment: str = "", prefix: str = "", notes: str = "", **_: str
) -> str:
    """Each ablation twin: claim, mechanism, twin, effect with and without, verdict (and
    with ``notes=yes`` its note)."""
    from qoslab.reproduce import stored_fall_ci

    with_notes = _notes_on(notes)
    rows = []
    for name in _selected(data, experiment, prefix):
        for a in _experiment(data, name).get("ablations", []):
            unit = f" {a['unit']}" if a.get("unit") else ""
            ci = stored_fall_ci(a)
            fall = fmt(a.get("fall"), 3)
            if ci:
                fall += f" (95 % interval {fmt(ci[0], 3)} … {fmt(ci[1], 3)}, {a.get('n')} seeds)"
            rows.append([
                name, a["claim"], a["mechanism"], a["twin"],
                f"{fmt(a['effect_with'])}{unit}", f"{fmt(a['effect_without'])}{unit}",
                f"{fall} (≥ {fmt(a['falls_by'], 3)})", _verdict_text(a),
                *([a.get("note") or "—"] if with_notes else []),
            ])  # fmt: skip
    if not rows:
        return "(no ablations in the data)\n"
    return md_table(
        ["experiment", "claim", "mechanism", "twin (mechanism off)", "effect with",
         "effect without", "fall of the effect", "verdict",
         *(["note"] if with_notes else [])],
        rows,
    )  # fmt: skip


@renderer("readings")
def _readings(
    data: dict[str, Any], experiment: str = "", prefix: str = "", knob: str = "", **_: str
) -> str:
    """Claim × reading of an open choice → value and verdict, the headline marked."""
    rows = []
    for name in _selected(data, experiment, prefix):
        for r in _experiment(data, name).get("readings", []):
            if knob and r["knob"] != knob:
                continue
            label = f"{r['knob']} = {r['reading']}" + (" (headline)" if r["headline"] else "")
            for c in r["comparisons"]:
                rows.append([name, c["quantity"], label, _value_unit(c),
                             c.get("reference") or "—", _verdict_text(c)])  # fmt: skip
    if not rows:
        return "(no readings in the data)\n"
    return md_table(["experiment", "claim", "reading", "ours", "compared with", "verdict"], rows)


@renderer("calibrations")
def _calibrations(data: dict[str, Any], experiment: str = "", prefix: str = "", **_: str) -> str:
    """A calibrated parameter's values × the claims it touches → value and verdict."""
    rows = []
    for name in _selected(data, experiment, prefix):
        for cal in _experiment(data, name).get("calibrations", []):
            for v, cs in zip(cal["values"], cal["comparisons"], strict=True):
                chosen = " (chosen)" if v == cal["chosen"] else ""
                for c in cs:
                    rows.append([name, f"{cal['parameter']} = {v}{chosen}", c["quantity"],
                                 _value_unit(c), _verdict_text(c)])  # fmt: skip
    if not rows:
        return "(no calibrations in the data)\n"
    return md_table(["experiment", "parameter", "claim", "ours", "verdict"], rows)


@renderer("table")
def _table(
    data: dict[str, Any],
    experiment: str,
    table: str,
    columns: str = "",
    digits: str = "4",
    **_: str,
) -> str:
    """A table ``experiment`` returned, optionally only some ``columns``."""
    t = _experiment(data, experiment)["tables"][table]
    cols = columns.split(",") if columns else t["columns"]
    idx = [t["columns"].index(c) for c in cols]
    return md_table(cols, [[r[i] for i in idx] for r in t["rows"]], int(digits))


@renderer("invariants")
def _invariants(data: dict[str, Any], names: str, **_: str) -> str:
    """The long draw's counts (``validation/invariants.py``) of the invariants ``names``
    (comma-separated): what each promises, its tolerance and how its draws ended."""
    want = names.split(",")
    rows = {r["invariant"]: r for r in data["rows"]}
    missing = [n for n in want if n not in rows]
    if missing:
        raise ValueError(f"no invariant {', '.join(missing)} in the data")
    cols = ["invariant", "promise", "tolerance", "draws", "kept", "warned", "refused",
            "violated"]  # fmt: skip
    return md_table(cols, [[rows[n][c] for c in cols] for n in want])


@renderer("summary")
def _summary(data: dict[str, Any], files: str = "", name: str = "(this file)", **_: str) -> str:
    """Counts per paper, as ``qoslab reproduce`` prints them (:func:`qoslab.reproduce.
    summarize`), of this data file (``name``) and the ``files`` beside it (comma-separated names
    in the same folder as ``docs/papers/data``): experiments by status, comparisons
    and ablations by verdict, judged by today's rules."""
    from qoslab.reproduce import STATUSES, VERDICTS, summarize

    here = Path(__file__).resolve().parents[2] / "docs" / "papers" / "data"
    sets = [(name, data)] + [
        (f, _today(json.loads((here / f).read_text()))) for f in files.split(",") if f
    ]
    rows, total = [], {"experiments": {}, "comparisons": {}, "ablations": {}}
    for name, d in sets:
        exps = d["experiments"]
        entries = [{"name": k, **v} for k, v in exps.items()] if isinstance(exps, dict) else exps
        s = summarize({"experiments": entries})
        rows.append([name.removesuffix(".json")] + [s["experiments"][k] for k in STATUSES]
                    + [s["comparisons"][k] for k in VERDICTS]
                    + [s["ablations"][k] for k in VERDICTS])  # fmt: skip
        for part in total:
            for k, n in s[part].items():
                total[part][k] = total[part].get(k, 0) + n
    rows.append(["all"] + [total["experiments"].get(k, 0) for k in STATUSES]
                + [total["comparisons"].get(k, 0) for k in VERDICTS]
                + [total["ablations"].get(k, 0) for k in VERDICTS])  # fmt: skip
    cols = ["data"] + [f"experiments {k}" for k in STATUSES]
    cols += [f"comparisons {k}" for k in VERDICTS] + [f"ablations {k}" for k in VERDICTS]
    keep = [i for i in range(len(cols)) if i == 0 or any(r[i] for r in rows)]
    return md_table([cols[i] for i in keep], [[r[i] for i in keep] for r in rows])


def _parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    words = shlex.split(spec)
    if not words:
        raise ValueError("empty qoslab:table marker")
    args = {}
    for w in words[1:]:
        k, sep, v = w.partition("=")
        if not sep:
            raise ValueError(f"expected key=value in qoslab:table marker, got {w!r}")
        args[k] = v
    return words[0], args


def generate(page: str | Path) -> str:
    """The text of Markdown ``page`` with every generated block rendered from its data."""
    import qoslab.docgen as registry  # not __main__'s copy under `python -m qoslab.docgen`
    from qoslab.reproduce import discover

    discover()  # paper modules register their renderers (in qoslab.docgen)
    renderers = {**RENDERERS, **registry.RENDERERS}
    page = Path(page)
    text = page.read_text()
    cache: dict[Path, dict[str, Any]] = {}

    def sub(m: re.Match[str]) -> str:
        name, args = _parse_spec(m.group("spec"))
        where = f"{page}: block `{m.group('spec')}`"
        if name not in renderers:
            raise ValueError(f"{where}: unknown renderer {name!r} (known: {sorted(renderers)})")
        if "data" not in args:
            raise ValueError(f"{where}: no data=… file")
        f = (page.parent / args.pop("data")).resolve()
        if f not in cache:
            if not f.is_file():
                raise ValueError(f"{where}: data file {f} does not exist")
            cache[f] = _today(json.loads(f.read_text()))
        try:
            body = renderers[name](cache[f], **args)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{where}: {e}") from e
        if not body.endswith("\n"):
            body += "\n"
        return m.group("open") + body + m.group("close")

    return _BLOCK.sub(sub, text)


def _today(v: Any) -> Any:
    """Committed data with every stored verdict judged by today's rules
    (:func:`qoslab.reproduce.stored_verdict`: an explanation that no counterfactual
    confirmed explains nothing), at any depth."""
    from qoslab.reproduce import stored_verdict

    if isinstance(v, list):
        return [_today(x) for x in v]
    if isinstance(v, dict):
        out = {k: _today(x) for k, x in v.items()}
        if "verdict" in out and "quantity" in out:
            out["verdict"] = stored_verdict(out)
        return out
    return v


def _pages(paths: list[str | Path], mark: str = "<!-- qoslab:table ") -> list[Path]:
    """The pages (files, or folders of ``*.md``) whose text holds ``mark``."""
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.rglob("*.md")) if p.is_dir() else [p]
    return [p for p in out if mark in p.read_text()]


def update(paths: list[str | Path]) -> list[Path]:
    """Rewrites the generated blocks of the pages (files or folders of ``*.md``); returns
    the pages that changed."""
    changed = []
    for p in _pages(paths):
        new = generate(p)
        if new != p.read_text():
            p.write_text(new)
            changed.append(p)
    return changed


def check(paths: list[str | Path]) -> list[Path]:
    """The pages whose generated blocks disagree with their data (empty: all current)."""
    return [p for p in _pages(paths) if generate(p) != p.read_text()]


def figure_problems(paths: list[str | Path]) -> list[str]:
    """What is wrong with the figure markers of the pages (:func:`qoslab.docfigures.problems`;
    empty: nothing)."""
    from qoslab import docfigures

    return [msg for p in _pages(paths, "qoslab:figure") for msg in docfigures.problems(p)]


def figures(results: str | Path, paths: list[str | Path]) -> list[Path]:
    """Copies the figures the pages' markers name from the reproduction ``results``,
    once it holds the very tables of the pages' data (:mod:`qoslab.docfigures`);
    returns the figures that changed."""
    from qoslab import docfigures

    figs = [f for p in _pages(paths, "qoslab:figure") for f in docfigures.figures_in(p)]
    if not figs:
        raise ValueError(f"no qoslab:figure marker in {', '.join(map(str, paths))}")
    return docfigures.copy(results, figs, results_tables)


def main(argv: list[str] | None = None) -> int:
    """``python -m qoslab.docgen export|update|check|diff …`` (see the module docstring)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m qoslab.docgen", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="reproduction outputs → a JSON data file")
    ex.add_argument("results")
    ex.add_argument("out")
    ex.add_argument("--experiment", "-e", action="append", default=None)
    ex.add_argument(
        "--merge", action="store_true", help="keep the other experiments already in OUT"
    )
    up = sub.add_parser("update", help="rewrite the generated blocks of Markdown pages")
    up.add_argument("paths", nargs="+")
    ck = sub.add_parser("check", help="exit 1 when a page disagrees with its data")
    ck.add_argument("paths", nargs="+")
    fg = sub.add_parser("figures", help="copy the pages' figures from the run their data came from")
    fg.add_argument("results")
    fg.add_argument("paths", nargs="+")
    df = sub.add_parser(
        "diff", help="judged items that differ between two data files (qoslab.docdiff)"
    )
    df.add_argument("old")
    df.add_argument("new")
    df.add_argument("--pages", nargs="*", default=[], help="pages or folders to search")
    df.add_argument("--rtol", type=float, default=1e-3, help="relative change that counts")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "export":
            print(export(a.results, a.out, a.experiment, merge=a.merge))
        elif a.cmd == "diff":
            from qoslab import docdiff

            return docdiff.main(a.old, a.new, a.pages, a.rtol, judge=_today, blocks=_BLOCK)
        elif a.cmd == "figures":
            changed = figures(a.results, a.paths)
            for p in changed:
                print(f"copied {p}")
            if not changed:
                print("every figure is current")
        elif a.cmd == "update":
            for p in update(a.paths):
                print(f"updated {p}")
        else:
            stale = check(a.paths)
            for p in stale:
                print(f"stale: {p} (run `python -m qoslab.docgen update {p}`)", file=sys.stderr)
            bad = figure_problems(a.paths)
            for msg in bad:
                print(f"figure: {msg}", file=sys.stderr)
            return 1 if stale or bad else 0
    except (ValueError, OSError) as e:
        print(f"qoslab.docgen: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
