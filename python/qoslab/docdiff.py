"""What changed between two exports of a reproduction's data, and where prose may quote
the old numbers.

The generated blocks of a page follow their data (``python -m qoslab.docgen update``),
but the words around them are written by hand: "the fall's interval 0.45 … 1.55 reaches
below half" goes stale silently when a new export moves the interval. Before committing
a new export over an old one, ``python -m qoslab.docgen diff OLD NEW --pages docs/papers``
lists every judged item (a comparison, ablation, reading or calibration entry: anything
with a verdict) whose verdict, as the pages show it (judged by today's rules), changed
or whose numbers moved, and for each moved number
the lines of the pages, outside generated blocks, that contain its old value as the
pages would print it (3 or 4 significant digits): the places to read again.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The numbers of a judged item that prose quotes.
NUMBERS = ("ours", "effect_with", "effect_without", "fall", "ci", "interval")
#: Moved numbers listed per item (the rest counted).
SHOWN = 8
#: Keys that name a judged item among its siblings, most specific first.
LABELS = ("quantity", "claim", "parameter")


@dataclass
class Change:
    """One judged item that differs between the two exports."""

    experiment: str
    item: str
    old_verdict: str | None
    new_verdict: str | None
    #: ``name -> (old, new)`` for the numbers that moved.
    moved: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    #: ``page:line: text`` of prose that quotes an old number.
    prose: list[str] = field(default_factory=list)
    #: What else changed (a table's shape).
    note: str = ""
    #: A table's cells rather than a judged item.
    table: bool = False

    def lines(self) -> list[str]:
        """The change as indented text lines."""
        out = [f"{self.experiment}: {self.item}"]
        if self.old_verdict is None:
            out.append(f"  new item ({self.new_verdict})")
        elif self.new_verdict is None:
            out.append(f"  gone (was {self.old_verdict})")
        elif self.old_verdict != self.new_verdict:
            out.append(f"  verdict {self.old_verdict} -> {self.new_verdict}")
        if self.note:
            out.append(f"  {self.note}")
        moved = list(self.moved.items())
        for k, (a, b) in moved[:SHOWN]:
            out.append(f"  {k}: {_show(a)} -> {_show(b)}")
        if len(moved) > SHOWN:
            out.append(f"  … and {len(moved) - SHOWN} more numbers")
        out += [f"  prose {p}" for p in self.prose]
        return out


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return str(v)


def _label(d: dict[str, Any]) -> str:
    base = next((str(d[k]) for k in LABELS if d.get(k)), "")
    if "reading" in d:
        base = f"{d.get('knob', '')} = {d['reading']}" + (f": {base}" if base else "")
    return base


def judged(v: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """``(path, item)`` for every dict with a verdict in ``v``, at any depth; ``path``
    names the item by the labels of the dicts above it (list positions only where
    siblings share a label), so the same item has the same path in two exports."""
    if isinstance(v, dict):
        if "verdict" in v:
            yield path, v
        for k, x in v.items():
            if k != "tables" and isinstance(x, (dict, list)):
                yield from judged(x, f"{path}/{k}" if path else k)
    elif isinstance(v, list):
        seen: dict[str, int] = {}
        for i, x in enumerate(v):
            name = _label(x) if isinstance(x, dict) else ""
            n = seen[name] = seen.get(name, 0) + 1
            if not name:
                name = f"#{i}"
            elif n > 1:
                name = f"{name} #{n}"
            yield from judged(x, f"{path} [{name}]")


def _close(a: Any, b: Any, rtol: float) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rtol) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if not (math.isfinite(a) and math.isfinite(b)):
            return a == b or (math.isnan(a) and math.isnan(b))
        return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-12)
    return a == b


def diff(old: dict[str, Any], new: dict[str, Any], rtol: float = 1e-3) -> list[Change]:
    """The judged items of the experiments in both exports whose verdict changed or
    whose numbers (:data:`NUMBERS`) moved by more than ``rtol`` relative; items found in
    one export only come with the other side's verdict None."""
    out = []
    olds, news = old.get("experiments", {}), new.get("experiments", {})
    for name in sorted(set(olds) & set(news)):
        a = dict(judged(olds[name]))
        b = dict(judged(news[name]))
        for path in sorted(set(a) | set(b)):
            x, y = a.get(path), b.get(path)
            c = Change(name, path, x and x.get("verdict"), y and y.get("verdict"))
            if x is not None and y is not None:
                for k in NUMBERS:
                    if not _close(x.get(k), y.get(k), rtol):
                        c.moved[k] = (x.get(k), y.get(k))
            if c.old_verdict != c.new_verdict or c.moved:
                out.append(c)
        out += _tables(name, olds[name].get("tables", {}), news[name].get("tables", {}), rtol)
    return out


def _tables(name: str, old: dict[str, Any], new: dict[str, Any], rtol: float) -> list[Change]:
    """A change per table whose cells moved (by row and column name; a table whose
    columns or row count changed is reported as reshaped), its moved cells as numbers."""
    out = []
    for t in sorted(set(old) | set(new)):
        a, b = old.get(t), new.get(t)
        c = Change(name, f"table {t}", "table" if a else None, "table" if b else None, table=True)
        if a and b:
            if a["columns"] != b["columns"] or len(a["rows"]) != len(b["rows"]):
                c.note = "reshaped: other columns or another number of rows"
            else:
                for i, (ra, rb) in enumerate(zip(a["rows"], b["rows"], strict=True)):
                    for col, x, y in zip(a["columns"], ra, rb, strict=True):
                        if not _close(x, y, rtol):
                            c.moved[f"row {i} {col}"] = (x, y)
        if c.old_verdict != c.new_verdict or c.moved or c.note:
            out.append(c)
    return out


def _forms(v: Any) -> set[str]:
    """How a page would print the number ``v`` (or each of a list's), at 3 and 4
    significant digits, when that has a decimal point and two significant digits or
    more: whole numbers (a count, 25 s) and round values (0.5) match too much prose."""
    if isinstance(v, list):
        return set().union(*(_forms(x) for x in v)) if v else set()
    if not isinstance(v, float) or not math.isfinite(v):
        return set()
    out = set()
    for digits in (3, 4):
        s = f"{v:.{digits}g}"
        if "e" not in s and "." in s and sum(ch.isdigit() for ch in s.lstrip("-0.")) >= 2:
            out.add(s.lstrip("-"))
    return out


def prose_lines(page: Path, blocks: re.Pattern[str]) -> list[tuple[int, str]]:
    """``(line number, text)`` of a page's lines outside its generated blocks (the
    matches of ``blocks``: docgen's pattern of a block, passed in by its command line)."""
    text = page.read_text()
    blanked = blocks.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return [(i + 1, line) for i, line in enumerate(blanked.split("\n")) if line.strip()]


def find_prose(changes: list[Change], pages: list[Path], blocks: re.Pattern[str]) -> None:
    """Fills each change's ``prose`` with the lines of ``pages`` outside the generated
    ``blocks`` that hold one of its moved numbers' old values as a whole number token."""
    texts = {p: prose_lines(p, blocks) for p in pages}
    for c in changes:
        forms = set().union(*(_forms(a) for a, _ in c.moved.values())) if c.moved else set()
        pats = [re.compile(rf"(?<![\d.§]){re.escape(f)}(?![\d])") for f in sorted(forms)]
        for p, lines in texts.items():
            for n, line in lines:
                if any(r.search(line) for r in pats):
                    c.prose.append(f"{p}:{n}: {line.strip()[:160]}")


def _load(f: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(f).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{f}: not a JSON data file ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("experiments"), dict):
        raise ValueError(f"{f}: no experiments (not written by `docgen export`)")
    return data


def main(
    old: str,
    new: str,
    pages: list[str],
    rtol: float,
    judge: Callable[[Any], Any],
    blocks: re.Pattern[str],
) -> int:
    """Prints the changes from ``old`` to ``new`` (JSON data files); exit status 0.
    ``judge`` gives the data as the pages show it (each stored verdict judged by today's
    rules) and ``blocks`` matches a generated block: both docgen's, passed in by
    ``python -m qoslab.docgen diff`` so that this module does not import docgen back."""
    a, b = (judge(_load(f)) for f in (old, new))
    changes = diff(a, b, rtol)
    files: list[Path] = []
    for p in map(Path, pages):
        files += sorted(p.rglob("*.md")) if p.is_dir() else [p]
    find_prose(changes, files, blocks)
    only = sorted(set(a.get("experiments", {})) ^ set(b.get("experiments", {})))
    for c in changes:
        print("\n".join(c.lines()))
    tables = [c for c in changes if c.table]
    changes_j = [c for c in changes if not c.table]
    both = [c for c in changes_j if c.old_verdict is not None and c.new_verdict is not None]
    verdicts = sum(c.old_verdict != c.new_verdict for c in both)
    print(
        f"{len(both)} judged items differ ({verdicts} in verdict), "
        f"{sum(c.old_verdict is None for c in changes_j)} new, "
        f"{sum(c.new_verdict is None for c in changes_j)} gone; "
        f"{len(tables)} tables differ; "
        f"{sum(len(c.prose) for c in changes)} prose lines to read"
        + (f"; experiments in one file only: {', '.join(only)}" if only else "")
    )
    return 0
